// api_test_device.hpp: the device the library's API tests run on.
#pragma once

#include <cstdlib>
#include <string>

// The device spec under test: $CLREDUCE_TEST_DEVICE (an index or name, as --device takes), else
// "0". Each test file opens its own clreduce::Device from it (its tuning and built programs its
// own, so that one file's settings never reach another's tests).
inline std::string api_test_device_spec() {
  const char* s = std::getenv("CLREDUCE_TEST_DEVICE");
  return s && *s ? s : "0";
}

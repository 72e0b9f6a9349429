// test_helpers.hpp: the shared device context for kernel tests and small array builders.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "context.hpp"
#include "device.hpp"
#include "types.hpp"

namespace clreduce::test {

// The device under test: $CLREDUCE_TEST_DEVICE (an index or name, as --device takes), else 0.
inline std::string test_device_spec() {
  const char* s = std::getenv("CLREDUCE_TEST_DEVICE");
  return s && *s ? s : "0";
}

// A context on the device under test reading the source tree's cl/, built once per process.
inline Context& device_context() {
  static std::unique_ptr<Context> ctx = [] {
    auto devices = list_devices();
    return std::make_unique<Context>(select_device(devices, test_device_spec()),
                                     CLREDUCE_SOURCE_KERNEL_DIR);
  }();
  return *ctx;
}

template <class T>
HostArray make_array(DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

}  // namespace clreduce::test

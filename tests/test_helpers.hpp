// test_helpers.hpp: the shared device context for kernel tests and small array builders.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "context.hpp"
#include "device.hpp"
#include "types.hpp"

namespace clreduce::test {

// A context on device 0 (PoCL on CI) reading the source tree's cl/, built once per process.
inline Context& device_context() {
  static std::unique_ptr<Context> ctx = [] {
    auto devices = list_devices();
    return std::make_unique<Context>(devices.at(0), CLREDUCE_SOURCE_KERNEL_DIR);
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

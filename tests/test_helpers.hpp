// test_helpers.hpp: the shared device context for kernel tests and small array builders.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "clreduce/types.hpp"
#include "runtime/context.hpp"
#include "runtime/device.hpp"

namespace clreduce::test {

// The bits of a float or double result (v.type says which), every NaN alike.
inline std::uint64_t bits(const Value& v) {
  if (std::isnan(v.f)) return 0x7FF8000000000000ull;
  if (v.type == DType::kFloat) {
    const float f = static_cast<float>(v.f);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  std::uint64_t b;
  std::memcpy(&b, &v.f, 8);
  return b;
}

// Random signs and significands, every biased exponent from 0 (subnormals, zeros) to top equally
// likely: the whole range when top is the largest finite one (254, 2046), where sums overflow.
template <class T> std::vector<T> every_exponent(std::size_t n, std::uint64_t seed, unsigned top) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) {
    const std::uint64_t r = rng(), e = rng() % (top + 1);
    if constexpr (std::is_same_v<T, float>) {
      const std::uint32_t b =
          (static_cast<std::uint32_t>(r) & 0x807FFFFFu) | static_cast<std::uint32_t>(e << 23);
      std::memcpy(&x, &b, 4);
    } else {
      const std::uint64_t b = (r & 0x800FFFFFFFFFFFFFull) | (e << 52);
      std::memcpy(&x, &b, 8);
    }
  }
  return v;
}

// A fresh temporary directory, removed (with what it holds) at the end of the scope;
// dir / "name" is a path in it.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    dir = std::filesystem::temp_directory_path() /
          ("clreduce_test_" + std::to_string(std::random_device{}()) + "_" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

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
                                     CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  }();
  return *ctx;
}

// Sets one tuning knob of ctx (options.hpp) for a scope; an empty value leaves it as it is.
// The previous knobs are restored afterwards (knobs are read when a plan is made).
class TuningGuard {
 public:
  TuningGuard(Context& ctx, const std::string& key, const std::string& value)
      : ctx_(ctx), saved_(ctx.tuning()) {
    if (!value.empty()) set_tuning(ctx.tuning(), key, value, key);
  }
  ~TuningGuard() { ctx_.tuning() = saved_; }
  TuningGuard(const TuningGuard&) = delete;
  TuningGuard& operator=(const TuningGuard&) = delete;

 private:
  Context& ctx_;
  Tuning saved_;
};

template <class T> HostArray make_array(DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

}  // namespace clreduce::test

#ifdef CLREDUCE_BIN
#include <sys/wait.h>
#include <cstdio>

namespace clreduce::test {

struct CliResult {
  int code;
  std::string out;  // stdout and stderr together
};

// Runs the CLI (env: "VAR=value ..." prefix) on the device under test unless args pick one.
inline CliResult run_cli(const std::string& args, const std::string& env = "") {
  const char* dev = std::getenv("CLREDUCE_TEST_DEVICE");
  const std::string device = args.find("--device") == std::string::npos && dev && *dev
                                 ? std::string(" --device '") + dev + "'"
                                 : "";
  const std::string cmd = env + " " + CLREDUCE_BIN + device + " " + args + " 2>&1";
  CliResult r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t k;
  while ((k = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, k);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Newlines in s: the number of output lines.
inline std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace clreduce::test
#endif

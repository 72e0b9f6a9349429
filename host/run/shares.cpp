// shares.cpp: shares of an array and the threads that run them.
#include "run/shares.hpp"

#include <cmath>
#include <exception>
#include <numeric>
#include <string>
#include <thread>

#include "clreduce/error.hpp"
#include "run/chunks.hpp"
#include "runtime/context.hpp"

namespace clreduce {

HostArray view_of(const HostArray& a, std::size_t first, std::size_t n) {
  HostArray v;
  v.type = a.type;
  v.n = n;
  const std::size_t size = dtype_size(a.type);
  if (first > a.n || n > a.n - first)  // so first * size and n * size stay within a's bytes
    throw Error(Errc::kInternal, "internal: a view of elements [" + std::to_string(first) + ", +" +
                                     std::to_string(n) + ") of an array of " + std::to_string(a.n));
  v.bytes.adopt(
      const_cast<unsigned char*>(a.bytes.data()) + first * size, n * size,
      [](void*, std::size_t, void*) {}, nullptr);
  return v;
}

std::vector<std::size_t> split_shares(std::size_t n, const std::vector<double>& weights,
                                      std::size_t grain) {
  const std::size_t k = weights.empty() ? 1 : weights.size();
  double sum = 0.0;
  for (double w : weights) {
    if (!(w >= 0.0) || !std::isfinite(w))
      throw Error(Errc::kUsage, "a device's share must be a finite number >= 0");
    sum += w;
  }
  if (!weights.empty() && sum <= 0.0)
    throw Error(Errc::kUsage, "the devices' shares are all 0: nothing would run the array");
  grain = grain ? grain : 1;
  std::vector<std::size_t> counts(k, 0);
  std::size_t given = 0;
  double before = 0.0;
  for (std::size_t d = 0; d + 1 < k; ++d) {
    before += weights.empty() ? 1.0 : weights[d];
    const double total = weights.empty() ? static_cast<double>(k) : sum;
    // The share's end, rounded to the grain, never before the previous end nor past n.
    auto end = static_cast<std::size_t>(std::llround(static_cast<double>(n) * (before / total)));
    end = before >= total ? n : end / grain * grain;  // the rest weigh nothing: all here
    end = std::min(std::max(end, given), n);
    counts[d] = end - given;
    given = end;
  }
  counts[k - 1] = n - given;
  return counts;
}

std::size_t share_grain(const std::vector<std::size_t>& aligns,
                        const std::vector<std::size_t>& sizes) {
  std::size_t grain = 16;
  for (const std::size_t a : aligns) {
    if (a == 0 || (a & (a - 1)) != 0)
      throw Error(Errc::kInternal, "internal: an alignment of " + std::to_string(a) +
                                       " bytes is not a power of two");
    for (const std::size_t e : sizes)
      if (e) grain = std::lcm(grain, a / std::gcd(a, e));  // e * (a / gcd) is a multiple of a
  }
  return grain;
}

std::size_t device_share_grain(const std::vector<Context*>& ctxs,
                               const std::vector<std::size_t>& sizes) {
  std::vector<std::size_t> aligns;
  for (const Context* c : ctxs) aligns.push_back(in_place_alignment(c->info()));
  return share_grain(aligns, sizes);
}

void run_parallel(std::size_t k, const std::function<void(std::size_t)>& fn, bool at_once) {
  if (!at_once) {
    for (std::size_t i = 0; i < k; ++i) fn(i);
    return;
  }
  std::vector<std::exception_ptr> errors(k);
  std::vector<std::thread> threads;
  threads.reserve(k);
  for (std::size_t i = 1; i < k; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  if (k > 0) {
    try {
      fn(0);
    } catch (...) {
      errors[0] = std::current_exception();
    }
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace clreduce

// omp_reduce.cpp: one parallel region per run; each thread folds one contiguous chunk (SIMD
// reductions where the op allows: sums, products, min/max with a separate NaN flag), and the
// per-thread partials are combined in thread order, which keeps arg ops' first-index rule.
#include "run/omp_reduce.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace clreduce {
namespace {

// Below this many elements one thread does it all (a parallel region costs more).
constexpr std::size_t kMinParallel = std::size_t{1} << 15;

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

template <class T> bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

template <class A> Value make_value(A a, DType type, std::int64_t index = -1) {
  Value v;
  v.type = type;
  v.index = index;
  if constexpr (std::is_floating_point_v<A>)
    v.f = static_cast<double>(a);
  else if constexpr (std::is_signed_v<A>)
    v.i = static_cast<std::int64_t>(a);
  else
    v.u = static_cast<std::uint64_t>(a);
  return v;
}

// The unsigned twin of an integer accumulator (wrapping arithmetic), or the float itself.
template <class A, bool = std::is_integral_v<A>> struct ArithOf { using type = A; };
template <class A> struct ArithOf<A, true> { using type = std::make_unsigned_t<A>; };
template <class A> using Arith = typename ArithOf<A>::type;

// One chunk's partial: the value, and for min/max/arg ops the first index of it (or of the
// chunk's first NaN); `nan` says the chunk holds a NaN.
template <class A> struct Partial {
  A v{};
  std::int64_t at = -1;
  bool nan = false;
};

template <class T, class A>
Partial<A> fold_chunk(const T* x, std::size_t lo, std::size_t hi, Op op) {
  Partial<A> p;
  using W = Arith<A>;
  if (op == Op::kSum || op == Op::kProd) {
    W a = op == Op::kSum ? W{0} : W{1};
    if (op == Op::kSum) {
#pragma omp simd reduction(+ : a)
      for (std::size_t i = lo; i < hi; ++i) a += static_cast<W>(static_cast<A>(x[i]));
    } else {
#pragma omp simd reduction(* : a)
      for (std::size_t i = lo; i < hi; ++i) a *= static_cast<W>(static_cast<A>(x[i]));
    }
    p.v = static_cast<A>(a);
    return p;
  }
  if (lo >= hi) return p;
  if (op == Op::kMin || op == Op::kMax) {
    T m = x[lo];
    int nan = 0;
    if (op == Op::kMin) {
#pragma omp simd reduction(min : m) reduction(| : nan)
      for (std::size_t i = lo; i < hi; ++i) {
        m = x[i] < m ? x[i] : m;
        nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
      }
    } else {
#pragma omp simd reduction(max : m) reduction(| : nan)
      for (std::size_t i = lo; i < hi; ++i) {
        m = x[i] > m ? x[i] : m;
        nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
      }
    }
    p.v = static_cast<A>(m);
    p.nan = nan != 0;
    if (p.nan) p.v = static_cast<A>(std::numeric_limits<T>::quiet_NaN());
    return p;
  }
  // Arg ops, one pass in blocks that stay in L1: a SIMD min (max) and NaN test per block; only
  // a block holding a NaN or a strictly better value is scanned again for its first index.
  const bool want_min = op == Op::kArgMin;
  constexpr std::size_t kBlock = 2048;
  T best = x[lo];
  std::size_t at = lo;
  bool nan = is_nan(best);
  for (std::size_t b = lo; b < hi && !nan; b += kBlock) {
    const std::size_t e = std::min(hi, b + kBlock);
    T m = x[b];
    int has_nan = 0;
    if (want_min) {
#pragma omp simd reduction(min : m) reduction(| : has_nan)
      for (std::size_t i = b; i < e; ++i) {
        m = x[i] < m ? x[i] : m;
        has_nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
      }
    } else {
#pragma omp simd reduction(max : m) reduction(| : has_nan)
      for (std::size_t i = b; i < e; ++i) {
        m = x[i] > m ? x[i] : m;
        has_nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
      }
    }
    if (has_nan) {
      for (std::size_t i = b; i < e; ++i)
        if (is_nan(x[i])) {
          best = x[i];
          at = i;
          nan = true;
          break;
        }
    } else if (want_min ? m < best : m > best) {
      for (std::size_t i = b; i < e; ++i)
        if (x[i] == m) {
          best = m;
          at = i;
          break;
        }
    }
  }
  p.v = static_cast<A>(best);
  p.at = static_cast<std::int64_t>(at);
  p.nan = nan;
  return p;
}

// Combines partial b (a later, non-empty chunk) into a (the earlier ones), clreduce's operator.
template <class A> void combine(Partial<A>& a, const Partial<A>& b, Op op) {
  using W = Arith<A>;
  if (op == Op::kSum) {
    a.v = static_cast<A>(static_cast<W>(a.v) + static_cast<W>(b.v));
    return;
  }
  if (op == Op::kProd) {
    a.v = static_cast<A>(static_cast<W>(a.v) * static_cast<W>(b.v));
    return;
  }
  if (a.nan) return;  // the earlier NaN wins
  const bool want_min = op == Op::kMin || op == Op::kArgMin;
  if (b.nan || (want_min ? b.v < a.v : b.v > a.v)) a = b;
}

template <class T, class A> Value run(const T* x, std::size_t n, Op op, DType acc, int* threads) {
  const int nt_max = n >= kMinParallel ? max_threads() : 1;
  std::vector<Partial<A>> part(static_cast<std::size_t>(nt_max));
  int used = 1;
  if (nt_max == 1) {
    part[0] = fold_chunk<T, A>(x, 0, n, op);
  } else {
#pragma omp parallel num_threads(nt_max)
    {
#ifdef _OPENMP
      const auto nt = static_cast<std::size_t>(omp_get_num_threads());
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
#else
      const std::size_t nt = 1, t = 0;
#endif
      if (t == 0) used = static_cast<int>(nt);
      part[t] = fold_chunk<T, A>(x, n * t / nt, n * (t + 1) / nt, op);
    }
  }
  *threads = used;
  // Chunk 0 is never empty for n > 0; later empty chunks (n < threads) are skipped.
  const auto nt = static_cast<std::size_t>(used);
  Partial<A> r = part[0];
  for (std::size_t t = 1; t < nt; ++t)
    if (n * t / nt < n * (t + 1) / nt) combine(r, part[t], op);
  return make_value(r.v, acc, is_arg_op(op) ? r.at : -1);
}

}  // namespace

OmpResult omp_reduce(const HostArray& a, Op op, DType acc, std::uint64_t warmup,
                     std::uint64_t repeat) {
  OmpResult res;
  const std::size_t n = a.n;
  const std::uint64_t threads = static_cast<std::uint64_t>(std::max(max_threads(), 1));
  // A float sum: each thread's chunk in at most ceil(n / threads) steps (fewer with SIMD
  // lanes), then the threads' partials one after another.
  res.depth = (n + threads - 1) / threads + threads + 4;
  if (op == Op::kSum && a.type == DType::kInt32 && acc == DType::kInt64) {
    std::int64_t s = 0;
    res.timing = omp_reduce_sum_i32(a.as<std::int32_t>(), n, &s, warmup, repeat);
    res.value = make_value(s, acc);
    return res;
  }
  if (op == Op::kSum && a.type == DType::kFloat && acc == DType::kFloat) {
    float s = 0;
    res.timing = omp_reduce_sum_f32(a.as<float>(), n, &s, warmup, repeat);
    res.value = make_value(s, acc);
    return res;
  }
  dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    using Wide =
        std::conditional_t<std::is_integral_v<T> && sizeof(T) == 4,
                           std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>, T>;
    int used = 1;
    auto body = [&](auto acc_tag) {
      using A = decltype(acc_tag);
      res.timing = time_peer(warmup, repeat, [&] {
        res.value = run<T, A>(a.as<T>(), n, op, acc, &used);
        return used;
      });
    };
    if (acc == a.type || !(op == Op::kSum || op == Op::kProd))
      body(T{});
    else
      body(Wide{});
    return 0;
  });
  return res;
}

}  // namespace clreduce

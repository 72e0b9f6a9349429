// omp_rows.cpp: the OpenMP peer of the engine's rows and of segmented and axis sums
// (omp_rows.hpp). Every loop is one parallel region: each thread folds one contiguous chunk (the
// sums as four quarter-streams read side by side, min, max and logsumexp block by block), every
// SIMD loop over at most kBlock elements of a stream with its own accumulators, the blocks'
// partials added to the thread's, and the threads' partials combined in thread order. The
// bounds' scales (sums of |x|, of squares) are taken in double after the timed runs.
#include "run/omp_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#ifdef _OPENMP
#include <omp.h>
#define CLR_PRAGMA(x) _Pragma(#x)
#define CLR_SIMD(clauses) CLR_PRAGMA(omp simd clauses)
#else
#define CLR_SIMD(clauses)
#endif

namespace clreduce {
namespace {

// Below this many elements one thread does it all (a parallel region costs more).
constexpr std::size_t kMinParallel = std::size_t{1} << 15;
// Elements per block: a block's loops stay in cache, and its chain of additions is at most this.
constexpr std::size_t kBlock = 4096;
// Thread chunks' inner edges are multiples of this many elements (a cache line of floats).
constexpr std::size_t kAlign = 16;
// Axis sums: kept elements of the contiguous axis per task (a row of accumulators in L2; rows
// read whole, one after another, so the reads stream).
constexpr std::size_t kColumns = 16384;

int max_threads() {
#ifdef _OPENMP
  return std::max(omp_get_max_threads(), 1);
#else
  return 1;
#endif
}

bool go_parallel(std::size_t n) { return n >= kMinParallel && max_threads() > 1; }

// gamma_k = k u / (1 - k u), infinite when k u >= 1.
double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

template <class W> double roundoff() {
  return static_cast<double>(std::numeric_limits<W>::epsilon()) / 2;
}

// First element of part t of `parts` contiguous parts of [0, n); inner edges are multiples of
// kAlign and the last part takes the remainder.
std::size_t part_begin(std::size_t n, std::size_t t, std::size_t parts) {
  if (t >= parts) return n;
  return t * ((n / parts) / kAlign * kAlign);
}

// The longest chain of operations behind a result folded by chunk_fold() on `threads` threads
// with quarter_sum(), or block by block: within a block, across the blocks of the longest chunk
// (a quarter's blocks, or the chunk's), the quarters and the leftovers, across the threads.
std::uint64_t fold_depth(std::size_t n, int threads) {
  const auto nt = static_cast<std::size_t>(std::max(threads, 1));
  const std::size_t longest = nt == 1 ? n : n - (nt - 1) * ((n / nt) / kAlign * kAlign);
  return std::min(longest, kBlock) + (longest + kBlock - 1) / kBlock + nt + 8;
}

// Folds [0, n) into *out: each thread folds its contiguous chunk by chunk(part, lo, hi) from
// `identity`; the parts are combined in thread order by combine(a, b) (b the later). Returns
// the threads used.
template <class P, class Chunk, class Combine>
int chunk_fold(std::size_t n, const P& identity, Chunk fold, Combine combine, P* out) {
  std::vector<P> part(static_cast<std::size_t>(max_threads()), identity);
  int used = 1;
  const auto chunk = [&](std::size_t t, std::size_t lo, std::size_t hi) {
    P p = identity;
    fold(p, lo, hi);
    part[t] = p;
  };
  if (go_parallel(n)) {
#ifdef _OPENMP
#pragma omp parallel
    {
      const auto nt = static_cast<std::size_t>(omp_get_num_threads());
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      if (t == 0) used = static_cast<int>(nt);
      chunk(t, part_begin(n, t, nt), part_begin(n, t + 1, nt));
    }
#endif
  } else {
    chunk(0, 0, n);
  }
  P r = identity;
  for (std::size_t t = 0; t < static_cast<std::size_t>(used); ++t) combine(r, part[t]);
  *out = r;
  return used;
}

// Calls step(lo', hi') for the blocks of kBlock elements of [lo, hi), in order.
template <class Step> void in_blocks(std::size_t lo, std::size_t hi, Step step) {
  for (std::size_t b = lo; b < hi; b += kBlock) step(b, std::min(hi, b + kBlock));
}

// One block of quarter_sum(): elements [b, e) of each quarter (of m elements from lo), added to
// t[0..3]. A function of its own, its accumulators declared at its top: GCC does not vectorise
// the SIMD loop where they are declared inside an enclosing loop.
template <class W, class F>
void quarter_block(std::size_t lo, std::size_t m, std::size_t b, std::size_t e, F f, W* t) {
  W a0 = W{0}, a1 = W{0}, a2 = W{0}, a3 = W{0};
  CLR_SIMD(reduction(+ : a0, a1, a2, a3))
  for (std::size_t k = b; k < e; ++k) {
    a0 += f(lo + k);
    a1 += f(lo + m + k);
    a2 += f(lo + 2 * m + k);
    a3 += f(lo + 3 * m + k);
  }
  t[0] += a0;
  t[1] += a1;
  t[2] += a2;
  t[3] += a3;
}

// Sum of f(i) over [lo, hi) in W: four quarter-streams of the range read side by side in one
// SIMD loop (four vector accumulators hide the add latency; four streams far apart keep more
// reads in flight: twice a single stream's rate from memory), each quarter's sum gathered block
// by block (kBlock of its elements), so no chain is longer than a block plus the blocks; the < 4
// leftovers last.
template <class W, class F> W quarter_sum(std::size_t lo, std::size_t hi, F f) {
  const std::size_t m = (hi - lo) / 4;
  W t[4] = {W{0}, W{0}, W{0}, W{0}};
  for (std::size_t b = 0; b < m; b += kBlock)
    quarter_block(lo, m, b, std::min(m, b + kBlock), f, t);
  for (std::size_t i = lo + 4 * m; i < hi; ++i) t[3] += f(i);
  return (t[0] + t[1]) + (t[2] + t[3]);
}

// Sum of conv(x[i]) over [lo, hi) in W (quarter_sum()).
template <class W, class T, class Conv>
W range_sum(const T* x, std::size_t lo, std::size_t hi, Conv conv) {
  return quarter_sum<W>(lo, hi, [x, conv](std::size_t i) { return conv(x[i]); });
}

// The least and greatest of x[lo, hi) (hi > lo) into *mn and *mx; whether any is NaN. The SIMD
// loops read x through a pointer argument: read through a lambda's captured reference, GCC does
// not vectorise them.
template <class T> bool block_min_max(const T* x, std::size_t lo, std::size_t hi, T* mn, T* mx) {
  T a = x[lo], b = x[lo];
  int nan = 0;
  if constexpr (std::is_floating_point_v<T>) {
    CLR_SIMD(reduction(min : a) reduction(max : b) reduction(| : nan))
    for (std::size_t i = lo; i < hi; ++i) {
      a = x[i] < a ? x[i] : a;
      b = x[i] > b ? x[i] : b;
      nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
    }
  } else {
    CLR_SIMD(reduction(min : a) reduction(max : b))
    for (std::size_t i = lo; i < hi; ++i) {
      a = x[i] < a ? x[i] : a;
      b = x[i] > b ? x[i] : b;
    }
  }
  *mn = a;
  *mx = b;
  return nan != 0;
}

// The greatest of x[lo, hi) (hi > lo) into *mx; whether any is NaN.
template <class T> bool block_max(const T* x, std::size_t lo, std::size_t hi, T* mx) {
  T b = x[lo];
  int nan = 0;
  CLR_SIMD(reduction(max : b) reduction(| : nan))
  for (std::size_t i = lo; i < hi; ++i) {
    b = x[i] > b ? x[i] : b;
    nan |= x[i] != x[i];  // NaN test that vectorises (std::isnan did not)
  }
  *mx = b;
  return nan != 0;
}

// The shifted sums of one block of the var loop: elements [b, e) of each half (of m elements from
// lo) of x - k, their sums into s[0..1] and their squares' into q[0..1].
template <class W>
void moments_block(const W* x, W k, std::size_t lo, std::size_t m, std::size_t b, std::size_t e,
                   W* s, W* q) {
  W a0 = 0, a1 = 0, q0 = 0, q1 = 0;
  CLR_SIMD(reduction(+ : a0, a1, q0, q1))
  for (std::size_t j = b; j < e; ++j) {
    const W d0 = x[lo + j] - k, d1 = x[lo + m + j] - k;
    a0 += d0;
    q0 += d0 * d0;
    a1 += d1;
    q1 += d1 * d1;
  }
  s[0] += a0;
  s[1] += a1;
  q[0] += q0;
  q[1] += q1;
}

template <class W> DType dtype_of() {
  return std::is_same_v<W, float> ? DType::kFloat : DType::kDouble;
}

Value float_value(double v, DType t) {
  Value r;
  r.type = t;
  r.f = t == DType::kFloat ? static_cast<double>(static_cast<float>(v)) : v;
  return r;
}

// A scale for a bound: the sum of f(i) >= 0 over [0, n) in double, enlarged by its own
// rounding (gamma_n in double: a sum of non-negative terms).
template <class F> double scale_sum(std::size_t n, F f) {
  double s = 0;
#ifdef _OPENMP
#pragma omp parallel for reduction(+ : s) schedule(static) if (go_parallel(n))
#endif
  for (std::size_t i = 0; i < n; ++i) s += f(i);
  return s * (1 + gamma_k(static_cast<double>(n), std::ldexp(1.0, -53)));
}

// --- The float rows, in W (the arrays' type) ----------------------------------------------

struct Lse {
  double m = -std::numeric_limits<double>::infinity();  // the largest element so far
  double s = 0;                                         // the sum of exp(x - m); 0: none yet
  bool nan = false;
};

template <class W>
OmpRowResult float_row(const std::string& op, const std::vector<HostArray>& arrays, double ddof,
                       std::uint64_t warmup, std::uint64_t repeat) {
  OmpRowResult r;
  const W* x = arrays.front().as<W>();
  const std::size_t n = arrays.front().n;
  const double u = roundoff<W>();
  const DType t = dtype_of<W>();
  const auto add = [](W& a, const W& b) { a += b; };
  double value = 0;
  if (op == "dot") {
    const W* y = arrays[1].as<W>();
    W s = 0;
    r.timing = time_peer(warmup, repeat, [&] {
      return chunk_fold(
          n, W{0},
          [&](W& p, std::size_t lo, std::size_t hi) {
            p = quarter_sum<W>(lo, hi, [x, y](std::size_t i) { return x[i] * y[i]; });
          },
          add, &s);
    });
    value = static_cast<double>(s);
  } else if (op == "mean" || op == "norm2") {
    const bool squares = op == "norm2";
    W s = 0;
    r.timing = time_peer(warmup, repeat, [&] {
      return chunk_fold(
          n, W{0},
          [&](W& p, std::size_t lo, std::size_t hi) {
            p = squares ? quarter_sum<W>(lo, hi, [x](std::size_t i) { return x[i] * x[i]; })
                        : quarter_sum<W>(lo, hi, [x](std::size_t i) { return x[i]; });
          },
          add, &s);
    });
    value = squares ? std::sqrt(static_cast<double>(s))
                    : static_cast<double>(s) / static_cast<double>(n);
  } else if (op == "var" || op == "std") {
    // The shifted data's sum and sum of squares (shifted by the first element, as the engine's
    // x0, so that a large mean does not cancel): one read, as quarter_sum() reads (two halves
    // here: two sums each), blocks of kBlock.
    const W k = std::isfinite(static_cast<double>(x[0])) ? x[0] : W{0};
    struct Moments {
      W s1 = 0, s2 = 0;
    } mo;
    r.timing = time_peer(warmup, repeat, [&] {
      return chunk_fold(
          n, Moments{},
          [&](Moments& p, std::size_t lo, std::size_t hi) {
            const std::size_t m = (hi - lo) / 2;
            W sum[2] = {0, 0}, sq[2] = {0, 0};
            for (std::size_t b = 0; b < m; b += kBlock)
              moments_block(x, k, lo, m, b, std::min(m, b + kBlock), sum, sq);
            for (std::size_t i = lo + 2 * m; i < hi; ++i) {
              const W d = x[i] - k;
              sum[1] += d;
              sq[1] += d * d;
            }
            p.s1 = sum[0] + sum[1];
            p.s2 = sq[0] + sq[1];
          },
          [](Moments& a, const Moments& b) {
            a.s1 += b.s1;
            a.s2 += b.s2;
          },
          &mo);
    });
    const double s1 = static_cast<double>(mo.s1), s2 = static_cast<double>(mo.s2);
    const double m2 = std::max(s2 - s1 * s1 / static_cast<double>(n), 0.0);
    const double div = std::max(static_cast<double>(n) - ddof, 0.0);
    value = std::isfinite(s2) ? m2 / div : std::numeric_limits<double>::quiet_NaN();
    if (op == "std") value = std::sqrt(value);
  } else if (op == "logsumexp") {
    // Per block: its largest element (a SIMD max, with a NaN test), then the sum of exp(x - max)
    // while the block is in cache; blocks and threads combined by rescaling the smaller max's sum.
    const auto combine = [](Lse& a, const Lse& b) {
      a.nan = a.nan || b.nan;
      if (b.s == 0) return;
      if (a.s == 0 || std::isinf(b.m) || std::isinf(a.m)) {
        if (a.s == 0 || b.m > a.m) {
          a.m = b.m;
          a.s = b.s;
        }
        return;
      }
      if (b.m > a.m) {
        a.s = a.s * std::exp(a.m - b.m) + b.s;
        a.m = b.m;
      } else {
        a.s += b.s * std::exp(b.m - a.m);
      }
    };
    Lse l;
    r.timing = time_peer(warmup, repeat, [&] {
      return chunk_fold(
          n, Lse{},
          [&](Lse& p, std::size_t first, std::size_t last) {
            in_blocks(first, last, [&](std::size_t lo, std::size_t hi) {
              W mx;
              Lse b;
              b.nan = block_max(x, lo, hi, &mx);
              if (!b.nan && mx > -std::numeric_limits<W>::infinity()) {
                b.m = static_cast<double>(mx);
                W s = 0;
                if (std::isinf(b.m)) {
                  s = 1;
                } else {
                  for (std::size_t i = lo; i < hi; ++i) s += std::exp(x[i] - mx);
                }
                b.s = static_cast<double>(s);
              }
              combine(p, b);
            });
          },
          combine, &l);
    });
    value = l.nan             ? std::numeric_limits<double>::quiet_NaN()
            : l.s == 0        ? -std::numeric_limits<double>::infinity()
            : std::isinf(l.m) ? l.m
                              : l.m + std::log(l.s);
  }
  r.depth = fold_depth(n, r.timing.threads);
  r.value = float_value(value, t);
  // The bounds: sums in W, each term with its own roundings (a product's, a square's, a shift's)
  // and a chain of `depth` additions: gamma_{d+k} times the sum of the terms' magnitudes.
  const double d = static_cast<double>(r.depth);
  const double got = std::fabs(r.value.f);
  const double tiny = static_cast<double>(std::numeric_limits<W>::min());  // flushed subnormals
  if (op == "dot") {
    const W* y = arrays[1].as<W>();
    const double mag = scale_sum(n, [&](std::size_t i) {
      return std::fabs(static_cast<double>(x[i]) * static_cast<double>(y[i]));
    });
    r.bound = gamma_k(d + 2, u) * mag + static_cast<double>(n) * tiny;
  } else if (op == "mean") {
    const double mag =
        scale_sum(n, [&](std::size_t i) { return std::fabs(static_cast<double>(x[i])); });
    r.bound = gamma_k(d + 2, u) * mag / static_cast<double>(n);
  } else if (op == "norm2") {
    // The sum of squares within E = gamma_{d+1} S + n tiny; its root within E / root (and
    // sqrt(E)), then the root's and the result's roundings.
    const double ss = scale_sum(
        n, [&](std::size_t i) { return static_cast<double>(x[i]) * static_cast<double>(x[i]); });
    const double e_ss = gamma_k(d + 1, u) * ss + static_cast<double>(n) * tiny;
    const double e = got > 0 ? std::min(std::sqrt(e_ss), e_ss / got) : std::sqrt(e_ss);
    r.bound = e + 2 * u * (got + e);
  } else if (op == "var" || op == "std") {
    // S2 within gamma_{d+3} S2 (a shift, a square, d additions), S1^2 / n within
    // 2 gamma_{d+1} S2 (|S1| sum |x - k| / n <= S2), the division and rounding: gamma_{3d+8} S2
    // over the divisor. std: min(sqrt(B), B / sigma) and the root's and result's roundings.
    const double k = std::isfinite(static_cast<double>(x[0])) ? static_cast<double>(x[0]) : 0.0;
    const double s2 = scale_sum(n, [&](std::size_t i) {
      const double v = static_cast<double>(x[i]) - k;
      return v * v;
    });
    const double div = std::max(static_cast<double>(n) - ddof, 0.0);
    const double b = gamma_k(3 * d + 8, u) * s2 / div;
    r.bound = b;
    if (op == "std") {
      const double e = got > 0 ? std::min(std::sqrt(b), b / got) : std::sqrt(b);
      r.bound = e + 2 * u * (got + e);
    }
  } else {
    // logsumexp: the engine's model (rescalings by exp of rounded differences, products, sums)
    // at this depth: gamma_{6d+8} (|L| + ln(n + 1) + 1).
    r.bound = gamma_k(6 * d + 8, u) * (got + std::log(static_cast<double>(n) + 1) + 1);
  }
  return r;
}

// --- minmax, every variant type ------------------------------------------------------------

template <class T> struct MinMax {
  T lo{}, hi{};
  std::int64_t at_lo = -1, at_hi = -1;  // -1: no element yet
  bool nan = false;                     // at_lo (and at_hi) is the first NaN
};

template <class T> Value element(T v, std::int64_t at, DType type) {
  Value r;
  r.type = type;
  r.index = at;
  if constexpr (std::is_floating_point_v<T>)
    r.f = static_cast<double>(v);
  else if constexpr (std::is_signed_v<T>)
    r.i = static_cast<std::int64_t>(v);
  else
    r.u = static_cast<std::uint64_t>(v);
  return r;
}

template <class T>
OmpRowResult minmax_row(const HostArray& a, std::uint64_t warmup, std::uint64_t repeat) {
  OmpRowResult r;
  const T* x = a.as<T>();
  const std::size_t n = a.n;
  MinMax<T> mm;
  // Per block: a SIMD min and max (and NaN test); a block that holds a NaN or betters either is
  // read again, from cache, for the first index.
  const auto step = [&](MinMax<T>& p, std::size_t lo, std::size_t hi) {
    if (p.nan) return;  // an earlier NaN wins
    T mn, mx;
    const bool nan = block_min_max(x, lo, hi, &mn, &mx);
    if constexpr (std::is_floating_point_v<T>) {
      if (nan)
        for (std::size_t i = lo; i < hi; ++i)
          if (std::isnan(x[i])) {
            p.lo = p.hi = x[i];
            p.at_lo = p.at_hi = static_cast<std::int64_t>(i);
            p.nan = true;
            return;
          }
    }
    const auto first = [&](T v) {  // the first index of v (of either zero, for a zero)
      std::size_t i = lo;
      while (x[i] != v) ++i;
      return i;
    };
    if (p.at_lo < 0 || mn < p.lo) {
      const std::size_t i = first(mn);
      p.lo = x[i];
      p.at_lo = static_cast<std::int64_t>(i);
    }
    if (p.at_hi < 0 || mx > p.hi) {
      const std::size_t i = first(mx);
      p.hi = x[i];
      p.at_hi = static_cast<std::int64_t>(i);
    }
  };
  const auto combine = [](MinMax<T>& e, const MinMax<T>& l) {  // e earlier, l later
    if (e.nan || l.at_lo < 0) return;
    if (l.nan || e.at_lo < 0) {
      e = l;
      return;
    }
    if (l.lo < e.lo) {
      e.lo = l.lo;
      e.at_lo = l.at_lo;
    }
    if (l.hi > e.hi) {
      e.hi = l.hi;
      e.at_hi = l.at_hi;
    }
  };
  r.timing = time_peer(warmup, repeat, [&] {
    return chunk_fold(
        n, MinMax<T>{},
        [&](MinMax<T>& p, std::size_t lo, std::size_t hi) {
          in_blocks(lo, hi, [&](std::size_t b, std::size_t e) { step(p, b, e); });
        },
        combine, &mm);
  });
  r.depth = fold_depth(n, r.timing.threads);
  r.value = element(mm.lo, mm.at_lo, a.type);
  r.value2 = element(mm.hi, mm.at_hi, a.type);
  r.exact = true;
  return r;
}

// --- Integer dot products: wrapping modulo 2^64, as the engine's (int64, or uint64 when unsigned)

template <class T>
OmpRowResult int_dot_row(const HostArray& a, const HostArray& b, std::uint64_t warmup,
                         std::uint64_t repeat) {
  OmpRowResult r;
  const T* x = a.as<T>();
  const T* y = b.as<T>();
  std::uint64_t s = 0;
  r.timing = time_peer(warmup, repeat, [&] {
    return chunk_fold(
        a.n, std::uint64_t{0},
        [x, y](std::uint64_t& p, std::size_t lo, std::size_t hi) {
          p = quarter_sum<std::uint64_t>(lo, hi, [x, y](std::size_t i) {
            return static_cast<std::uint64_t>(x[i]) * static_cast<std::uint64_t>(y[i]);
          });
        },
        [](std::uint64_t& p, const std::uint64_t& q) { p += q; }, &s);
  });
  r.depth = fold_depth(a.n, r.timing.threads);
  r.value.type = std::is_signed_v<T> ? DType::kInt64 : DType::kUInt64;
  r.value.u = s;
  r.value.i = static_cast<std::int64_t>(s);
  r.exact = true;
  return r;
}

// --- Segmented and axis sums ---------------------------------------------------------------

// The element as the accumulator A (a 32-bit int sign- or zero-extended), in W: A, or A's
// unsigned twin for integers (sums wrap, as NumPy's).
template <class A, bool = std::is_integral_v<A>> struct Wrapping { using type = A; };
template <class A> struct Wrapping<A, true> { using type = std::make_unsigned_t<A>; };
template <class T, class A> struct Widen {
  using W = typename Wrapping<A>::type;
  W operator()(T v) const { return static_cast<W>(static_cast<A>(v)); }
};

// Contiguous segments [off[s], off[s+1]): the elements [off[0], off[S]) split evenly over the
// threads; a thread sums each segment that starts in its part (to the part's end at most), and
// the piece of the segment that runs into its part from before; those pieces are added after
// the parallel region, in thread order.
template <class T, class W, class Conv>
int contiguous_sums(const T* x, const std::vector<std::int64_t>& off, W* out, Conv conv) {
  const std::size_t S = off.size() - 1;
  const auto at = [&](std::size_t s) { return static_cast<std::size_t>(off[s]); };
  const std::size_t first = at(0), total = at(S) - at(0);
  if (!go_parallel(total)) {
    for (std::size_t s = 0; s < S; ++s) out[s] = range_sum<W>(x, at(s), at(s + 1), conv);
    return 1;
  }
  int used = 1;
#ifdef _OPENMP
  const auto slots = static_cast<std::size_t>(max_threads());
  std::vector<W> lead(slots, W{0});
  std::vector<std::size_t> lead_at(slots, SIZE_MAX);
#pragma omp parallel
  {
    const auto nt = static_cast<std::size_t>(omp_get_num_threads());
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    if (t == 0) used = static_cast<int>(nt);
    const std::size_t lo = first + part_begin(total, t, nt);
    const std::size_t hi = first + part_begin(total, t + 1, nt);
    // The first segment that starts at lo or later; the one before it may run into the part.
    std::size_t s = static_cast<std::size_t>(
        std::lower_bound(off.begin(), off.begin() + static_cast<std::ptrdiff_t>(S),
                         static_cast<std::int64_t>(lo)) -
        off.begin());
    lead_at[t] = SIZE_MAX;
    if (t > 0 && s > 0 && at(s) > lo) {
      lead[t] = range_sum<W>(x, lo, std::min(at(s), hi), conv);
      lead_at[t] = s - 1;
    }
    for (; s < S && (at(s) < hi || t + 1 == nt); ++s)
      out[s] = range_sum<W>(x, at(s), std::min(at(s + 1), hi), conv);
  }
  for (std::size_t t = 1; t < static_cast<std::size_t>(used); ++t)
    if (lead_at[t] != SIZE_MAX) out[lead_at[t]] += lead[t];
#endif
  return used;
}

// Adds conv(p[j]) to acc[j] for j < w (a SIMD loop; acc and p do not overlap).
template <class T, class W, class Conv> void add_row(W* acc, const T* p, std::size_t w, Conv conv) {
  CLR_SIMD()
  for (std::size_t j = 0; j < w; ++j) acc[j] += conv(p[j]);
}

// Lines of an axis ([O, R1, I, R2, J], SegmentLayout): a task sums up to kColumns neighbours of
// the contiguous kept axis (J > 1: a SIMD loop over the row's run of them, row after row) or one
// line (J = 1: its runs of R2 contiguous elements) over a share of the R1 x R2 rows; with fewer
// than twice as many tasks as threads the rows are split, each share into its own partials,
// added in share order after (in parallel over the results).
struct Lines {
  std::size_t O, R1, I, R2, J;
};

// The layout's lines with the contiguous kept axis as J: [O, R1, I, 1, 1] (a matrix's columns)
// is [O, R1, 1, 1, I], the same addresses in the same result order.
Lines lines_of(const SegmentLayout& L) {
  if (L.J == 1 && L.R2 == 1) return Lines{L.O, L.R1, 1, 1, L.I};
  return Lines{L.O, L.R1, L.I, L.R2, L.J};
}

template <class T, class W, class Conv>
int axis_sums(const T* x, const Lines& L, W* out, std::vector<W>& partial, std::size_t splits,
              Conv conv) {
  const std::size_t O = L.O, R1 = L.R1, I = L.I, R2 = L.R2, J = L.J, R = R1 * R2;
  const std::size_t m = O * I * J;
  const std::size_t blocks = J > 1 ? (J + kColumns - 1) / kColumns : 1;
  const std::size_t groups = O * I * blocks, tasks = groups * splits;
  W* dst = splits > 1 ? partial.data() : out;
  int used = 1;
  const auto task = [&](std::size_t k) {
    const std::size_t g = k % groups, sp = k / groups;
    const std::size_t oi = g / blocks, j0 = (g % blocks) * kColumns;
    const std::size_t o = oi / I, i = oi % I;
    const std::size_t r_lo = R * sp / splits, r_hi = R * (sp + 1) / splits;
    W* res = dst + sp * m + oi * J;
    const auto row = [&](std::size_t r) {  // the address of row r's first element of line (o, i)
      return ((o * R1 + r / R2) * I + i) * R2 * J + (r % R2) * J;
    };
    if (J > 1) {
      const std::size_t w = std::min(kColumns, J - j0);
      W* acc = res + j0;
      std::fill(acc, acc + w, W{0});
      for (std::size_t r = r_lo; r < r_hi; ++r) add_row(acc, x + row(r) + j0, w, conv);
    } else {
      W s = W{0};
      for (std::size_t r = r_lo; r < r_hi;) {  // runs of R2 contiguous rows
        const std::size_t end = std::min(r_hi, (r / R2 + 1) * R2);
        const std::size_t a = row(r);
        s += range_sum<W>(x, a, a + (end - r), conv);
        r = end;
      }
      res[0] = s;
    }
  };
  if (go_parallel(O * R * I * J) && tasks > 1) {
#ifdef _OPENMP
#pragma omp parallel
    {
      if (omp_get_thread_num() == 0) used = omp_get_num_threads();
#pragma omp for schedule(dynamic, 1)
      for (std::size_t k = 0; k < tasks; ++k) task(k);
    }
#endif
  } else {
    for (std::size_t k = 0; k < tasks; ++k) task(k);
  }
  if (splits > 1) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (go_parallel(m * splits))
#endif
    for (std::size_t q = 0; q < m; ++q) {
      W s = W{0};
      for (std::size_t sp = 0; sp < splits; ++sp) s += partial[sp * m + q];
      out[q] = s;
    }
  }
  return used;
}

template <class T, class A>
OmpSegmentsResult segment_sums(const HostArray& a, const SegmentLayout& L, DType acc,
                               std::uint64_t warmup, std::uint64_t repeat) {
  using Conv = Widen<T, A>;
  using W = typename Conv::W;
  OmpSegmentsResult r;
  const T* x = a.as<T>();
  const std::size_t m = L.results();
  std::vector<W> out(std::max<std::size_t>(m, 1));
  std::vector<W> partial;
  std::size_t splits = 1;
  std::uint64_t longest = 0;
  for (std::uint64_t q = 0; !L.columns && q < m; ++q) longest = std::max(longest, L.length(q));
  const Lines lines = lines_of(L);
  if (L.columns) {
    const std::size_t blocks = lines.J > 1 ? (lines.J + kColumns - 1) / kColumns : 1;
    const std::size_t groups = lines.O * lines.I * blocks;
    const auto nt = static_cast<std::size_t>(max_threads());
    if (groups < 2 * nt)
      splits = std::min<std::size_t>(lines.R1 * lines.R2, (2 * nt + groups - 1) / groups);
    splits = std::max<std::size_t>(splits, 1);
    if (splits > 1) partial.resize(splits * m);
  }
  r.timing = time_peer(warmup, repeat, [&] {
    return L.columns ? axis_sums(x, lines, out.data(), partial, splits, Conv{})
                     : contiguous_sums(x, L.offsets, out.data(), Conv{});
  });
  const auto nt = static_cast<std::uint64_t>(std::max(r.timing.threads, 1));
  r.depth = L.columns ? (L.R1 * L.R2 + splits - 1) / splits + splits + 4
                      : std::min<std::uint64_t>(longest, kBlock) + (longest + kBlock - 1) / kBlock +
                            nt + 8;
  r.values.resize(m);
  for (std::size_t q = 0; q < m; ++q) r.values[q] = element(static_cast<A>(out[q]), -1, acc);
  return r;
}

}  // namespace

std::string omp_row_unsupported(const std::string& op, const std::vector<DType>& types,
                                bool where) {
  const std::string has =
      "the OpenMP peer has mean, var, std, norm2 and logsumexp of float and double arrays, and "
      "dot and minmax of int32, uint32, int64, uint64, float and double";
  if (where) return "the OpenMP peer takes no --where (" + has + ")";
  const bool known = op == "dot" || op == "mean" || op == "var" || op == "std" || op == "norm2" ||
                     op == "logsumexp" || op == "minmax";
  if (!known) return "the OpenMP peer has no --op " + op + " (" + has + ")";
  const DType t = types.front();
  if (op == "minmax" || op == "dot" ? !is_variant_dtype(t)
                                    : !(t == DType::kFloat || t == DType::kDouble))
    return "the OpenMP peer has no --op " + op + " of " + dtype_name(t) + " (" + has + ")";
  if (op == "dot" && (types.size() < 2 || types[1] != t))
    return "the OpenMP peer's dot takes two arrays of one type (" + has + ")";
  return "";
}

OmpRowResult omp_row(const std::string& op, const std::vector<HostArray>& arrays, double ddof,
                     std::uint64_t warmup, std::uint64_t repeat) {
  const DType t = arrays.front().type;
  if (op == "minmax")
    return dispatch_dtype(
        t, [&](auto zero) { return minmax_row<decltype(zero)>(arrays.front(), warmup, repeat); });
  if (op == "dot" && !is_float(t))
    return dispatch_dtype(t, [&](auto zero) {
      return int_dot_row<decltype(zero)>(arrays[0], arrays[1], warmup, repeat);
    });
  return t == DType::kFloat ? float_row<float>(op, arrays, ddof, warmup, repeat)
                            : float_row<double>(op, arrays, ddof, warmup, repeat);
}

std::string omp_segments_unsupported(Op op, DType type, DType acc) {
  const std::string has =
      "the OpenMP peer has segmented and axis sums (--op sum) of int32, uint32, int64, uint64, "
      "float and double";
  if (op != Op::kSum) return "the OpenMP peer has no segmented " + op_name(op) + " (" + has + ")";
  if (!is_variant_dtype(type) || !is_variant_dtype(acc) || is_float(type) != is_float(acc) ||
      dtype_size(acc) < dtype_size(type))
    return "the OpenMP peer has no segmented sum of " + dtype_name(type) + " into " +
           dtype_name(acc) + " (" + has + ")";
  return "";
}

OmpSegmentsResult omp_segment_sums(const HostArray& x, const SegmentLayout& layout, DType acc,
                                   std::uint64_t warmup, std::uint64_t repeat) {
  return dispatch_dtype(x.type, [&](auto tz) {
    return dispatch_dtype(acc, [&](auto az) -> OmpSegmentsResult {
      using T = decltype(tz);
      using A = decltype(az);
      if constexpr (std::is_floating_point_v<T> == std::is_floating_point_v<A> &&
                    sizeof(A) >= sizeof(T) && sizeof(T) >= 4)
        return segment_sums<T, A>(x, layout, acc, warmup, repeat);
      else
        return OmpSegmentsResult{};  // refused by omp_segments_unsupported()
    });
  });
}

}  // namespace clreduce

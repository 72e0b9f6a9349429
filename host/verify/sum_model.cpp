// sum_model.cpp: one pass over a piece's elements per chain layout, partial sums in double.
#include "verify/sum_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/parallel.hpp"

namespace clreduce {
namespace {

// What one pass over the chains found: T over their additions (all of them, and those whose
// partial sum reaches the threshold), the chains' |results| summed, the largest |partial sum|
// and the longest chain.
struct Chains {
  double terms = 0.0, high = 0.0, results = 0.0, peak = 0.0;
  std::uint64_t longest = 0;
  // One addition of partial sum s.
  void add(double s, double threshold) {
    const double a = std::fabs(s);
    terms += a;
    if (a >= threshold) high += a;
    peak = std::max(peak, a);
  }
  // Another pass's chains (disjoint from these).
  void join(const Chains& o) {
    terms += o.terms;
    high += o.high;
    results += o.results;
    peak = std::max(peak, o.peak);
    longest = std::max(longest, o.longest);
  }
};

// Runs part(k, parts) for k < parts on the cores, each with its own Chains, joined.
template <class F> Chains on_cores(std::size_t parts, F&& part) {
  std::vector<Chains> c(parts);
  parallel_for(parts, parts > 1, [&](std::size_t k) { c[k] = part(k); });
  Chains all;
  for (const Chains& one : c) all.join(one);
  return all;
}

template <class T> double at(const T* x, std::size_t i) {
  const double v = static_cast<double>(x[i]);
  return std::isfinite(v) ? v : 0.0;  // inf and NaN are the check's, not the bound's
}

template <class T> double abs_range(const T* x, std::size_t first, std::size_t last) {
  double s = 0.0;
  for (std::size_t i = first; i < last; ++i) s += std::fabs(at(x, i));
  return s;
}

// The exponent of x's lowest set bit (x finite, not zero): x is a multiple of 2^that.
int lowest_bit(float x) {
  std::uint32_t b;
  std::memcpy(&b, &x, 4);
  const int e = static_cast<int>((b >> 23) & 0xFF);
  const std::uint32_t m = b & 0x7FFFFF;
  return e ? e - 150 + __builtin_ctz(m | 0x800000u) : -149 + __builtin_ctz(m);
}
int lowest_bit(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, 8);
  const int e = static_cast<int>((b >> 52) & 0x7FF);
  const std::uint64_t m = b & 0xFFFFFFFFFFFFFull;
  return e ? e - 1075 + __builtin_ctzll(m | (1ull << 52)) : -1074 + __builtin_ctzll(m);
}

// kStrided: one running sum per chain key. The keys of the positions q in [a, b) of every
// period (b - a a multiple of fold·width) are theirs alone: such slices of the period run apart.
template <class T> Chains strided(const SumModel& m, const T* x, std::size_t n, double threshold) {
  const std::uint64_t period = std::max<std::uint64_t>(m.period, 1);
  const std::uint64_t width = std::max<std::uint64_t>(m.width, 1);
  const std::uint64_t block = std::max<std::uint64_t>(m.fold, 1) * width;
  const bool residues = block >= period && width >= period;       // key(q) = q
  const std::uint64_t span = std::min<std::uint64_t>(period, n);  // positions that occur
  // Slices of whole blocks (a residue each, for residues), at most 64 and at least 4096 keys.
  const std::uint64_t unit = residues ? 1 : block;
  const std::uint64_t units = (span + unit - 1) / unit;
  const std::uint64_t per = std::max<std::uint64_t>((units + 63) / 64, (4096 + unit - 1) / unit);
  const std::size_t parts = static_cast<std::size_t>((units + per - 1) / per);
  return on_cores(parts, [&](std::size_t part) {
    Chains c;
    const std::uint64_t a = part * per * unit, b = std::min(span, a + per * unit);
    std::vector<double> s(b - a, 0.0);  // by key - key(a): keys of [a, b) lie in [key(a), ..)
    std::vector<std::uint64_t> count(b - a, 0);
    auto key = [&](std::uint64_t q) {
      return residues ? q : q / block * width + q % block % width;
    };
    const std::uint64_t base = key(a);
    for (std::uint64_t row = 0; row * period + a < n; ++row)
      for (std::uint64_t q = a; q < b && row * period + q < n; ++q) {
        const std::size_t k = static_cast<std::size_t>(key(q) - base);
        s[k] += at(x, static_cast<std::size_t>(row * period + q));
        if (count[k]++ > 0) c.add(s[k], threshold);
      }
    for (std::size_t k = 0; k < s.size(); ++k) {
      c.results += std::fabs(s[k]);
      c.longest = std::max(c.longest, count[k]);
    }
    return c;
  });
}

// kRuns with `nv` whole vectors from element 0: each part's lanes, the work-items' runs apart;
// *bounds receives the sum of |x| over the vec elements on each side of every part's start and
// end (where a head shifts them).
template <class T>
Chains runs(const SumModel& m, const T* x, std::size_t n, std::uint64_t nv, double threshold,
            double* bounds) {
  const std::uint64_t vec = std::max<std::uint64_t>(m.vec, 1);
  const std::uint64_t items = std::max<std::uint64_t>(m.items, 1);
  const std::uint64_t streams = std::max<std::uint64_t>(m.streams, 1);
  const std::uint64_t per = nv / items + (nv % items != 0);
  const std::uint64_t used = per ? std::min<std::uint64_t>(items, (nv + per - 1) / per) : 0;
  std::vector<double> edge_sums(static_cast<std::size_t>(used), 0.0);
  const Chains all = on_cores(static_cast<std::size_t>(used), [&](std::size_t w) {
    Chains c;
    std::vector<double> s(vec, 0.0);
    std::vector<std::uint64_t> count(vec, 0);
    auto edges = [&](std::uint64_t v) {  // the vec elements on each side of vector boundary v
      const auto e = static_cast<std::size_t>(std::min<std::uint64_t>(v * vec, n));
      edge_sums[w] +=
          abs_range(x, e - std::min<std::size_t>(e, vec), std::min<std::size_t>(n, e + vec));
    };
    // The vectors [a, b) into the lanes, in order.
    auto lanes = [&](std::uint64_t a, std::uint64_t b) {
      for (std::uint64_t v = a; v < b; ++v)
        for (std::uint64_t j = 0; j < vec; ++j) {
          s[j] += at(x, static_cast<std::size_t>(v * vec + j));
          if (count[j]++ > 0) c.add(s[j], threshold);
        }
      edges(a);
      edges(b);
    };
    const std::uint64_t v = w * per, end = std::min(v + per, nv), q = (end - v) / streams;
    for (std::uint64_t k = 0; k < streams; ++k) {
      lanes(v + k * q, v + (k + 1) * q);
      if (k == 0) lanes(v + streams * q, end);  // the remainder continues part 0
      for (std::uint64_t j = 0; j < vec; ++j) {
        c.results += std::fabs(s[j]);
        c.longest = std::max(c.longest, count[j]);
        s[j] = 0.0;
        count[j] = 0;
      }
    }
    return c;
  });
  for (double e : edge_sums) *bounds += e;
  return all;
}

// T two ways: every addition (all), or only those that can round (exact_aware): where every
// element is a multiple of 2^g, every partial sum an order computes is one too (a rounded one
// has an ulp of at least 2^g), and an addition whose result is below 2^(p + g) in magnitude (p:
// the accumulator's precision) is exact. With every error below half that, an addition whose
// exact partial sum is below 2^(p + g - 1) cannot round.
struct Terms {
  double all = 0.0, exact_aware = 0.0;
  std::uint64_t longest = 0;
};

template <class T> SumPiece budget(const SumModel& m, const T* x, std::size_t n) {
  SumPiece p;
  double abs = 0.0;
  long double sum = 0.0L;
  double top = 0.0;  // the largest |x|
  int grid = std::numeric_limits<int>::max();
  for (std::size_t i = 0; i < n; ++i) {
    const double v = at(x, i);
    abs += std::fabs(v);
    top = std::max(top, std::fabs(v));
    sum += static_cast<long double>(x[i]);
    if (v != 0.0) grid = std::min(grid, lowest_bit(x[i]));
  }
  p.sum = sum;
  p.abs_sum = abs;
  p.count = n;
  p.budget.depth = std::min<std::uint64_t>(m.depth, n > 0 ? n - 1 : 0);
  if (n == 0) return p;
  const bool single = std::is_same_v<T, float>;
  constexpr int precision = std::numeric_limits<T>::digits;
  // Past 2^(53 + g) the double partial sums below may round themselves: a threshold of 0 then
  // (every addition counts).
  const double threshold =
      grid != std::numeric_limits<int>::max() && abs < std::ldexp(1.0, 53 + grid)
          ? std::ldexp(1.0, precision - 1 + grid)
          : 0.0;
  const double above = static_cast<double>(m.above);
  Terms t;
  // Chains' terms, what moving their ends adds (their partial sums move by an element at most:
  // exact where they stay below the threshold even so), and the sum of |x| over the values the
  // additions above the chains combine (each of them at most that in magnitude).
  auto total = [&](const Chains& c, double moved, double leaves) {
    t.all = std::max(t.all, c.terms + moved + above * leaves);
    t.exact_aware = std::max(t.exact_aware, c.high + (c.peak + top >= threshold ? moved : 0.0) +
                                                (leaves >= threshold ? above * leaves : 0.0));
    t.longest = std::max(t.longest, c.longest + 1);
  };
  if (m.kind == SumModel::Kind::kDepth) {
    t.all = static_cast<double>(p.budget.depth) * abs;
    t.exact_aware = abs >= threshold ? t.all : 0.0;
    t.longest = p.budget.depth;
  } else if (m.kind == SumModel::Kind::kStrided) {
    // The chains over all of [0, n): a head h <= edge drops each chain's first element, at most
    // (every later partial sum moves by it); a tail only removes their last ones.
    const auto e = static_cast<std::size_t>(std::min<std::uint64_t>(m.edge, n));
    const double first = abs_range(x, 0, e), last = abs_range(x, n - e, n);
    const Chains c = strided(m, x, n, threshold);
    total(c, static_cast<double>(c.longest) * first, c.results + 2.0 * (first + last));
  } else {
    // For each count of whole vectors a head h < vec leaves (n / vec, or one fewer), the layout
    // at h = 0; a head moves every part's ends by h elements (each chain's first element may
    // go, an element may join at its end): at most the longest chain times those elements, plus
    // the chains' |results| once more. The head and the tail lie in the first vec elements and
    // after the last whole vector.
    const std::uint64_t vec = std::max<std::uint64_t>(m.vec, 1), nv = n / vec;
    for (std::uint64_t v : {nv, nv > 0 && n % vec + 1 < vec ? nv - 1 : nv}) {
      double bounds = 0.0;
      const Chains c = runs(m, x, n, v, threshold, &bounds);
      const double strays = abs_range(x, 0, std::min<std::size_t>(n, vec)) +
                            abs_range(x, static_cast<std::size_t>(v * vec), n);
      total(c, static_cast<double>(c.longest + 1) * bounds + c.results,
            c.results + bounds + strays);
    }
  }
  // The double partial sums are each within γ_L of the sums of |x| below them (exact where a
  // threshold applies), and T's own additions within γ_n of it.
  constexpr double u = std::numeric_limits<double>::epsilon() / 2;
  const double l = static_cast<double>(t.longest) + above + 1.0;
  const double slack = threshold > 0.0 ? 0.0 : 2.0 * u * l * l * abs;
  auto widen = [&](double terms) {
    terms = (terms + slack) * (1.0 + 2.0 * u * (static_cast<double>(n) + l));
    return std::isfinite(terms) ? static_cast<long double>(terms)
                                : std::numeric_limits<long double>::infinity();
  };
  p.budget.terms = widen(t.all);
  // Exact additions only where every error, so bounded, stays below the threshold.
  if (sum_error_bound(single, p.budget, abs) <= threshold) p.budget.terms = widen(t.exact_aware);
  return p;
}

}  // namespace

SumPiece sum_budget(const SumModel& m, DType type, const void* x, std::size_t n) {
  if (type == DType::kFloat) return budget(m, static_cast<const float*>(x), n);
  if (type == DType::kDouble) return budget(m, static_cast<const double*>(x), n);
  SumPiece p;
  p.budget.depth = std::min<std::uint64_t>(m.depth, n > 0 ? n - 1 : 0);
  p.count = n;
  return p;
}

SumPiece fold_budgets(const std::vector<SumPiece>& pieces, bool any_order) {
  SumPiece r;
  if (pieces.empty()) return r;
  long double run = 0.0L, results = 0.0L;
  std::uint64_t deepest = 0;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    const SumPiece& p = pieces[k];
    r.budget.terms += p.budget.terms;
    r.abs_sum += p.abs_sum;
    r.count += p.count;
    deepest = std::max(deepest, p.budget.depth);
    run += p.sum;
    results += std::fabs(p.sum);
    if (k > 0 && !any_order) r.budget.terms += std::fabs(run);
  }
  const auto combines = static_cast<std::uint64_t>(pieces.size() - 1);
  if (any_order) r.budget.terms += static_cast<long double>(combines) * results;
  r.budget.depth = std::min<std::uint64_t>(deepest + combines, r.count > 0 ? r.count - 1 : 0);
  r.sum = run;
  // The pieces' sums are long double sums of their elements: widened by their rounding.
  r.budget.terms *= 1.0L + 0x1p-40L;
  return r;
}

}  // namespace clreduce

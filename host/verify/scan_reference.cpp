// scan_reference.cpp: sequential scans over every type pair (element, accumulator), wrapping
// integer arithmetic and NaN-propagating min/max as in cl/clreduce.h, and the streaming check.
#include "verify/scan_reference.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "clreduce/error.hpp"
#include "verify/float_check.hpp"

namespace clreduce {
namespace {

// The (element, accumulator) pairs clreduce uses: the same type, or 32-bit ints widened.
template <class T, class A>
constexpr bool kValidPair = std::is_same_v<T, A> ||
                            (std::is_same_v<T, std::int32_t> && std::is_same_v<A, std::int64_t>) ||
                            (std::is_same_v<T, std::uint32_t> && std::is_same_v<A, std::uint64_t>);

template <class A> bool is_nan(A x) {
  if constexpr (std::is_floating_point_v<A>)
    return std::isnan(x);
  else
    return false;
}

// OP(a, b) exactly as clr_op computes it: integers wrap (unsigned arithmetic), min and max
// propagate NaN.
template <class A> A apply(Op op, A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if (op == Op::kSum)
      return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if (op == Op::kProd)
      return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    if (op == Op::kSum) return a + b;
    if (op == Op::kProd) return a * b;
  }
  if (op == Op::kMin) return (is_nan(a) || a < b) ? a : b;
  return (is_nan(a) || a > b) ? a : b;
}

template <class A> A identity(Op op) {
  switch (op) {
    case Op::kSum: return A(0);
    case Op::kProd: return A(1);
    case Op::kMin:
      return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity()
                                                  : std::numeric_limits<A>::max();
    default:
      return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                  : std::numeric_limits<A>::lowest();
  }
}

// The sequential loop with the operator fixed at compile time (K: 0 sum, 1 prod, 2 min, 3 max).
template <int K, class T, class A>
void scan_loop(const T* x, std::size_t n, bool exclusive, const std::uint8_t* flags, A* y) {
  constexpr Op op = K == 0 ? Op::kSum : K == 1 ? Op::kProd : K == 2 ? Op::kMin : Op::kMax;
  const A id = identity<A>(op);
  A acc = id;
  for (std::size_t i = 0; i < n; ++i) {
    if (flags && flags[i]) acc = id;
    if (exclusive) {
      y[i] = acc;
      acc = apply(op, acc, static_cast<A>(x[i]));
    } else {
      acc = apply(op, acc, static_cast<A>(x[i]));
      y[i] = acc;
    }
  }
}

template <class T, class A>
void sequential_typed(const HostArray& a, const ScanMode& m, const std::uint8_t* flags,
                      unsigned char* out) {
  const T* x = a.as<T>();
  A* y = reinterpret_cast<A*>(out);
  switch (m.op) {
    case Op::kSum: return scan_loop<0>(x, a.n, m.exclusive, flags, y);
    case Op::kProd: return scan_loop<1>(x, a.n, m.exclusive, flags, y);
    case Op::kMin: return scan_loop<2>(x, a.n, m.exclusive, flags, y);
    default: return scan_loop<3>(x, a.n, m.exclusive, flags, y);
  }
}

template <class A> Value value_of(A v) {
  Value r;
  r.type = std::is_same_v<A, std::int32_t>    ? DType::kInt32
           : std::is_same_v<A, std::uint32_t> ? DType::kUInt32
           : std::is_same_v<A, std::int64_t>  ? DType::kInt64
           : std::is_same_v<A, std::uint64_t> ? DType::kUInt64
           : std::is_same_v<A, float>         ? DType::kFloat
                                              : DType::kDouble;
  return Value::from_bytes(r.type, reinterpret_cast<const unsigned char*>(&v));
}

// Records element i as wrong (keeping the first one's description).
template <class A> void mark_wrong(ScanVerdict& v, std::size_t i, A got, A ref, double bound) {
  if (v.wrong++ == 0) {
    v.first_wrong = static_cast<std::int64_t>(i);
    v.why = "y[" + std::to_string(i) + "] = " + value_of(got).str() + ", expected " +
            value_of(ref).str();
    if (bound > 0) v.why += " within " + value_of(bound).str();
  }
}

template <class T, class A>
ScanRefState ref_state_typed(const HostArray& a, const ScanMode& m, const std::uint8_t* flags) {
  ScanRefState st;
  const T* x = a.as<T>();
  const bool sum = m.op == Op::kSum;
  const A id = identity<A>(m.op);
  A acc = id;
  st.run = sum ? 0.0L : 1.0L;
  // The running long double value and the magnitudes serve only the float sums' and products'
  // checks (verify_typed); integers, min and max carry the exact value alone.
  if (!std::is_floating_point_v<A> || !(sum || m.op == Op::kProd)) {
    for (std::size_t i = 0; i < a.n; ++i) {
      if (flags && flags[i]) {
        acc = id;
        st.count = 0;
        st.reset = true;
      }
      acc = apply(m.op, acc, static_cast<A>(x[i]));
      ++st.count;
    }
    st.exact = value_of(acc);
    st.empty = a.n == 0;
    return st;
  }
  for (std::size_t i = 0; i < a.n; ++i) {
    if (flags && flags[i]) {
      acc = id;
      st.run = sum ? 0.0L : 1.0L;
      st.mag = Magnitudes{};
      st.count = 0;
      st.reset = true;
    }
    acc = apply(m.op, acc, static_cast<A>(x[i]));
    const long double xi = static_cast<long double>(x[i]);
    st.run = sum ? st.run + xi : st.run * xi;
    st.mag.add(xi);
    ++st.count;
  }
  st.exact = value_of(acc);
  st.empty = a.n == 0;
  return st;
}

template <class T, class A>
ScanVerdict verify_typed(const HostArray& a, const ScanMode& m, const std::uint8_t* flags,
                         std::uint64_t depth, const unsigned char* got_bytes,
                         const ScanRefState* start) {
  const bool carried = start && !start->empty;
  ScanVerdict v;
  const T* x = a.as<T>();
  const std::size_t n = a.n;
  auto got_at = [&](std::size_t i) {
    A g;
    std::memcpy(&g, got_bytes + i * sizeof(A), sizeof(A));
    return g;
  };
  A last{};
  if constexpr (std::is_floating_point_v<A>) {
    if (m.op == Op::kSum || m.op == Op::kProd) {
      // The running long double value and the magnitudes of the elements y_i combines (its
      // segment, up to i), checked by the rule reductions use (float_check.hpp).
      const bool sum = m.op == Op::kSum, single = std::is_same_v<A, float>;
      long double run = carried ? start->run : sum ? 0.0L : 1.0L;
      Magnitudes mag = carried ? start->mag : Magnitudes{};
      std::uint64_t count = carried ? start->count : 0;
      std::int64_t first_overflow = -1;
      Magnitudes first_overflow_mag;
      for (std::size_t i = 0; i < n; ++i) {
        if (flags && flags[i]) {
          run = sum ? 0.0L : 1.0L;
          mag = Magnitudes{};
          count = 0;
        }
        const long double xi = static_cast<long double>(x[i]);
        if (!m.exclusive) {
          run = sum ? run + xi : run * xi;
          mag.add(xi);
          ++count;
        }
        const A ref = static_cast<A>(run);
        const A g = got_at(i);
        // y_i's elements are the leaves of the tree that computes it: at most count - 1
        // additions on any path (those of the identity are exact), whatever the variant's depth.
        const ErrorBudget e =
            sum ? ErrorBudget::classical(std::min<std::uint64_t>(depth, count ? count - 1 : 0),
                                         mag.abs_sum)
                : ErrorBudget{count, 0.0L};
        const FloatCheck c = check_float(static_cast<long double>(g), static_cast<long double>(ref),
                                         run, sum, single, e, mag);
        if (static_cast<double>(c.bound) > v.bound) v.bound = static_cast<double>(c.bound);
        if (!c.ok) mark_wrong(v, i, g, ref, static_cast<A>(c.bound));
        if (c.overflow && v.overflowed++ == 0) {
          first_overflow = static_cast<std::int64_t>(i);
          first_overflow_mag = mag;
        }
        if (m.exclusive) {
          run = sum ? run + xi : run * xi;
          mag.add(xi);
          ++count;
        }
        last = ref;
      }
      v.ok = v.wrong == 0;
      v.overflow = v.overflowed > 0;
      if (!v.ok) {
        v.why += "; " + std::to_string(v.wrong) + " of " + std::to_string(n) + " elements wrong";
      } else if (v.overflow) {
        const auto at = static_cast<std::size_t>(first_overflow);
        v.why = "y[" + std::to_string(at) + "] = " + value_of(got_at(at)).str() +
                (v.overflowed > 1 ? " (and " + std::to_string(v.overflowed - 1) + " more of " +
                                        std::to_string(n) + " elements)"
                                  : std::string()) +
                ": " +
                overflow_note(static_cast<long double>(got_at(at)), sum, single, first_overflow_mag,
                              "of the elements it combines");
      }
      v.expected_last = value_of(last);
      return v;
    }
  }
  // Exact: integers (wrapping), min and max.
  const A id = identity<A>(m.op);
  A acc = carried ? value_as<A>(start->exact) : id;
  for (std::size_t i = 0; i < n; ++i) {
    if (flags && flags[i]) acc = id;
    const A before = acc;
    acc = apply(m.op, acc, static_cast<A>(x[i]));
    const A ref = m.exclusive ? before : acc;
    const A g = got_at(i);
    const bool ok = ref == g || (is_nan(ref) && is_nan(g));
    if (!ok) mark_wrong(v, i, g, ref, 0.0);
    last = ref;
  }
  v.ok = v.wrong == 0;
  if (!v.ok)
    v.why += "; " + std::to_string(v.wrong) + " of " + std::to_string(n) + " elements wrong";
  v.expected_last = value_of(last);
  return v;
}

// Calls f(T{}, A{}) for the element type of a and the accumulator type acc.
template <class F> void dispatch_pair(DType t, DType acc, F&& f) {
  dispatch_dtype(t, [&](auto tt) {
    dispatch_dtype(acc, [&](auto aa) {
      using T = decltype(tt);
      using A = decltype(aa);
      if constexpr (kValidPair<T, A>) {
        f(tt, aa);
      } else {
        throw Error(Errc::kUsage, "no scan of " + dtype_name(t) + " into " + dtype_name(acc));
      }
    });
  });
}

const std::uint8_t* flag_ptr(const HostArray& a, const std::vector<std::uint8_t>& flags) {
  if (flags.empty()) return nullptr;
  if (flags.size() != a.n)
    throw Error(Errc::kUsage, std::to_string(flags.size()) + " segment flags for an array of " +
                                  std::to_string(a.n) + " elements");
  return flags.data();
}

void require_scan_op(Op op) {
  if (is_arg_op(op))
    throw Error(Errc::kUsage, op_name(op) + " has no prefix scan (scans take sum, prod, min, max)");
}

}  // namespace

void sequential_scan(const HostArray& a, const ScanMode& mode,
                     const std::vector<std::uint8_t>& flags, unsigned char* out) {
  require_scan_op(mode.op);
  const std::uint8_t* f = flag_ptr(a, flags);
  dispatch_pair(a.type, mode.acc, [&](auto tt, auto aa) {
    sequential_typed<decltype(tt), decltype(aa)>(a, mode, f, out);
  });
}

ScanVerdict verify_scan(const HostArray& a, const ScanMode& mode,
                        const std::vector<std::uint8_t>& flags, std::uint64_t depth,
                        const unsigned char* got, const ScanRefState* start) {
  require_scan_op(mode.op);
  const std::uint8_t* f = flag_ptr(a, flags);
  ScanVerdict v;
  dispatch_pair(a.type, mode.acc, [&](auto tt, auto aa) {
    v = verify_typed<decltype(tt), decltype(aa)>(a, mode, f, depth, got, start);
  });
  return v;
}

ScanRefState scan_ref_state(const HostArray& a, const ScanMode& mode,
                            const std::vector<std::uint8_t>& flags) {
  require_scan_op(mode.op);
  const std::uint8_t* f = flag_ptr(a, flags);
  ScanRefState st;
  dispatch_pair(a.type, mode.acc, [&](auto tt, auto aa) {
    st = ref_state_typed<decltype(tt), decltype(aa)>(a, mode, f);
  });
  return st;
}

}  // namespace clreduce

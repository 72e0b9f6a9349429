// reference.cpp: sequential loops over every type, wrapping integer arithmetic, NaN rules.
#include "verify/reference.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "clreduce/error.hpp"
#include "core/parallel.hpp"
#include "run/fold.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {
namespace {

template <class T> bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

// Wrapping add and multiply: arithmetic in the unsigned type, as NumPy's integers behave.
template <class A> A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <class A> A wrap_mul(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    // unsigned short promotion pitfalls do not apply: U is 32 or 64 bits.
    return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

template <class A> Value make_value(A a, std::int64_t index = -1) {
  Value v;
  v.index = index;
  if constexpr (std::is_same_v<A, std::int32_t>) {
    v.type = DType::kInt32;
    v.i = a;
  }
  if constexpr (std::is_same_v<A, std::int64_t>) {
    v.type = DType::kInt64;
    v.i = a;
  }
  if constexpr (std::is_same_v<A, std::uint32_t>) {
    v.type = DType::kUInt32;
    v.u = a;
  }
  if constexpr (std::is_same_v<A, std::uint64_t>) {
    v.type = DType::kUInt64;
    v.u = a;
  }
  if constexpr (std::is_same_v<A, float>) {
    v.type = DType::kFloat;
    v.f = static_cast<double>(a);
  }
  if constexpr (std::is_same_v<A, double>) {
    v.type = DType::kDouble;
    v.f = a;
  }
  return v;
}

// The accumulator type for T under op: 32-bit ints widen for sum and prod.
template <class T>
using Wide =
    std::conditional_t<std::is_integral_v<T> && sizeof(T) == 4,
                       std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>, T>;

template <class W, class T> Value seq_fold(const T* x, std::size_t n, Op op) {
  W a = op == Op::kProd ? 1 : 0;
  if (op == Op::kProd) {
    for (std::size_t i = 0; i < n; ++i) a = wrap_mul(a, static_cast<W>(x[i]));
  } else {
    for (std::size_t i = 0; i < n; ++i) a = wrap_add(a, static_cast<W>(x[i]));
  }
  return make_value(a);
}

template <class T> Value seq_value_op(const T* x, std::size_t n, Op op, bool narrow) {
  if (op == Op::kSum || op == Op::kProd)
    return narrow ? seq_fold<T>(x, n, op) : seq_fold<Wide<T>>(x, n, op);
  const bool want_min = op == Op::kMin || op == Op::kArgMin;
  T best = x[0];
  std::size_t at = 0;
  for (std::size_t i = 1; i < n; ++i) {
    if (is_nan(best)) break;  // the first NaN wins
    if (is_nan(x[i]) || (want_min ? x[i] < best : x[i] > best)) {
      best = x[i];
      at = i;
    }
  }
  return make_value(best, is_arg_op(op) ? static_cast<std::int64_t>(at) : -1);
}

template <class T> long double exact_float(const T* x, std::size_t n, Op op) {
  long double a = op == Op::kProd ? 1.0L : 0.0L;
  for (std::size_t i = 0; i < n; ++i) {
    if (op == Op::kProd)
      a *= static_cast<long double>(x[i]);
    else
      a += static_cast<long double>(x[i]);
  }
  return a;
}

void require_nonempty(const HostArray& a, Op op) {
  if (a.n == 0 && !has_identity(op))
    throw Error(Errc::kUsage, op_name(op) + " of an empty array has no identity (n = 0)");
}

// The sequential loop's result, computed in blocks on every core and folded in block order
// (fold_values: integers wrap, NaN and the first index as the loop has them), for large arrays.
Value parallel_reduce(const HostArray& a, Op op, DType acc) {
  constexpr std::size_t kBlock = std::size_t{1} << 22;
  const std::size_t blocks = (a.n + kBlock - 1) / kBlock;
  if (blocks < 4) return sequential_reduce(a, op, acc);
  std::vector<Value> part(blocks);
  dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    const T* x = a.as<T>();
    parallel_for(blocks, true, [&](std::size_t b) {
      const std::size_t at = b * kBlock, len = std::min(kBlock, a.n - at);
      part[b] = seq_value_op<T>(x + at, len, op, acc == a.type);
      if (part[b].index >= 0) part[b].index += static_cast<std::int64_t>(at);
    });
    return 0;
  });
  Value v = part[0];
  for (std::size_t b = 1; b < blocks; ++b) v = fold_values(op, v, part[b]);
  return v;
}

}  // namespace

Value sequential_reduce(const HostArray& a, Op op) {
  return sequential_reduce(a, op, acc_dtype(op, a.type));
}

Value sequential_reduce(const HostArray& a, Op op, DType acc) {
  require_nonempty(a, op);
  return dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    return seq_value_op<T>(a.as<T>(), a.n, op, acc == a.type);
  });
}

Value reference_reduce(const HostArray& a, Op op) {
  return reference_reduce(a, op, acc_dtype(op, a.type));
}

Value reference_reduce(const HostArray& a, Op op, DType acc) {
  require_nonempty(a, op);
  if (!is_float(a.type) || !(op == Op::kSum || op == Op::kProd)) return parallel_reduce(a, op, acc);
  if (op == Op::kSum) return exact_sum(a);
  return dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      return make_value(static_cast<T>(exact_float<T>(a.as<T>(), a.n, op)));
    } else {
      return Value{};
    }
  });
}

long double abs_sum(const HostArray& a) {
  if (!is_float(a.type)) return 0.0L;
  return dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    long double s = 0.0L;
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = a.as<T>();
      for (std::size_t i = 0; i < a.n; ++i) s += std::fabs(static_cast<long double>(x[i]));
    }
    return s;
  });
}

Value identity_value(Op op, DType acc) {
  Value v;
  v.type = acc;
  const int one = op == Op::kProd ? 1 : 0;
  v.i = one;
  v.u = static_cast<std::uint64_t>(one);
  v.f = one;
  return v;
}

Verdict verify_bitwise(const Value& got, const Value& ref) {
  Verdict v;
  v.ok = got.type == ref.type && is_float(ref.type) && same_bits(got, ref);
  if (!v.ok)
    v.why = got.str() + " is not the correctly rounded sum " + ref.str() + " (bit for bit)";
  return v;
}

FloatStats float_stats(const HostArray& a, Op op) {
  FloatStats s;
  if (!is_float(a.type) || !(op == Op::kSum || op == Op::kProd)) return s;
  dispatch_dtype(a.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* x = a.as<T>();
      for (std::size_t i = 0; i < a.n; ++i) s.m.add(static_cast<long double>(x[i]));
      s.exact = exact_float<T>(x, a.n, op);
    }
  });
  return s;
}

Verdict verify(const Value& got, const Value& ref, Op op, std::uint64_t depth,
               long double sum_abs) {
  FloatStats s;
  s.exact = ref.f;
  s.m.abs_sum = sum_abs;
  // The split of Σ|x| by sign is not known: either may overflow. A product's sign is ref's.
  s.m.pos_sum = s.m.neg_sum = sum_abs;
  s.m.negatives = !std::isnan(ref.f) && std::signbit(ref.f) ? 1 : 0;
  return verify(got, ref, op, ErrorBudget::classical(depth, sum_abs), s);
}

Verdict verify(const Value& got, const Value& ref, Op op, std::uint64_t depth,
               const FloatStats& stats) {
  return verify(got, ref, op, ErrorBudget::classical(depth, stats.m.abs_sum), stats);
}

Verdict verify(const Value& got, const Value& ref, Op op, const ErrorBudget& budget,
               const FloatStats& stats) {
  Verdict v;
  if (got.type != ref.type) {
    v.why = "type mismatch";
    return v;
  }
  if (is_arg_op(op) && got.index != ref.index) {
    v.why = "index " + std::to_string(got.index) + " != expected " + std::to_string(ref.index);
    return v;
  }
  if (!is_float(ref.type)) {
    v.ok = is_signed(ref.type) ? got.i == ref.i : got.u == ref.u;
    if (!v.ok) v.why = got.str() + " != expected " + ref.str();
    return v;
  }
  if (op == Op::kSum || op == Op::kProd) {
    const bool sum = op == Op::kSum, single = ref.type == DType::kFloat;
    if (sum && got.f == 0.0 && std::signbit(got.f)) {
      v.why = got.str() + ": a sum is never -0 (NumPy's sum adds from +0, and so must every order)";
      return v;
    }
    const FloatCheck c = check_float(got.f, ref.f, stats.exact, sum, single, budget, stats.m);
    v.ok = c.ok;
    v.overflow = c.overflow;
    v.bound = static_cast<double>(c.bound);
    if (v.overflow)
      v.why = overflow_note(got.f, sum, single, stats.m);
    else if (!v.ok && std::isfinite(got.f) && c.bound > 0)
      v.why = got.str() + " differs from " + ref.str() + " by more than " + std::to_string(v.bound);
    else if (!v.ok)
      v.why = got.str() + " != expected " + ref.str();
    return v;
  }
  v.ok = (std::isnan(ref.f) && std::isnan(got.f)) || got.f == ref.f;
  if (!v.ok) v.why = got.str() + " != expected " + ref.str();
  return v;
}

}  // namespace clreduce

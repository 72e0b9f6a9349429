// fold.cpp: the host's fold of piece results and the scan's carry between pieces.
#include "run/fold.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "clreduce/error.hpp"
#include "core/parallel.hpp"

namespace clreduce {

namespace {

template <class A> Value put(A a, std::int64_t index) {
  Value v;
  v.index = index;
  if constexpr (std::is_same_v<A, std::int32_t>) v.type = DType::kInt32;
  if constexpr (std::is_same_v<A, std::uint32_t>) v.type = DType::kUInt32;
  if constexpr (std::is_same_v<A, std::int64_t>) v.type = DType::kInt64;
  if constexpr (std::is_same_v<A, std::uint64_t>) v.type = DType::kUInt64;
  if constexpr (std::is_same_v<A, float>) v.type = DType::kFloat;
  if constexpr (std::is_same_v<A, double>) v.type = DType::kDouble;
  if constexpr (std::is_floating_point_v<A>)
    v.f = static_cast<double>(a);
  else if constexpr (std::is_signed_v<A>)
    v.i = static_cast<std::int64_t>(a);
  else
    v.u = static_cast<std::uint64_t>(a);
  return v;
}

template <class A> bool nan_of(A x) {
  if constexpr (std::is_floating_point_v<A>)
    return std::isnan(x);
  else
    return false;
}

template <class A> Value fold_as(Op op, const Value& ea, const Value& la) {
  const A a = value_as<A>(ea), b = value_as<A>(la);
  if (op == Op::kSum || op == Op::kProd) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      const U r = op == Op::kSum ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                                 : static_cast<U>(static_cast<U>(a) * static_cast<U>(b));
      return put<A>(static_cast<A>(r), -1);
    } else {
      return put<A>(op == Op::kSum ? static_cast<A>(a + b) : static_cast<A>(a * b), -1);
    }
  }
  const bool want_min = op == Op::kMin || op == Op::kArgMin;
  if (is_arg_op(op)) {
    if (nan_of(a)) return ea;  // the first NaN wins
    if (nan_of(b) || (want_min ? b < a : b > a)) return la;
    return ea;  // ties keep the earlier index
  }
  if (nan_of(a)) return ea;
  if (nan_of(b)) return la;
  return put<A>(want_min ? (b < a ? b : a) : (b > a ? b : a), -1);
}

// op(carry, y) as the kernels' clr_op(carry, y) computes it for scans (sum, prod, min, max).
template <class A> A scan_op(Op op, A a, A b) {
  if (op == Op::kSum || op == Op::kProd) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::make_unsigned_t<A>;
      return static_cast<A>(op == Op::kSum ? static_cast<U>(static_cast<U>(a) + static_cast<U>(b))
                                           : static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return op == Op::kSum ? static_cast<A>(a + b) : static_cast<A>(a * b);
    }
  }
  if (op == Op::kMin) return (nan_of(a) || a < b) ? a : b;  // clr_op's rule, bit for bit
  return (nan_of(a) || a > b) ? a : b;
}

}  // namespace

Value fold_values(Op op, const Value& earlier, const Value& later) {
  if (earlier.type != later.type)
    throw Error(Errc::kInternal, "internal: folding " + dtype_name(earlier.type) + " with " +
                                     dtype_name(later.type));
  return dispatch_dtype(earlier.type,
                        [&](auto tag) { return fold_as<decltype(tag)>(op, earlier, later); });
}

Value convert_value(const Value& v, DType acc) {
  return dispatch_dtype(acc, [&](auto acc_tag) {
    using A = decltype(acc_tag);
    return dispatch_dtype(v.type, [&](auto tag) {
      using T = decltype(tag);
      return put<A>(static_cast<A>(value_as<T>(v)), v.index);
    });
  });
}

std::string ReduceFold::cannot_fold(const ReducePlan& plan) {
  if (plan.policy().correctly_rounded && plan.out_bytes() <= plan.problem().acc_bytes())
    return "its results are rounded and it leaves no exact state: a fold of pieces would not be "
           "correctly rounded";
  return "";
}

ReduceFold::ReduceFold(const ReduceProblem& p, std::size_t out_bytes, bool exact)
    : p_(p), out_bytes_(out_bytes), exact_(exact) {
  if (!exact_) return;
  if (p.op != Op::kSum || !is_float(p.acc()))
    throw Error(Errc::kUnsupported, "internal: a correctly rounded fold of " + op_name(p.op) +
                                        " of " + dtype_name(p.acc()));
  // The rounded value in 8 bytes, then the limbs and the flags as int64.
  if (out_bytes_ < 24 || out_bytes_ % 8 || out_bytes_ / 8 - 2 > ExactState::kLimbs)
    throw Error(Errc::kUnsupported, "correctly rounded pieces of " + std::to_string(out_bytes_) +
                                        " bytes leave no exact state to fold");
}

void ReduceFold::add(const unsigned char* out, std::uint64_t offset) {
  if (exact_) {
    const std::size_t limbs = out_bytes_ / 8 - 2;
    std::int64_t words[ExactState::kLimbs + 1];
    std::memcpy(words, out + 8, (limbs + 1) * 8);
    exact_add(state_, exact_state_of(words, limbs, static_cast<std::uint64_t>(words[limbs])));
    ++pieces_;
    return;
  }
  Value v = Value::from_bytes(p_.acc(), out);
  if (is_arg_op(p_.op)) {
    std::int64_t idx;
    std::memcpy(&idx, out + 8, 8);
    v.index = idx + static_cast<std::int64_t>(offset);
  }
  add(v);
}

void ReduceFold::add(const Value& v) {
  if (exact_)
    throw Error(Errc::kInternal, "internal: a correctly rounded fold takes states, not values");
  acc_ = pieces_ == 0 ? v : fold_values(p_.op, acc_, v);
  ++pieces_;
}

void ReduceFold::add(const ReduceFold& later, std::uint64_t offset) {
  if (later.exact_ != exact_)
    throw Error(Errc::kInternal, "internal: folding a correctly rounded fold with another kind");
  if (later.pieces_ == 0) return;
  if (exact_) {
    exact_add(state_, later.state_);
    pieces_ += later.pieces_;
    return;
  }
  Value v = later.result();
  if (is_arg_op(p_.op)) v.index += static_cast<std::int64_t>(offset);
  acc_ = pieces_ == 0 ? v : fold_values(p_.op, acc_, v);
  pieces_ += later.pieces_;
}

Value ReduceFold::result() const {
  if (exact_) return exact_round(p_.acc(), state_);  // no pieces: +0
  if (pieces_ > 0) return acc_;
  if (!has_identity(p_.op))
    throw Error(Errc::kInternal, "internal: " + op_name(p_.op) + " of no pieces");
  Value v;
  v.type = p_.acc();
  const int one = p_.op == Op::kProd ? 1 : 0;
  v.i = one;
  v.u = static_cast<std::uint64_t>(one);
  v.f = one;
  return v;
}

Value scan_carry(Op op, DType acc, bool exclusive, const Value& last_out, const Value& last_in) {
  if (!exclusive) return last_out;
  return fold_values(op, last_out, convert_value(last_in, acc));
}

}  // namespace clreduce

namespace clreduce {

ScanCarry fold_carry(Op op, const ScanCarry& earlier, const ScanCarry& later) {
  if (later.empty) return earlier;
  if (earlier.empty || later.reset) return later;
  ScanCarry r;
  r.value = fold_values(op, earlier.value, later.value);
  r.reset = earlier.reset;
  r.empty = false;
  return r;
}

std::vector<ScanCarry> exclusive_carries(Op op, const std::vector<ScanCarry>& pieces) {
  std::vector<ScanCarry> into(pieces.size());
  ScanCarry run;  // empty
  for (std::size_t s = 0; s < pieces.size(); ++s) {
    into[s] = run;
    run = fold_carry(op, run, pieces[s]);
  }
  return into;
}

std::size_t first_flag(const std::uint8_t* flags, std::size_t n) {
  if (!flags) return n;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, flags + i, 8);
    if (w) break;
  }
  for (; i < n; ++i)
    if (flags[i]) return i;
  return n;
}

void apply_carry_host(Op op, DType acc, unsigned char* out, std::size_t n,
                      const std::uint8_t* flags, const Value& carry) {
  if (carry.type != acc)
    throw Error(Errc::kInternal,
                "internal: a carry of " + dtype_name(carry.type) + " into " + dtype_name(acc));
  const std::size_t stop = first_flag(flags, n);
  dispatch_dtype(acc, [&](auto tag) {
    using A = decltype(tag);
    const A c = value_as<A>(carry);
    A* y = reinterpret_cast<A*>(out);
    constexpr std::size_t kPiece = std::size_t{1} << 16;
    const std::size_t pieces = (stop + kPiece - 1) / kPiece;
    parallel_for(pieces, stop > (std::size_t{1} << 20), [&](std::size_t k) {
      for (std::size_t i = k * kPiece, end = std::min(stop, i + kPiece); i < end; ++i)
        y[i] = scan_op<A>(op, c, y[i]);
    });
  });
}

}  // namespace clreduce

// expr_ops.cpp: the built-in ops as rows of the user-reduction engine (expr_ops.hpp), and the
// host's references: exact sums (host/verify/exact_sum.cpp) for dot and mean, long double for
// the rest, integers exactly.
#include "reduce/expr_ops.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include "clreduce/error.hpp"
#include "core/parallel.hpp"
#include "verify/exact_sum.hpp"

namespace clreduce {
namespace {

// gamma_k = k u / (1 - k u), infinite when k u >= 1.
double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

double roundoff_of(DType t) {
  return t == DType::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

// A number as an OpenCL C literal of A (hexadecimal, exact; float: rounded to float first).
std::string literal(double v, DType w) {
  char buf[64];
  if (w == DType::kFloat)
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  else
    std::snprintf(buf, sizeof buf, "%a", v);
  return "(A)(" + std::string(buf) + ")";
}

// Element i of a as the working type w sees it ((A)x in the kernel), in double.
double as_working(const HostArray& a, std::size_t i, DType w) {
  if (a.type == DType::kFloat16) return element_value(a, i);  // exact in float and double
  return dispatch_dtype(a.type, [&](auto zero) {
    const auto x = a.as<decltype(zero)>()[i];
    return w == DType::kFloat ? static_cast<double>(static_cast<float>(x)) : static_cast<double>(x);
  });
}

bool nonzero(const HostArray& a, std::size_t i) {
  if (a.type == DType::kFloat16) return element_value(a, i) != 0;
  return dispatch_dtype(a.type, [&](auto zero) { return a.as<decltype(zero)>()[i] != 0; });
}

// Element i of an integer array as the 64-bit two's complement bits (sign-extended).
std::uint64_t int_bits(const HostArray& a, std::size_t i) {
  if (a.type == DType::kBool) return a.as<std::uint8_t>()[i] != 0;
  return dispatch_dtype(a.type, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>)
      return static_cast<std::uint64_t>(static_cast<std::int64_t>(a.as<T>()[i]));
    else
      return std::uint64_t{0};
  });
}

bool is_min_like(const std::string& op) { return op == "min" || op == "argmin"; }

Value make_float(DType t, long double v) {
  Value r;
  r.type = t;
  r.f = t == DType::kFloat ? static_cast<double>(static_cast<float>(v)) : static_cast<double>(v);
  return r;
}

Value make_int(DType t, std::uint64_t bits) {
  Value r;
  r.type = t;
  r.u = bits;
  r.i = static_cast<std::int64_t>(bits);
  if (t == DType::kInt32) r.i = static_cast<std::int32_t>(bits);
  if (t == DType::kUInt32) r.u = static_cast<std::uint32_t>(bits);
  return r;
}

bool any_float(const std::vector<DType>& inputs) {
  return std::any_of(inputs.begin(), inputs.end(), [](DType t) { return is_float(t); });
}

// Whether dot, mean and norm2 take the plain sum in double: the working type is double and every
// input a float or float16, whose values, products of two and squares double holds exactly
// (24-bit significands: 48-bit products) and whose squares neither overflow nor fall below
// double's normal range (float's 2^-149 squared is 2^-298). A pairwise sum of exact terms in
// double is then within gamma_d (2^-53 d) of sum |terms|, far below the float result's
// rounding, with no compensation or scaling to pay for per element.
bool plain_double(DType w, const std::vector<DType>& inputs) {
  return w == DType::kDouble &&
         std::all_of(inputs.begin(), inputs.end(),
                     [](DType t) { return t == DType::kFloat || t == DType::kFloat16; });
}

// Whether the row may fold in the CPU shape's lanes (cl/clr_expr.h's EXPR_LANES): float and
// float16 arrays (read as 16 floats at a time), no predicate.
bool lanes_ok(const ExprSpec& s, const ExprOpOptions& o) {
  return o.where.empty() &&
         std::all_of(s.inputs.begin(), s.inputs.end(),
                     [](DType t) { return t == DType::kFloat || t == DType::kFloat16; });
}

// The exact sum of terms: each selected element's one or two (term(i, t) writes them to t and
// returns how many), in blocks of 2^16 elements on the host's cores, each block's exact state
// (exact_sum.hpp) added exactly (exact_add), so the same state as one pass over every term
// whatever the blocks; finite: whether every term was.
struct ExactTerms {
  ExactState state;
  bool finite = true;
};
template <class Selected, class Term>
ExactTerms exact_terms(std::size_t n, const Selected& selected, const Term& term) {
  constexpr std::size_t kBlock = std::size_t{1} << 16;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<ExactState> part(blocks);
  std::vector<unsigned char> finite(blocks, 1);
  parallel_for(blocks, blocks > 1, [&](std::size_t b) {
    const std::size_t first = b * kBlock, end = std::min(n, first + kBlock);
    std::vector<double> terms;
    terms.reserve(2 * (end - first));
    double t[2];
    for (std::size_t i = first; i < end; ++i) {
      if (!selected(i)) continue;
      for (int k = 0, count = term(i, t); k < count; ++k) {
        finite[b] = finite[b] && std::isfinite(t[k]);
        terms.push_back(t[k]);
      }
    }
    part[b] = exact_state(terms.data(), terms.size());
  });
  ExactTerms r;
  for (std::size_t b = 0; b < blocks; ++b) {
    exact_add(r.state, part[b]);
    r.finite = r.finite && finite[b];
  }
  return r;
}

// The naive sum and the magnitude of the selected elements' terms (a, or a b for dot with y), in
// long double and index order: the bound's scale as one pass gives it. Float and double arrays
// read through typed pointers (their types dispatched once, not per element); others through
// as_working. The same sums either way.
template <class Selected>
void naive_pass(const HostArray& x, const HostArray* y, DType w, std::size_t n,
                const Selected& selected, long double& naive, long double& magnitude) {
  const auto typed = [](DType t) { return t == DType::kFloat || t == DType::kDouble; };
  const auto pass = [&](const auto& at_x, const auto& at_y) {
    long double s = 0, m = 0;  // in registers, not through the references
    for (std::size_t i = 0; i < n; ++i) {
      if (!selected(i)) continue;
      const double a = at_x(i);
      if (!y) {
        s += a;
        m += std::fabs(a);
        continue;
      }
      const double b = at_y(i);
      s += static_cast<long double>(a) * b;
      m += std::fabs(static_cast<long double>(a) * b);
    }
    naive = s;
    magnitude = m;
  };
  const bool single = w == DType::kFloat;
  const auto reader = [single](const HostArray& h, auto zero) {
    const auto* p = h.as<decltype(zero)>();
    return [p, single](std::size_t i) {
      return single ? static_cast<double>(static_cast<float>(p[i])) : static_cast<double>(p[i]);
    };
  };
  if (typed(x.type) && (!y || typed(y->type))) {
    dispatch_dtype(x.type, [&](auto zx) {
      if constexpr (std::is_floating_point_v<decltype(zx)>) {
        if (!y) return pass(reader(x, zx), reader(x, zx));
        dispatch_dtype(y->type, [&](auto zy) {
          if constexpr (std::is_floating_point_v<decltype(zy)>) pass(reader(x, zx), reader(*y, zy));
        });
      }
    });
    return;
  }
  pass([&](std::size_t i) { return as_working(x, i, w); },
       [&](std::size_t i) { return as_working(*y, i, w); });
}

// first() and then(): at once for n from 2^20 elements (a pass in index order on one thread
// beside blocks on the host's cores: then() spreads itself), else one after the other (a
// segment's row: no threads started for it).
void beside(std::size_t n, const std::function<void()>& first, const std::function<void()>& then) {
  parallel_for(2, n >= (std::size_t{1} << 20), [&](std::size_t k) { k == 0 ? first() : then(); });
}

}  // namespace

void set_row_tuning(ExprOpOptions& o, const Tuning& t) {
  o.folds = t.expr_fold != "off";
  o.var_sums = t.var_sums != "off";
  o.lse_expf = t.lse_exp != "double";
  o.count_from_n = t.row_count != "acc";
}

double var_second_shift(const ExprSpec& spec, const std::vector<unsigned char>& acc,
                        std::uint64_t n, std::uint64_t depth) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  if (!spec.var_sums || acc.size() < 2 * sizeof(double)) return none;
  double v[4] = {0, 0, static_cast<double>(n), 0};
  std::memcpy(v, acc.data(), std::min(acc.size(), sizeof v));
  const double s1 = v[0], s2 = v[1], count = spec.width == 4 ? v[2] : static_cast<double>(n);
  if (!std::isfinite(s1) || !std::isfinite(s2) || !(count > 0)) return none;
  const double m2 = s2 - s1 * s1 / count;
  const double d = static_cast<double>(depth);
  if (gamma_k(3 * d + 10, std::ldexp(1.0, -53)) * s2 <= std::ldexp(1.0, -24) * m2) return none;
  return spec.shift + s1 / count;
}

double element_value(const HostArray& a, std::size_t k) {
  if (a.type == DType::kFloat16) {
    std::uint16_t h;
    std::memcpy(&h, a.bytes.data() + 2 * k, 2);
    return half_to_double(h);
  }
  return dispatch_dtype(a.type,
                        [&](auto zero) { return static_cast<double>(a.as<decltype(zero)>()[k]); });
}

const std::vector<std::string>& expr_op_names() {
  static const std::vector<std::string> names = {"dot",   "norm2", "mean", "var",       "std",
                                                 "count", "any",   "all",  "logsumexp", "minmax"};
  return names;
}

bool is_builtin_row(const std::string& op) {
  return op == "sum" || op == "prod" || op == "min" || op == "max" || op == "argmin" ||
         op == "argmax";
}

bool expr_op_needs_elements(const std::string& op) {
  return op == "min" || op == "max" || op == "argmin" || op == "argmax" || op == "minmax";
}

DType expr_op_result_type(const std::string& op, DType element, DType acc) {
  return expr_op_needs_elements(op) ? element : acc;
}

bool is_expr_op(const std::string& op) {
  const auto& v = expr_op_names();
  return std::find(v.begin(), v.end(), op) != v.end();
}

std::size_t expr_op_arrays(const std::string& op) { return op == "dot" ? 2 : 1; }

ExprSpec expr_op_spec(const std::string& op, const std::vector<DType>& inputs,
                      const ExprOpOptions& o) {
  if (inputs.size() < expr_op_arrays(op))
    throw Error(Errc::kUsage, "--op " + op + " takes " + std::to_string(expr_op_arrays(op)) +
                                  " arrays, not " + std::to_string(inputs.size()));
  ExprSpec s;
  s.inputs = inputs;
  s.where = o.where;
  const DType w = o.fp64 ? DType::kDouble : DType::kFloat;  // the float ops' working type
  const auto floats = [&](unsigned width, const std::string& map, const std::string& reduce,
                          const std::string& identity, const std::string& post) {
    s.acc = w;
    s.width = width;
    s.block = 16;
    s.blocks_optional = plain_double(w, inputs);
    s.map = map;
    s.reduce = reduce;
    s.identity = identity;
    s.post = post;
  };
  const DType t = inputs.front();
  // mean, var and std without a predicate: the count is post's n.
  const bool count_from_n = o.count_from_n && o.where.empty();
  // The element as the kernel's value: bool as 0 or 1 (a nonzero byte is true).
  const std::string x = t == DType::kBool ? "(A)(x != 0)" : "(A)x";
  if (is_builtin_row(op) || op == "minmax") {
    const bool lo = is_min_like(op);
    if (op == "sum" || op == "prod") {
      // NumPy's accumulator (acc_dtype), or --acc: the element type where the engine has it, or
      // double for float16 and float.
      const DType def =
          is_float(t) && t != DType::kDouble ? DType::kFloat : acc_dtype(parse_op(op), t);
      s.acc = def;
      if (!o.acc.empty()) {
        const DType want = parse_dtype(o.acc);
        const bool ok = want == def || (want == t && is_variant_dtype(t)) ||
                        (want == DType::kDouble && is_float(t));
        if (!ok)
          throw Error(Errc::kUsage, "--acc " + o.acc + " is not available for --op " + op + " of " +
                                        dtype_name(t) + " (use " + dtype_name(def) +
                                        (is_float(t) && t != DType::kDouble ? " or double" : "") +
                                        ")");
        s.acc = want;
      }
      if (is_float(s.acc) && op == "sum") {
        // A compensated sum (Sum2), pairwise within a work-item, as mean's.
        s.width = 2;
        s.block = 16;
        s.map = "(acc_t)(" + x + ", 0)";
        s.reduce = "clr_csum(a, b)";
        s.identity = "0";
        s.post = "clr_csum_value(a)";
      } else if (is_float(s.acc)) {
        s.block = 16;
        s.map = x;
        s.reduce = "a * b";
        s.identity = "1";
      } else {
        s.map = x;
        s.reduce = op == "sum" ? "(acc_t)((U)a + (U)b)" : "(acc_t)((U)a * (U)b)";
        s.identity = op == "sum" ? "0" : "1";
      }
      return s;
    }
    if (!o.acc.empty())
      throw Error(Errc::kUsage,
                  "--acc applies to sum and prod only (" + op + " keeps the element type)");
    // min, max, argmin, argmax, minmax: the element's value exactly, in float (float16, float),
    // double, int64 (signed) or uint64 (unsigned, bool).
    s.acc = t == DType::kDouble ? DType::kDouble
            : is_float(t)       ? DType::kFloat
            : is_signed(t)      ? DType::kInt64
                                : DType::kUInt64;
    if (op == "min" || op == "max") {
      const std::string cmp = lo ? "a < b" : "a > b";
      s.map = x;
      s.reduce = is_float(s.acc) ? "(isnan(a) || " + cmp + ") ? a : b" : "(" + cmp + ") ? a : b";
      s.identity = is_float(s.acc)          ? (lo ? "INFINITY" : "-INFINITY")
                   : s.acc == DType::kInt64 ? (lo ? "LONG_MAX" : "LONG_MIN")
                                            : (lo ? "ULONG_MAX" : "0");
    } else if (op == "minmax") {
      s.arg = 2;
      s.map = "clr_minmax_map(" + x + ", i)";
      s.reduce = "clr_minmax_op(a, b)";
      s.identity = "clr_minmax_identity()";
      if (o.folds) s.fold = "clr_minmax_fold(a, b)";
      if (lanes_ok(s, o)) s.lanes = 5;
    } else {
      s.arg = 1;
      s.map = "clr_arg_map(" + x + ", i)";
      s.reduce = std::string("clr_arg_op(a, b, ") + (lo ? "1" : "0") + ")";
      s.identity = std::string("clr_arg_identity(") + (lo ? "1" : "0") + ")";
    }
    return s;
  }
  if (!o.acc.empty())
    throw Error(Errc::kUsage, "--acc does not apply to --op " + op +
                                  ": its accumulator is the op's own (docs: the ops' table)");
  if (op == "count" || op == "any" || op == "all") {
    s.acc = DType::kInt64;
    s.map = op == "count" ? "1" : "x != 0";
    s.reduce = op == "all" ? "a & b" : op == "any" ? "a | b" : "(acc_t)((U)a + (U)b)";
    s.identity = op == "all" ? "1" : "0";
  } else if (op == "dot" && !any_float(inputs)) {
    // Integers: products and sums wrap modulo 2^64 (computed unsigned).
    s.acc = default_expr_acc(inputs);
    s.map = "(acc_t)((U)x * (U)y)";
    s.reduce = "(acc_t)((U)a + (U)b)";
    s.identity = "0";
  } else if (op == "dot" && plain_double(w, s.inputs)) {
    floats(1, "(A)x * (A)y", "a + b", "0", "");
    if (lanes_ok(s, o)) s.lanes = 2;
  } else if (op == "dot") {
    floats(2, "clr_two_prod((A)x, (A)y)", "clr_csum(a, b)", "0", "clr_csum_value(a)");
  } else if (op == "mean" && plain_double(w, s.inputs) && count_from_n) {
    // The count is n (post's): the sum alone.
    floats(1, "(A)x", "a + b", "0", "a / (A)n");
    if (lanes_ok(s, o)) s.lanes = 1;
  } else if (op == "mean" && plain_double(w, s.inputs)) {
    floats(2, "(acc_t)((A)x, 1)", "a + b", "0", "a.x / a.y");
  } else if (op == "mean") {
    floats(4, "(acc_t)((A)x, 0, 1, 0)", "clr_mean_op(a, b)", "0", "clr_csum_value(a.xy) / a.z");
  } else if (op == "var" || op == "std") {
    // The shift is the kernels' argument clr_shift (a value of A, rounded as a literal of A
    // would be), not text: one program for every data set.
    s.shift = std::isfinite(o.shift) ? o.shift : 0.0;
    const std::string ddof = literal(o.ddof, w);
    const auto root = [&](const std::string& var) {
      return op == "std" ? "sqrt(" + var + ")" : var;
    };
    if (o.second_pass && o.var_sums && plain_double(w, s.inputs)) {
      // The shifted sums (clr_shifted_var), a second pass where their condition needs it.
      s.var_sums = true;
      if (count_from_n) {
        floats(2, "clr_shifted2((A)x - clr_shift)", "a + b", "0",
               root("clr_shifted_var(a.x, a.y, (A)n, " + ddof + ")"));
        if (lanes_ok(s, o)) s.lanes = 4;
      } else {
        floats(4, "clr_shifted4((A)x - clr_shift)", "a + b", "0",
               root("clr_shifted_var(a.x, a.y, a.z, " + ddof + ")"));
      }
    } else {
      floats(4, "clr_var_map((A)x - clr_shift)", "clr_var_op(a, b)", "0",
             root("a.z / fmax(a.x - " + ddof + ", (A)0)"));
    }
  } else if (op == "norm2" && plain_double(w, s.inputs)) {
    floats(1, "clr_sq((A)x)", "a + b", "0", "sqrt(a)");
    if (lanes_ok(s, o)) s.lanes = 3;
  } else if (op == "norm2") {
    floats(2, "clr_nrm_map((A)x)", "clr_nrm_op(a, b)", "0", "a.x * sqrt(a.y)");
  } else if (op == "logsumexp") {
    floats(2, "(acc_t)((A)x, 1)", "clr_lse_op(a, b)", "(acc_t)(-INFINITY, 0)", "a.x + log(a.y)");
    if (o.folds) s.fold = "clr_lse_fold(a, b)";
    // Float and float16 arrays in double: the fold's term of each element by a float exp
    // (cl/clr_expr.h, CLR_LSE_EXPF; the bound adds its error), every rescale in double.
    s.lse_expf = o.folds && o.lse_expf && plain_double(w, s.inputs);
    if (w == DType::kDouble && lanes_ok(s, o)) s.lanes = 6;
  } else {
    throw Error(Errc::kUsage, "--op " + op + " is not a row of the reduction engine");
  }
  return s;
}

ExprOpReference expr_op_reference(const std::string& op, const std::vector<HostArray>& arrays,
                                  const std::vector<unsigned char>& mask, double ddof,
                                  DType result_type, std::uint64_t depth, const ExprSpec* row) {
  const HostArray& x = arrays.front();
  const std::size_t n = x.n;
  const auto selected = [&](std::size_t i) { return mask.empty() || mask[i] != 0; };
  ExprOpReference r;
  r.count = n;
  if (!mask.empty())
    r.count = static_cast<std::uint64_t>(
        std::count_if(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(n),
                      [](unsigned char c) { return c != 0; }));
  const DType w = result_type;
  const double u = roundoff_of(w);
  const double d = static_cast<double>(depth);
  const auto nan = std::numeric_limits<long double>::quiet_NaN();
  const auto inf = std::numeric_limits<long double>::infinity();

  if (op == "sum" || op == "prod") {
    const long double largest =
        w == DType::kFloat ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
    if (!is_float(result_type)) {
      // Wrapping 64-bit arithmetic, as the kernel's (U) operations (32-bit accumulators: the
      // low bits, which make_int keeps).
      std::uint64_t v = op == "sum" ? 0 : 1;
      for (std::size_t i = 0; i < n; ++i)
        if (selected(i)) v = op == "sum" ? v + int_bits(x, i) : v * int_bits(x, i);
      r.value = make_int(result_type, v);
      r.exact = true;
      return r;
    }
    if (op == "sum") {
      // The elements' exact sum on the host's cores (exact_terms), beside the naive sum (where an
      // element is not finite) and the magnitude in long double, in index order.
      long double naive = 0, magnitude = 0;
      ExactTerms t;
      beside(
          n, [&] { naive_pass(x, nullptr, w, n, selected, naive, magnitude); },
          [&] {
            t = exact_terms(n, selected, [&](std::size_t i, double* v) {
              v[0] = as_working(x, i, w);
              return 1;
            });
          });
      const long double sum = t.finite ? exact_round(DType::kDouble, t.state).f : naive;
      r.value = make_float(w, sum);
      // The compensated sum's bound, as dot's: u |S| twice, and gamma_{d+1}^2 sum |x| twice.
      const double g = gamma_k(d + 1, u);
      r.bound =
          2 * u * std::fabs(static_cast<double>(sum)) + 2 * g * g * static_cast<double>(magnitude);
      r.may_overflow = magnitude > largest;
      return r;
    }
    // prod: long double's product; the bound gamma_n |p|, and n subnormal units scaled by what
    // the factors after an underflow can multiply it by (prod max(1, |x|)).
    long double p = 1, grow = 1;
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i)) {
        const long double a = as_working(x, i, w);
        p *= a;
        grow *= std::max<long double>(1, std::fabs(a));
      }
    r.value = make_float(w, p);
    r.may_overflow = grow > largest;
    const double tiny = w == DType::kFloat ? std::numeric_limits<float>::denorm_min()
                                           : std::numeric_limits<double>::denorm_min();
    r.bound = gamma_k(static_cast<double>(r.count), u) * std::fabs(static_cast<double>(p)) +
              static_cast<double>(static_cast<long double>(r.count) * tiny * grow);
    return r;
  }
  if (expr_op_needs_elements(op)) {
    // The first NaN wins; else the least (greatest) value, the first index on a tie.
    const bool fl = is_float(x.type);
    std::int64_t best[2] = {-1, -1};  // [0]: the least, [1]: the greatest
    const auto better = [&](std::size_t i, std::size_t j, bool least) {
      if (fl) {
        const double a = element_value(x, i), b = element_value(x, j);
        if (std::isnan(b)) return false;
        if (std::isnan(a)) return true;
        return least ? a < b : a > b;
      }
      const std::uint64_t a = int_bits(x, i), b = int_bits(x, j);
      if (is_signed(x.type))
        return least ? static_cast<std::int64_t>(a) < static_cast<std::int64_t>(b)
                     : static_cast<std::int64_t>(a) > static_cast<std::int64_t>(b);
      return least ? a < b : a > b;
    };
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i))
        for (int k = 0; k < 2; ++k)
          if (best[k] < 0 || better(i, static_cast<std::size_t>(best[k]), k == 0))
            best[k] = static_cast<std::int64_t>(i);
    const auto value_at = [&](std::int64_t i) {
      Value v;
      v.type = result_type;
      if (i < 0) return v;
      const auto k = static_cast<std::size_t>(i);
      if (fl)
        v.f = element_value(x, k);
      else
        v = make_int(result_type, int_bits(x, k));
      v.type = result_type;
      v.index = i;
      return v;
    };
    const bool least = is_min_like(op) || op == "minmax";
    r.value = value_at(best[least ? 0 : 1]);
    if (op == "minmax") r.value2 = value_at(best[1]);
    if (op == "min" || op == "max") r.value.index = -1;
    r.exact = true;
    return r;
  }
  if (op == "count" || op == "any" || op == "all") {
    std::uint64_t v = op == "count" ? r.count : op == "all" ? 1 : 0;
    for (std::size_t i = 0; i < n && op != "count"; ++i)
      if (selected(i)) {
        if (op == "any" && nonzero(x, i)) v = 1;
        if (op == "all" && !nonzero(x, i)) v = 0;
      }
    r.value = make_int(DType::kInt64, v);
    r.exact = true;
    return r;
  }
  if (op == "dot" && !is_float(result_type)) {
    std::uint64_t v = 0;
    const HostArray& y = arrays[1];
    const auto bits = [](const HostArray& a, std::size_t i) {
      return dispatch_dtype(
          a.type, [&](auto zero) { return static_cast<std::uint64_t>(a.as<decltype(zero)>()[i]); });
    };
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i)) v += bits(x, i) * bits(y, i);
    r.value = make_int(result_type, v);
    r.exact = true;
    return r;
  }
  if (op == "dot" || op == "mean") {
    // Dot: each product as its exact pair (p, e), p + e = x y; the pairs' exact sum, on the
    // host's cores (exact_terms), beside the naive sum (where a term is not finite) and the
    // magnitude in long double, in index order.
    const HostArray* y = op == "dot" ? &arrays[1] : nullptr;
    long double naive = 0, magnitude = 0;
    ExactTerms t;
    beside(
        n, [&] { naive_pass(x, y, w, n, selected, naive, magnitude); },
        [&] {
          t = exact_terms(n, selected, [&](std::size_t i, double* v) {
            const double a = as_working(x, i, w);
            if (!y) {
              v[0] = a;
              return 1;
            }
            const double b = as_working(*y, i, w);
            const double p = a * b;
            v[0] = p;
            v[1] = std::isfinite(p) ? std::fma(a, b, -p) : 0.0;
            return 2;
          });
        });
    long double sum = t.finite ? exact_round(DType::kDouble, t.state).f : naive;
    if (op == "mean") sum = r.count ? sum / static_cast<long double>(r.count) : nan;
    if (op == "mean" && r.count) magnitude /= static_cast<long double>(r.count);
    r.value = make_float(w, sum);
    // The compensated sum: u |S| from its last rounding (and the reference's, the mean's
    // division), plus its error terms' own sum, gamma_{d+1}^2 times sum |terms| (2 per element).
    // The plain sum of exact terms (plain_double): gamma_{d+1} times sum |terms| instead.
    const double g = gamma_k(d + 1, u);
    std::vector<DType> types = {x.type};
    if (op == "dot") types.push_back(arrays[1].type);
    const bool plain = plain_double(w, types);
    r.bound = (op == "mean" ? 3 : 2) * u * std::fabs(static_cast<double>(sum)) +
              (plain ? g : 2 * g * g) * static_cast<double>(magnitude);
    return r;
  }
  if (op == "var" || op == "std") {
    long double s = 0;
    bool any_nan = false;
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i)) s += as_working(x, i, w);
    const long double mean = r.count ? s / r.count : nan;
    long double m2 = 0, shifted = 0;
    const double first = n ? as_working(x, 0, w) : 0.0;
    // The shift: the first element (0 if it is not finite), or the shifted sums' own (the
    // second pass's mean).
    const bool sums = row && row->var_sums;
    const long double k = sums ? row->shift : std::isfinite(first) ? first : 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i)) {
        const long double v = as_working(x, i, w);
        any_nan = any_nan || !std::isfinite(static_cast<double>(v));
        m2 += (v - mean) * (v - mean);
        shifted += (v - k) * (v - k);
      }
    const long double div = std::max<long double>(static_cast<long double>(r.count) - ddof, 0);
    long double var = any_nan || r.count == 0 ? nan : m2 / div;
    // Chan's pairwise combination of shifted values: gamma_{8d+8} times their sum of squares
    // over the divisor. The shifted sums: gamma_{3d+10} (S2 within gamma_{d+3} S2: a shift, a
    // square, d additions; S1^2 / count within (2 + gamma) gamma_{d+1} S2 and two roundings, as
    // |S1| sum |x - k| <= count S2; the subtraction and the division).
    double bound = gamma_k(sums ? 3 * d + 10 : 8 * d + 8, u) * static_cast<double>(shifted / div);
    if (op == "std") {
      const double sd = std::sqrt(static_cast<double>(var));
      bound = (sd > 0 ? std::min(std::sqrt(bound), bound / sd) : std::sqrt(bound)) + 2 * u * sd;
      var = std::sqrt(var);
    }
    r.value = make_float(w, var);
    r.bound = bound;
    return r;
  }
  if (op == "norm2") {
    // The sum of squares exactly, not in a running long double sum: that one rounds each of n
    // additions (gamma_n relative, linear in n where the squares' dropped low bits lean one way,
    // as uniform floats' do: 6.5e-14 relative at 2^26, past the kernel's bound), so correct
    // results failed. Each element scaled by 2^-e (e: the largest |x|'s exponent, so no square
    // overflows, and a float's square stays exact) and squared as an exact pair (x^2 rounded,
    // its error by fma), the pairs summed exactly (exact_sum.hpp) in blocks; the sum taken as
    // two doubles (its rounding and the rounding of the rest), its root in long double.
    // The largest |x| and the specials, in blocks on the host's cores (a maximum and an or:
    // the same in any order).
    long double largest = 0;
    bool any_nan = false, any_inf = false;
    {
      constexpr std::size_t kBlock = std::size_t{1} << 16;
      const std::size_t blocks = (n + kBlock - 1) / kBlock;
      std::vector<double> big(blocks, 0.0);
      std::vector<unsigned char> nans(blocks, 0), infs(blocks, 0);
      parallel_for(blocks, blocks > 1, [&](std::size_t b) {
        for (std::size_t i = b * kBlock, end = std::min(n, i + kBlock); i < end; ++i)
          if (selected(i)) {
            const double a = std::fabs(as_working(x, i, w));
            nans[b] = nans[b] || std::isnan(a);
            infs[b] = infs[b] || std::isinf(a);
            if (std::isfinite(a)) big[b] = std::max(big[b], a);
          }
      });
      for (std::size_t b = 0; b < blocks; ++b) {
        largest = std::max<long double>(largest, big[b]);
        any_nan = any_nan || nans[b];
        any_inf = any_inf || infs[b];
      }
    }
    long double norm = 0;
    if (any_nan) {
      norm = nan;
    } else if (any_inf) {
      norm = inf;
    } else if (largest > 0) {
      const int e = std::ilogb(static_cast<double>(largest));
      // The pairs' exact sum on the host's cores (exact_terms).
      ExactState ss = exact_terms(n, selected, [&](std::size_t i, double* v) {
                        const double a = std::ldexp(as_working(x, i, w), -e);  // |a| < 2
                        const double p = a * a;
                        v[0] = p;
                        v[1] = std::fma(a, a, -p);
                        return 2;
                      }).state;
      const double hi = exact_round(DType::kDouble, ss).f;
      const double neg = -hi;
      exact_add(ss, exact_state(&neg, 1));
      const double lo = exact_round(DType::kDouble, ss).f;
      norm = std::ldexp(std::sqrt(static_cast<long double>(hi) + lo), e);
    }
    r.value = make_float(w, norm);
    // The kernel: scales are elements, exact. A combine of (a.x, a.y) and (b.x, b.y), a.x >=
    // b.x, computes a.y + b.y (r r), r = b.x / a.x: a's ssq takes the sum's rounding, b's also
    // r's (twice), r r's and the product's, (1 + u)^5 in double, where division is correctly
    // rounded; float's division may be 2.5 ulp (5u), (1 + u)^13. An element's share passes d
    // combines: the ssq is within gamma_{kd} relative (k = 5 or 13; sums of positive terms).
    // The root turns gamma into gamma / (1 + sqrt(1 - gamma)) (about half), then its own
    // rounding (double u, float 3 ulp: 6u) and the scale's product (u). Where subnormals flush
    // (float), each combine's r r may lose the smallest normal eta, times b.y <= count, against
    // a final ssq >= 1 (the largest element's own 1): count^2 eta relative (which also covers
    // the reference's squares below double's normal range). The reference itself is the norm
    // within u (its rounding to the working type) and 2^-62 (long double's part).
    const bool single = w == DType::kFloat;
    if (plain_double(w, {x.type})) {
      // The plain sum of exact squares in double (plain_double): within gamma_{d+1} of the
      // sum of squares (positive terms), the root about halving it, then the root's rounding
      // and the reference's (u each) and long double's part.
      const double g = gamma_k(d + 1, u);
      const double root = g < 1 ? g / (1 + std::sqrt(1 - g)) : g;
      r.bound = ((1 + root) * (1 + u) * (1 + u) - 1 + std::ldexp(1.0, -62)) *
                std::fabs(static_cast<double>(norm));
      return r;
    }
    const double g = gamma_k((single ? 13 : 5) * d, u);
    const double root = g < 1 ? g / (1 + std::sqrt(1 - g)) : g;
    const double rel = (1 + root) * (1 + (single ? 6 : 1) * u) * (1 + u) - 1;
    const double eta =
        single ? std::numeric_limits<float>::min() : std::numeric_limits<double>::min();
    const double count = static_cast<double>(r.count);
    r.bound = (rel + u + std::ldexp(1.0, -62) + count * count * eta) *
              std::fabs(static_cast<double>(norm));
    return r;
  }
  if (op == "logsumexp") {
    long double m = -inf;
    bool any_nan = false;
    for (std::size_t i = 0; i < n; ++i)
      if (selected(i)) {
        const long double v = as_working(x, i, w);
        any_nan = any_nan || std::isnan(static_cast<double>(v));
        m = std::max(m, v);
      }
    long double l;
    if (any_nan) {
      l = nan;
    } else if (std::isinf(static_cast<double>(m))) {
      l = m;
    } else {
      long double s = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (selected(i)) s += std::exp(static_cast<long double>(as_working(x, i, w)) - m);
      l = m + std::log(s);
    }
    r.value = make_float(w, l);
    // Rescalings by exp (3 ulp) of rounded differences, products and sums: gamma_{6d+8}
    // relative in the sum; absolutely that, plus the log's and the final sum's roundings.
    const double lc = std::log(static_cast<double>(r.count) + 1);
    r.bound = gamma_k(6 * d + 8, u) * (std::fabs(static_cast<double>(l)) + lc + 1);
    if (row && row->lse_expf) {
      // The fold's float exp (cl/clr_expr.h, CLR_LSE_EXPF): an element's term t = e^d, d = x - m
      // (m its accumulator's reference element, d <= T = kLseExpfMargin), is expf of d rounded
      // to float: relative error |d| 2^-24 from the rounding (e^(d(1 + r)) = e^d e^(d r)) and
      // 3 ulp (3 * 2^-23) from expf, in double afterwards. The reference element's own term is
      // 1, so s >= 1, and with weights t / s, sum t |d| <= s (ln(count + 1) + T): the entropy of
      // the weights for the negative d (at most ln(count + 1), also for 1 or 2 terms), T for the
      // positive ones. Rescaled terms keep their relative error, and a move of m starts a new
      // reference whose part of s obeys the same bound, so the whole s is within
      // 2^-24 (ln(count + 1) + T) + 3 * 2^-23 relative, and L = m + ln s within that absolutely
      // (times 1.01 for second order). The GPU shape's vector loads (CLR_LSE_VFOLD) sum four
      // terms in float before adding them to s: two roundings of positive terms, 2^-23 of their
      // sum at most, so of s. A term below float's normal range may flush: count times float's
      // smallest normal against s >= 1.
      const double t = kLseExpfMargin;
      r.bound += 1.01 * (std::ldexp(lc + t, -24) + 4 * std::ldexp(1.0, -23)) +
                 static_cast<double>(r.count) * std::numeric_limits<float>::min();
    }
    return r;
  }
  throw Error(Errc::kUsage, "--op " + op + " has no reference");
}

}  // namespace clreduce

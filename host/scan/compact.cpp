// compact.cpp: stream compaction (compact.hpp): the predicate's generated tail, exact for every
// element type, and the three launches over the scan.
#include "scan/compact.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "reduce/expr.hpp"
#include "reduce/variant.hpp"

namespace clreduce {
namespace {

// The values of T nearest v: lo the largest <= v, hi the smallest >= v (has_*: false where T
// has none), exact where v is one of them. v is not NaN.
template <class T> struct Near {
  bool has_lo = false, has_hi = false, exact = false;
  T lo{}, hi{};
};

template <class T> Near<T> nearest(double v) {
  Near<T> r;
  if constexpr (std::is_same_v<T, double>) {
    r.has_lo = r.has_hi = r.exact = true;
    r.lo = r.hi = v;
  } else if constexpr (std::is_same_v<T, float>) {
    constexpr float big = std::numeric_limits<float>::max();
    constexpr float inf = std::numeric_limits<float>::infinity();
    r.has_lo = r.has_hi = true;
    if (std::isinf(v)) {
      r.lo = r.hi = v > 0 ? inf : -inf;
      r.exact = true;
    } else if (v > static_cast<double>(big)) {
      r.lo = big;
      r.hi = inf;
    } else if (v < -static_cast<double>(big)) {
      r.lo = -inf;
      r.hi = -big;
    } else {
      const auto f = static_cast<float>(v);  // in range: the nearest float
      if (static_cast<double>(f) == v) {
        r.lo = r.hi = f;
        r.exact = true;
      } else if (static_cast<double>(f) < v) {
        r.lo = f;
        r.hi = std::nextafter(f, inf);
      } else {
        r.hi = f;
        r.lo = std::nextafter(f, -inf);
      }
    }
  } else {
    // Integers: floor and ceil, within T's range. max + 1 rounds to a power of two, which is
    // exactly where the range ends (2^31, 2^32, 2^63, 2^64).
    const double min_d = static_cast<double>(std::numeric_limits<T>::lowest());
    const double end_d = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    const double fl = std::floor(v), ce = std::ceil(v);
    if (fl >= end_d) {
      r.has_lo = true;
      r.lo = std::numeric_limits<T>::max();
    } else if (fl >= min_d) {
      r.has_lo = true;
      r.lo = static_cast<T>(fl);
    }
    if (ce < min_d) {
      r.has_hi = true;
      r.hi = std::numeric_limits<T>::lowest();
    } else if (ce < end_d) {
      r.has_hi = true;
      r.hi = static_cast<T>(ce);
    }
    r.exact = fl == ce && fl >= min_d && fl < end_d;
  }
  return r;
}

// x as an OpenCL C literal of type T.
template <class T> std::string literal(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    const char* suffix = std::is_same_v<T, float> ? "f" : "";
    if (std::isinf(x))
      return std::string(x > 0 ? "(" : "(-") + (std::is_same_v<T, float> ? "" : "(double)") +
             "INFINITY)";
    char b[64];
    std::snprintf(b, sizeof b, "%a", static_cast<double>(x));
    return std::string("(") + b + suffix + ")";
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return x == std::numeric_limits<T>::lowest() ? std::string("LONG_MIN")
                                                 : "(" + std::to_string(x) + "L)";
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return "(" + std::to_string(x) + "UL)";
  } else if constexpr (std::is_same_v<T, std::int32_t>) {
    return "((int)" + std::to_string(x) + "L)";
  } else {
    return "(" + std::to_string(x) + "u)";
  }
}

template <class T> std::string comparison(CompareOp cmp, double v) {
  if (std::isnan(v)) return cmp == CompareOp::kNotEqual ? "1" : "0";
  const Near<T> r = nearest<T>(v);
  switch (cmp) {
    case CompareOp::kGreater: return r.has_lo ? "x > " + literal(r.lo) : "1";
    case CompareOp::kGreaterEqual: return r.has_hi ? "x >= " + literal(r.hi) : "0";
    case CompareOp::kLess: return r.has_hi ? "x < " + literal(r.hi) : "1";
    case CompareOp::kLessEqual: return r.has_lo ? "x <= " + literal(r.lo) : "0";
    case CompareOp::kEqual: return r.exact ? "x == " + literal(r.lo) : "0";
    case CompareOp::kNotEqual: return r.exact ? "x != " + literal(r.lo) : "1";
  }
  return "0";
}

}  // namespace

std::string compact_where_tail(DType t, const CompactWhere& w) {
  const std::string signature = "int clr_compact_where(T x)";
  if (!w.expr.empty()) {
    check_expression(w.label, w.expr);
    if (inputs_named(w.expr) > 1)
      throw Error(Errc::kUsage, w.label + " '" + w.expr + "' names " +
                                    std::string(1, "xyzw"[inputs_named(w.expr) - 1]) +
                                    ": a compaction has one array, x");
    return expr_function(w.label, signature, w.expr, "(", ") ? 1 : 0");
  }
  std::string body;
  dispatch_dtype(t, [&](auto zero) { body = comparison<decltype(zero)>(w.cmp, w.value); });
  return signature + " {\n  return " + body + ";\n}\n";
}

Compactor::Compactor(Context& ctx, DType type, std::size_t max_n, const CompactWhere& where,
                     bool partition, std::size_t local_size)
    : ctx_(ctx), type_(type), max_n_(max_n), partition_(partition) {
  if (type == DType::kDouble && !ctx.info().fp64)
    throw Error(Errc::kUnsupported, ctx.info().name + " has no double precision (cl_khr_fp64)");
  const std::size_t planned = std::max<std::size_t>(max_n, 1);
  const DType pos = planned <= 0xFFFFFFFFu ? DType::kUInt32 : DType::kUInt64;
  const bool cpu = !ctx.info().is_gpu;
  const std::string options = "-DCLR_TYPE=" + std::to_string(static_cast<int>(type)) +
                              " -DCOMPACT_POS=" + dtype_cl_name(pos) +
                              " -DCOMPACT_PARTITION=" + (partition ? "1" : "0") +
                              " -DCOMPACT_BLOCKED=" + (cpu ? "1" : "0");
  const std::string tail = compact_where_tail(type, where);
  const auto build = [&](const char* name) {
    try {
      return ctx.kernel("compact.cl", name, options, tail);
    } catch (const Error& e) {
      if (e.category() != Errc::kBuild || where.expr.empty()) throw;
      rethrow_expr_build(e, {{where.label, where.expr}});
    }
  };
  flags_k_ = build("compact_flags");
  scatter_k_ = build("compact_scatter");
  // A CPU: one work-item per group, four groups per core, each a contiguous block; a GPU: groups
  // of 256, up to 8 per compute unit, grid-strided.
  const std::size_t cu = std::max<std::size_t>(ctx.info().compute_units, 1);
  wg_ = std::min(choose_wg(ctx, flags_k_, local_size, cpu ? 1 : 256),
                 choose_wg(ctx, scatter_k_, local_size, cpu ? 1 : 256));
  items_ = wg_ * (cpu ? 4 * cu : 8 * cu);
  const std::size_t bytes = checked_bytes(planned, dtype_size(pos), "a compaction's flags");
  flags_ = ctx.zeroed_buffer(bytes);
  sums_ = ctx.zeroed_buffer(bytes);
  ScanProblem p;
  p.op = Op::kSum;
  p.type = pos;
  p.acc_type = pos;
  p.n = planned;
  scan_ = make_named_scan_plan(ctx, p, "", local_size);
}

void Compactor::enqueue(const cl::Buffer& in, std::size_t n, const cl::Buffer& out,
                        const cl::Buffer& count, std::size_t count_offset,
                        std::vector<cl::Event>& events) {
  if (n > max_n_)
    throw Error(Errc::kUsage, "a compaction planned for " + std::to_string(max_n_) +
                                  " elements cannot take " + std::to_string(n) +
                                  ": make one for the largest n");
  cl::CommandQueue& q = ctx_.queue();
  if (n == 0) {
    events.emplace_back();
    q.enqueueFillBuffer(count, cl_uchar{0}, count_offset, 8, nullptr, &events.back());
    return;
  }
  // As many work-items as there are elements, up to the cap, in whole groups.
  const std::size_t items = std::min(items_, round_up(n, wg_));
  flags_k_.setArg(0, in);
  flags_k_.setArg(1, static_cast<cl_ulong>(n));
  flags_k_.setArg(2, flags_);
  events.emplace_back();
  q.enqueueNDRangeKernel(flags_k_, cl::NullRange, cl::NDRange(items), cl::NDRange(wg_), nullptr,
                         &events.back());
  scan_->enqueue(flags_, flags_, sums_, 0, n, nullptr, events);
  scatter_k_.setArg(0, in);
  scatter_k_.setArg(1, static_cast<cl_ulong>(n));
  scatter_k_.setArg(2, sums_);
  scatter_k_.setArg(3, out);
  scatter_k_.setArg(4, count);
  scatter_k_.setArg(5, static_cast<cl_ulong>(count_offset));
  events.emplace_back();
  q.enqueueNDRangeKernel(scatter_k_, cl::NullRange, cl::NDRange(items), cl::NDRange(wg_), nullptr,
                         &events.back());
}

}  // namespace clreduce

// expr_check.cpp: the verification of user reductions, rows and segmented reductions
// (expr_check.hpp).
#include "reduce/expr_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/parallel.hpp"
#include "reduce/expr_ops.hpp"
#include "run/shares.hpp"
#include "verify/reference.hpp"

namespace clreduce {
namespace {

// gamma_k = k u / (1 - k u): the classic bound on k roundings of relative size u; infinite when
// k u >= 1 (no bound).
double gamma_k(double k, double u) {
  const double ku = k * u;
  return ku < 1.0 ? ku / (1.0 - ku) : std::numeric_limits<double>::infinity();
}

double unit_roundoff(DType t) {
  return t == DType::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

std::string distance(double d) { return Value{DType::kDouble, 0, 0, d, -1}.str(); }

bool same_float(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// A float result against its reference: the same (NaN alike), or both finite within bound.
bool within(double got, double ref, double bound) {
  return same_float(got, ref) ||
         (std::isfinite(got) && std::isfinite(ref) && std::fabs(got - ref) <= bound);
}

std::string off_by(double got, double ref, double bound) {
  return "|result - reference| = " + distance(std::fabs(got - ref)) + " exceeds the bound " +
         distance(bound);
}

bool same_int(const Value& a, const Value& b, DType t) {
  return is_signed(t) ? a.i == b.i : a.u == b.u;
}

// The float bound of a user reduction's result against a one-work-item fold: (gamma_depth in
// acc + gamma_len in the reference's type) times the larger of the fold of |map| and |ref|.
double user_bound(DType acc, bool wider, std::uint64_t depth, std::uint64_t len, double magnitude,
                  double ref) {
  return (gamma_k(static_cast<double>(depth), unit_roundoff(acc)) +
          gamma_k(static_cast<double>(len), unit_roundoff(wider ? DType::kDouble : acc))) *
         std::max(std::fabs(magnitude), std::fabs(ref));
}

// What a block of segments' checks leave: the largest bound, the first wrong segment (kNone:
// none) and why, and whether an overflow was accepted.
constexpr std::uint64_t kNone = std::numeric_limits<std::uint64_t>::max();
struct SegmentBlock {
  double bound = 0;
  bool overflow = false;
  std::uint64_t wrong = kNone;
  std::string why;
};

// check(q, block) for every q in [0, m), in blocks of 4096 contiguous segments (each block's in
// order), the blocks on the host's cores when there are several.
std::vector<SegmentBlock> segment_blocks(
    std::uint64_t m, const std::function<void(std::uint64_t, SegmentBlock&)>& check) {
  constexpr std::uint64_t kBlock = 4096;
  std::vector<SegmentBlock> blocks(static_cast<std::size_t>((m + kBlock - 1) / kBlock));
  parallel_for(blocks.size(), blocks.size() > 1, [&](std::size_t k) {
    for (std::uint64_t q = k * kBlock, end = std::min(m, q + kBlock); q < end; ++q)
      check(q, blocks[k]);
  });
  return blocks;
}

// The blocks into v in segment order: the largest bound, the first wrong segment shown.
void gather_blocks(const std::vector<SegmentBlock>& blocks, SegmentVerdict& v) {
  for (const SegmentBlock& b : blocks) {
    v.bound = std::max(v.bound, b.bound);
    v.overflow = v.overflow || b.overflow;
    if (b.wrong != kNone && v.ok) {
      v.ok = false;
      v.shown = b.wrong;
      v.why = "segment " + std::to_string(b.wrong) + ": " + b.why;
    }
  }
}

}  // namespace

ExprVerdict verify_row(const std::string& op, const std::vector<HostArray>& arrays,
                       const std::vector<unsigned char>& mask, double ddof, DType acc,
                       std::uint64_t depth, const Value& result, const ExprSpec* row) {
  const ExprOpReference ref = expr_op_reference(op, arrays, mask, ddof, acc, depth, row);
  ExprVerdict v;
  v.result = result;
  v.expected = ref.value;
  v.count = ref.count;
  if (ref.exact) {
    v.ok = same_int(result, ref.value, acc);
    if (!v.ok) v.why = "integer results must be equal";
  } else {
    v.bound = ref.bound;
    v.ok = within(result.f, ref.value.f, v.bound);
    if (!v.ok) v.why = off_by(result.f, ref.value.f, v.bound);
  }
  return v;
}

ExprVerdict verify_user(ExprReduction& er, const std::vector<cl::Buffer>& in, std::size_t n,
                        const Value& result, TimeLimit limit, std::vector<cl::Event>& seq_events) {
  return verify_user(
      er, [&](const ExprReduction::ExprPieceFn& f) { f(in, n); }, n, 0, result, limit, seq_events);
}

ExprVerdict verify_user(ExprReduction& er, const ExprPieces& pieces, std::size_t n,
                        std::uint64_t fold_depth, const Value& result, TimeLimit limit,
                        std::vector<cl::Event>& seq_events) {
  const DType acc = er.spec().acc;
  double magnitude = 0.0;
  bool wider = false;
  const Value reference = er.reference(pieces, limit, &magnitude, &wider, seq_events);
  ExprVerdict v;
  Value expected = reference;
  if (is_float(acc)) {
    expected.type = acc;
    if (acc == DType::kFloat) expected.f = static_cast<float>(reference.f);
    v.bound = user_bound(acc, wider, er.depth() + fold_depth, n, magnitude, reference.f);
    v.ok = within(result.f, reference.f, v.bound);
    if (!v.ok) v.why = off_by(result.f, reference.f, v.bound);
  } else {
    v.ok = same_int(result, reference, acc);
    if (!v.ok) v.why = "integer results must be equal";
  }
  // Post, on the device, applied alike to the result and to the reference.
  const std::vector<Value> posted = er.post({result, expected}, n, limit);
  v.result = posted[0];
  v.expected = posted[1];
  return v;
}

HostArray gather_segment(const HostArray& x, const SegmentLayout& L, std::uint64_t q) {
  const std::uint64_t len = L.length(q);
  if (!L.columns) return view_of(x, static_cast<std::size_t>(L.offsets[q]), len);
  HostArray g;
  g.type = x.type;
  g.n = len;
  const std::size_t es = dtype_size(x.type);
  if (len == 0) return g;
  g.bytes.allocate_uninit(len * es);
  for (std::uint64_t k = 0; k < len; ++k)
    std::memcpy(g.bytes.data() + k * es, x.bytes.data() + L.at(q, k) * es, es);
  return g;
}

SegmentVerdict verify_segments(const SegmentReduction& sr, Op op, DType acc, const HostArray& x,
                               const std::vector<Value>& results) {
  return verify_segments(sr.layout(), op, acc, x, results, {},
                         [&](std::uint64_t q) { return sr.depth(q); });
}

SegmentVerdict verify_segments(const SegmentLayout& L, Op op, DType acc, const HostArray& x,
                               const std::vector<Value>& results,
                               const std::vector<Value>& expected,
                               const std::function<std::uint64_t(std::uint64_t)>& depth) {
  SegmentVerdict v;
  const std::uint64_t m = L.results();
  v.expected = expected;
  v.expected.resize(m);
  // Each segment checked on its own, in blocks of segments spread over the host's cores
  // (2^28 one-element segments are minutes on one thread); each block keeps its largest bound,
  // its first wrong segment and whether it accepted an overflow (no verdict kept per segment),
  // and the blocks are gathered in segment order, so the first wrong segment is the one shown,
  // as in one pass.
  // Magnitudes only where a float sum or product needs them (float_stats: zero otherwise).
  const bool stats = is_float(x.type) && (op == Op::kSum || op == Op::kProd);
  const FloatStats none;
  const std::vector<SegmentBlock> blocks = segment_blocks(m, [&](std::uint64_t q, SegmentBlock& b) {
    const HostArray seg = gather_segment(x, L, q);
    if (expected.empty()) v.expected[q] = reference_reduce(seg, op, acc);
    Verdict one = stats ? verify(results[q], v.expected[q], op, depth(q), float_stats(seg, op))
                        : verify(results[q], v.expected[q], op, depth(q), none);
    b.bound = std::max(b.bound, one.bound);
    b.overflow = b.overflow || one.overflow;
    if (!one.ok && b.wrong == kNone) {
      b.wrong = q;
      b.why = std::move(one.why);
    }
  });
  gather_blocks(blocks, v);
  return v;
}

SegmentVerdict verify_segments_user(SegmentReduction& sr, const std::vector<cl::Buffer>& in,
                                    DType acc, std::vector<Value>& results, TimeLimit limit,
                                    std::vector<cl::Event>& seq_events) {
  SegmentVerdict v;
  const SegmentLayout& L = sr.layout();
  const std::uint64_t m = L.results();
  bool wider = false, wider_abs = false;
  const std::vector<Value> ref = sr.reference(in, false, limit, &wider, seq_events);
  std::vector<Value> mag;
  if (is_float(acc)) mag = sr.reference(in, true, limit, &wider_abs, seq_events);
  v.expected.resize(m);
  for (std::uint64_t q = 0; q < m && v.ok; ++q) {
    Value e = ref[q];
    const Value& r = results[q];
    if (is_float(acc)) {
      e.type = acc;
      if (acc == DType::kFloat) e.f = static_cast<float>(ref[q].f);
      const double b = user_bound(acc, wider, sr.depth(q), L.length(q), mag[q].f, ref[q].f);
      v.bound = std::max(v.bound, b);
      if (!within(r.f, ref[q].f, b)) {
        v.ok = false;
        v.shown = q;
        v.why = "segment " + std::to_string(q) + ": " + off_by(r.f, ref[q].f, b);
      }
    } else if (!same_int(r, e, acc)) {
      v.ok = false;
      v.shown = q;
      v.why = "segment " + std::to_string(q) + ": " + r.str() + " != expected " + e.str() +
              " (integer results must be equal)";
    }
    v.expected[q] = e;
  }
  // Post, on the device, applied alike to the results and the references.
  results = sr.post(results, limit);
  if (v.ok) v.expected = sr.post(v.expected, limit);
  return v;
}

SegmentVerdict verify_segments_row(const SegmentReduction& sr, const std::string& op,
                                   const std::vector<HostArray>& arrays,
                                   const std::vector<unsigned char>& mask, double ddof, DType acc,
                                   const std::vector<Value>& results) {
  SegmentVerdict v;
  const SegmentLayout& L = sr.layout();
  const std::uint64_t m = L.results();
  v.expected.resize(m);
  // As verify_segments: blocks of segments on the host's cores, gathered in order.
  const std::vector<SegmentBlock> blocks = segment_blocks(m, [&](std::uint64_t q, SegmentBlock& b) {
    std::vector<HostArray> seg;
    for (const HostArray& a : arrays) seg.push_back(gather_segment(a, L, q));
    std::vector<unsigned char> seg_mask;
    if (!mask.empty()) {
      const std::uint64_t len = L.length(q);
      seg_mask.resize(len);
      for (std::uint64_t k = 0; k < len; ++k) seg_mask[k] = mask[L.at(q, k)];
    }
    ExprVerdict one = verify_row(op, seg, seg_mask, ddof, acc, sr.depth(q), results[q]);
    v.expected[q] = one.expected;
    b.bound = std::max(b.bound, one.bound);
    if (!one.ok && b.wrong == kNone) {
      b.wrong = q;
      b.why = std::move(one.why);
    }
  });
  gather_blocks(blocks, v);
  return v;
}

}  // namespace clreduce

// expr.cpp: user-defined reductions (expr.hpp): the expressions' text checks, the generated
// definitions appended to cl/reduce_expr.cl, the launch (fast's GPU and CPU shapes), the law
// check, the one-work-item reference and post.
#include "reduce/expr.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <regex>

#include "clreduce/error.hpp"
#include "io/text.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {
namespace {

const char* const kInputNames[kMaxExprInputs] = {"x", "y", "z", "w"};

// The user's text in a one-line message: control characters (a newline) escaped.
std::string quoted(const std::string& text) { return "'" + printable(text) + "'"; }

// The expression as the user gave it, after its flag: "--map 'x*y'".
std::string named(const std::string& flag, const std::string& text) {
  return flag + " " + quoted(text);
}

std::string define(const std::string& flag, const std::string& signature, const std::string& text,
                   const std::string& open = "(acc_t)(", const std::string& close = ")") {
  return expr_function(flag, signature, text, open, close);
}

std::string generated_tail(const ExprSpec& s) {
  std::string params;
  for (std::size_t k = 0; k < s.inputs.size(); ++k)
    params += std::string(k ? ", " : "") + "CLR_T" + std::to_string(k) + " " + kInputNames[k];
  // An indexed accumulator is a struct, which C casts cannot name: its expressions give it.
  params += ", A clr_shift";  // the run-time value (cl/clr_expr.h's EXPR_PARAMS)
  const std::string index = s.arg ? ", long i" : "", open = s.arg ? "(" : "(acc_t)(";
  std::string t = define("--map", "acc_t clr_expr_map(" + params + index + ")", s.map, open) +
                  define("--reduce", "acc_t clr_expr_reduce(acc_t a, acc_t b)", s.reduce, open) +
                  define("--identity", "acc_t clr_expr_identity(void)", s.identity, open);
  if (!s.fold.empty()) t += define("fold", "acc_t clr_expr_fold(acc_t a, acc_t b)", s.fold, open);
  if (!s.post.empty()) t += define("--post", "A clr_expr_post(acc_t a, long n)", s.post, "(A)(");
  if (!s.where.empty())
    t += define("--where", "int clr_expr_where(" + params + ")", s.where, "(", ") ? 1 : 0");
  return t;
}

// The build options every kernel of the spec shares (the accumulator given separately).
std::string spec_options(const ExprSpec& s) {
  std::string o = "-DCLR_OP=6 -DCLR_INPUTS=" + std::to_string(s.inputs.size());
  for (std::size_t k = 0; k < s.inputs.size(); ++k) {
    const std::string K = std::to_string(k);
    // float16: half buffers read with vload_half, float values in the expressions.
    if (s.inputs[k] == DType::kFloat16)
      o += " -DCLR_T" + K + "=float -DCLR_H" + K + "=1";
    else
      o += " -DCLR_T" + K + "=" + dtype_cl_name(s.inputs[k]);
  }
  if (s.acc == DType::kDouble ||
      std::find(s.inputs.begin(), s.inputs.end(), DType::kDouble) != s.inputs.end())
    o += " -DCLR_TYPE=5";  // clreduce.h enables cl_khr_fp64 for a double T or accumulator
  if (!s.post.empty()) o += " -DEXPR_POST=1";
  if (!s.where.empty()) o += " -DEXPR_WHERE=1";
  if (s.width != 1) o += " -DEXPR_WIDTH=" + std::to_string(s.width);
  if (s.block) o += " -DEXPR_BLOCK=" + std::to_string(s.block);
  if (s.arg) o += " -DEXPR_ARG=" + std::to_string(s.arg);
  if (!s.fold.empty()) o += " -DEXPR_FOLD=1";
  if (s.lse_expf) o += " -DCLR_LSE_EXPF=1 -DCLR_LSE_T=" + std::to_string(kLseExpfMargin);
  // One float array, no predicate: the GPU shape's vector loads fold four elements at a time
  // (cl/clr_expr.h, clr_lse_vfold).
  if (s.lse_expf && s.inputs.size() == 1 && s.inputs[0] == DType::kFloat && s.where.empty())
    o += " -DCLR_LSE_VFOLD=1";
  return o;
}

std::string acc_option(DType acc) { return " -DCLR_ACC=" + std::to_string(static_cast<int>(acc)); }

[[noreturn]] void rethrow_build(const Error& e, const ExprSpec& s) {
  rethrow_expr_build(e, {{"--map", s.map},
                         {"--reduce", s.reduce},
                         {"--identity", s.identity},
                         {"--post", s.post},
                         {"--where", s.where}});
}

// Bytes of one accumulator value.
std::size_t acc_size(DType t) { return dtype_size(t); }

bool same_exact(const Value& a, const Value& b) {
  if (is_float(a.type)) return a.f == b.f || (std::isnan(a.f) && std::isnan(b.f));
  return is_signed(a.type) ? a.i == b.i : a.u == b.u;
}

// Unit roundoff of a float accumulator.
double roundoff(DType t) {
  return t == DType::kFloat ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
}

// Whether two results of regrouped (or swapped) operations agree: integers exactly, floats
// within 4 units of roundoff of the largest magnitude involved (the operands and the finite
// results). *skip: a float overflow from finite operands, which says nothing about the law.
bool agree(const Value& l, const Value& r, const std::vector<Value>& operands,
           const std::vector<Value>& results, bool* skip) {
  *skip = false;
  if (!is_float(l.type)) return same_exact(l, r);
  if (same_exact(l, r)) return true;
  double m = 0.0;
  for (const Value& v : operands) {
    if (!std::isfinite(v.f)) return false;  // inf or NaN in: the two must be the same
    m = std::max(m, std::fabs(v.f));
  }
  for (const Value& v : results) {
    if (std::isinf(v.f)) {
      *skip = true;
      return true;
    }
    if (std::isfinite(v.f)) m = std::max(m, std::fabs(v.f));
  }
  if (!std::isfinite(l.f) || !std::isfinite(r.f)) return false;
  return std::fabs(l.f - r.f) <= 4.0 * roundoff(l.type) * m;
}

// The edge values of the accumulator type tried besides the data: 0, 1 and -1 (signed types),
// and integers' extremes (sums and products wrap there, as they do in the accumulator).
std::vector<unsigned char> edge_bytes(DType t) {
  std::vector<unsigned char> out;
  dispatch_dtype(t, [&](auto zero) {
    using A = decltype(zero);
    std::vector<A> v{A(0), A(1)};
    if constexpr (std::is_signed_v<A> || std::is_floating_point_v<A>) v.push_back(A(-1));
    if constexpr (std::is_integral_v<A>) {
      v.push_back(std::numeric_limits<A>::max());
      v.push_back(std::numeric_limits<A>::lowest());
    }
    out.resize(v.size() * sizeof(A));
    std::memcpy(out.data(), v.data(), out.size());
  });
  return out;
}

// Reads buf's first `bytes` bytes into dst, waiting within the limit (as every wait).
void read_back(Context& ctx, const cl::Buffer& buf, std::size_t bytes, void* dst, TimeLimit limit,
               const std::string& what) {
  enqueue_read(ctx.queue(), buf, 0, bytes, dst, ctx.tuning().transfer_piece);
  finish(ctx.queue(), limit, what);
}

}  // namespace

void run_one(Context& ctx, cl::Kernel& k, std::size_t items, TimeLimit limit,
             const std::string& what, std::vector<cl::Event>* events) {
  // More than one item: groups of a fixed size, the last one cut by the kernel's own bound. Left
  // to the implementation, the group size follows the count, and a CPU device's compiler makes
  // a work-group function for each new count (PoCL: about 0.2 s each).
  cl::NDRange global(items), local = cl::NullRange;
  if (items > 1) {
    const std::size_t wg =
        std::max<std::size_t>(1, std::min<std::size_t>(64, kernel_max_wg(ctx, k)));
    global = cl::NDRange((items + wg - 1) / wg * wg);
    local = cl::NDRange(wg);
  }
  cl::Event e;
  ctx.queue().enqueueNDRangeKernel(k, cl::NullRange, global, local, nullptr, &e);
  ctx.queue().flush();
  wait(e, limit, what);
  if (events) events->push_back(e);
}

void set_expr_inputs(cl::Kernel& k, const std::vector<cl::Buffer>& in, DType acc, double shift,
                     std::uint64_t base) {
  for (cl_uint a = 0; a < kMaxExprInputs; ++a)
    k.setArg(a, in[std::min<std::size_t>(a, in.size() - 1)]);
  dispatch_dtype(acc, [&](auto zero) {
    const auto v = static_cast<decltype(zero)>(shift);
    k.setArg(kMaxExprInputs, sizeof v, &v);
  });
  k.setArg(kMaxExprInputs + 1, static_cast<cl_long>(base));
}

std::string expr_tail(const ExprSpec& s) { return generated_tail(s); }

std::size_t expr_acc_bytes(const ExprSpec& s) {
  if (s.arg == 1) return 16;
  if (s.arg == 2) return 2 * dtype_size(s.acc) + 16;
  return dtype_size(s.acc) * s.width;
}

std::string expr_options(const ExprSpec& s) { return spec_options(s) + acc_option(s.acc); }

cl::Kernel build_expr_kernel(Context& ctx, const ExprSpec& spec, const std::string& file,
                             const std::string& name, const std::string& options,
                             const std::string& tail) {
  try {
    return ctx.kernel(file, name, options, tail);
  } catch (const Error& e) {
    if (e.category() != Errc::kBuild) throw;
    rethrow_build(e, spec);
  }
}

std::string expr_function(const std::string& flag, const std::string& signature,
                          const std::string& text, const std::string& open,
                          const std::string& close) {
  return "#line 1 \"" + flag + " wrapper\"\n" + signature + " {\n  return " + open +
         "\n#line 1 \"" + flag + "\"\n" + text + "\n#line 3 \"" + flag + " wrapper\"\n  " + close +
         ";\n}\n";
}

void rethrow_expr_build(const Error& e,
                        const std::vector<std::pair<std::string, std::string>>& exprs) {
  // Clang writes "FILE:L:C: error: MSG"; PoCL passes it on as "error: FILE:L:C: MSG".
  static const std::regex kAt(
      R"(([^\s:]+(?:::[A-Za-z_]+)?)( wrapper)?:(\d+):(\d+): error: ([^\n]*))");
  static const std::regex kPocl(
      R"(error: ([^\s:]+(?:::[A-Za-z_]+)?)( wrapper)?:(\d+):(\d+): ([^\n]*))");
  const std::string what = e.what();
  for (const std::regex* re : {&kAt, &kPocl}) {
    for (auto it = std::sregex_iterator(what.begin(), what.end(), *re);
         it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      const auto hit = std::find_if(exprs.begin(), exprs.end(),
                                    [&](const auto& fx) { return fx.first == m[1].str(); });
      if (hit == exprs.end()) continue;
      const std::string& text = hit->second;
      std::string where;
      if (!m[2].matched) {
        const bool lines = text.find('\n') != std::string::npos;
        where =
            (lines ? "line " + m[3].str() + ", " : std::string()) + "column " + m[4].str() + ": ";
      }
      throw Error(Errc::kUsage,
                  named(hit->first, text) + " does not compile: " + where + m[5].str());
    }
  }
  throw e;
}

void check_expression(const std::string& flag, const std::string& text) {
  bool blank = true;
  for (char c : text) blank = blank && std::isspace(static_cast<unsigned char>(c));
  if (blank) throw Error(Errc::kUsage, flag + " needs an OpenCL C expression, not an empty value");
  const auto refuse = [&](const std::string& what) {
    throw Error(Errc::kUsage, named(flag, text) + " is not one expression: it holds " + what +
                                  " (an expression may not end itself or add code)");
  };
  for (const char* bad : {"//", "/*", "*/"})
    if (text.find(bad) != std::string::npos)
      refuse(std::string("the comment marker '") + bad + "'");
  for (char c : {';', '{', '}', '#'})
    if (text.find(c) != std::string::npos) refuse(std::string("'") + c + "'");
  for (std::size_t at = text.find('\\'); at != std::string::npos; at = text.find('\\', at + 1)) {
    std::size_t next = at + 1;
    if (next < text.size() && text[next] == '\r') ++next;
    if (next >= text.size() || text[next] == '\n') refuse("a backslash at the end of a line");
  }
  long depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) refuse("a ')' that closes nothing");
  }
  if (depth > 0) refuse("a '(' that is not closed");
}

std::size_t inputs_named(const std::string& map) {
  std::size_t most = 1;
  for (std::size_t i = 0; i < map.size();) {
    const unsigned char c = static_cast<unsigned char>(map[i]);
    if (std::isalpha(c) || c == '_') {
      std::size_t j = i;
      while (j < map.size() && (std::isalnum(static_cast<unsigned char>(map[j])) || map[j] == '_'))
        ++j;
      // A name, not a member (v.x) or part of a number (1e3, 0x1f: digits come first).
      const bool member = i > 0 && map[i - 1] == '.';
      const std::string word = map.substr(i, j - i);
      for (std::size_t k = 0; k < kMaxExprInputs && !member; ++k)
        if (word == kInputNames[k]) most = std::max(most, k + 1);
      i = j;
    } else if (std::isdigit(c)) {
      while (i < map.size() &&
             (std::isalnum(static_cast<unsigned char>(map[i])) || map[i] == '.' || map[i] == '_'))
        ++i;
    } else {
      ++i;
    }
  }
  return most;
}

DType default_expr_acc(const std::vector<DType>& inputs) {
  const auto any = [&](auto pred) { return std::any_of(inputs.begin(), inputs.end(), pred); };
  if (any([](DType t) { return t == DType::kDouble; })) return DType::kDouble;
  if (any([](DType t) { return is_float(t); })) return DType::kFloat;  // float, float16
  if (any([](DType t) { return is_signed(t) || t == DType::kBool; })) return DType::kInt64;
  return DType::kUInt64;
}

cl::Kernel ExprReduction::build(const std::string& name, const std::string& options) {
  try {
    return ctx_.kernel(file_, name, options, tail_);
  } catch (const Error& e) {
    if (e.category() != Errc::kBuild) throw;
    rethrow_build(e, spec_);
  }
}

void ExprReduction::use_program(const std::string& file, const std::string& options,
                                const std::string& tail) {
  file_ = file;
  aux_options_ = options;
  tail_ = tail;
}

ExprReduction::ExprReduction(Context& ctx, ExprSpec spec, std::size_t n, std::size_t local_size,
                             bool launch)
    : ctx_(ctx), spec_(std::move(spec)) {
  if (spec_.inputs.empty() || spec_.inputs.size() > kMaxExprInputs)
    throw Error(Errc::kUsage, "a user reduction takes 1 to 4 input arrays, not " +
                                  std::to_string(spec_.inputs.size()));
  n = std::max<std::size_t>(n, 1);  // an empty array launches nothing but the checks
  for (const auto& [flag, text] : {std::pair<const char*, const std::string&>{"--map", spec_.map},
                                   {"--reduce", spec_.reduce},
                                   {"--identity", spec_.identity}})
    check_expression(flag, text);
  if (!spec_.post.empty()) check_expression("--post", spec_.post);
  if (!spec_.where.empty()) check_expression("--where", spec_.where);
  if (!is_variant_dtype(spec_.acc))
    throw Error(Errc::kUsage, "accumulator " + dtype_name(spec_.acc) +
                                  " is not one the engine has (int32, uint32, int64, uint64, "
                                  "float or double)");
  if (spec_.arg && (spec_.arg > 2 || spec_.width != 1 || spec_.acc == DType::kInt32 ||
                    spec_.acc == DType::kUInt32))
    throw Error(Errc::kUsage,
                "an indexed accumulator takes one value of float, double, int64 "
                "or uint64");
  // The shape: fast's (the fast-shape and fast-groups knobs, else by the device type). GPU: 256
  // work-items per group, up to 4 groups per compute unit, at least 4 elements per work-item;
  // CPU: one work-item per group, up to 4 groups per core, at least 2^16 elements per
  // work-item.
  const std::string& forced = ctx.tuning().fast_shape;
  const bool cpu = forced == "cpu" || (forced != "gpu" && !ctx.info().is_gpu);
  // The GPU shape's work-items fold a few thousand elements each: rows whose blocks are optional
  // fold them in one chain (the depth below counts it), unless the expr-blocks knob keeps them.
  if (launch && spec_.blocks_optional && ctx.tuning().expr_blocks == "auto") spec_.block = 0;
  tail_ = generated_tail(spec_);
  options_ = spec_options(spec_);
  aux_options_ = options_ + acc_option(spec_.acc);
  if (!launch) return;  // the checks alone (check_laws, post, map_values)
  const std::size_t preferred = cpu ? 1 : 256;
  const std::size_t per_item = cpu ? std::size_t{1} << 16 : 4;
  const unsigned unroll = 4;
  // GPU shape: 16 bytes of the widest input per load (as fast's), each lane mapped.
  std::size_t widest = 1;
  for (DType t : spec_.inputs) widest = std::max(widest, dtype_size(t));
  // Not for float16 inputs (read with vload_half), nor for the arg rows (their map takes each
  // lane's index) where the expr-arg-vec knob turns it off.
  const bool scalar_only =
      (spec_.arg != 0 && ctx.tuning().expr_arg_vec == "off") ||
      std::find(spec_.inputs.begin(), spec_.inputs.end(), DType::kFloat16) != spec_.inputs.end();
  const std::size_t vec = !cpu && !scalar_only ? std::max<std::size_t>(1, 16 / widest) : 1;
  // The CPU shape's lanes (a row's fold over 16 elements at a time in vector arithmetic), unless
  // the expr-lanes knob turns them off; a stream's vectors are numbered in 32 bits.
  const unsigned lanes = cpu && ctx.tuning().expr_lanes != "off" &&
                                 n / (std::size_t{unroll} * kExprLanes) < (std::size_t{1} << 32)
                             ? spec_.lanes
                             : 0;
  const std::string shape = " -DEXPR_CPU=" + std::string(cpu ? "1" : "0") +
                            " -DUNROLL=" + std::to_string(unroll) +
                            (vec > 1 ? " -DEXPR_VEC=" + std::to_string(vec) : "") +
                            (lanes ? " -DEXPR_LANES=" + std::to_string(lanes) : "");
  if (!(spec_.width == 1 || ((spec_.width == 2 || spec_.width == 4) && is_float(spec_.acc))))
    throw Error(Errc::kUsage, "an accumulator of " + std::to_string(spec_.width) + " values of " +
                                  dtype_name(spec_.acc) +
                                  " is not one the engine has (1; 2 or 4 of a float type)");
  check_local_size(ctx, local_size, local_size * acc_bytes());
  const auto make = [&](std::size_t wg) {
    return build("reduce_expr", aux_options_ + shape + " -DWG_SIZE=" + std::to_string(wg));
  };
  main_ = make(local_size ? local_size : preferred);
  policy_.wg_size = choose_wg(ctx, main_, local_size, preferred);
  if (policy_.wg_size != (local_size ? local_size : preferred)) main_ = make(policy_.wg_size);
  aux_options_ += shape + " -DWG_SIZE=" + std::to_string(policy_.wg_size);
  const std::size_t cap = std::max<std::size_t>(1, ctx.info().compute_units * 4);
  // GPU shape: one group where each work-item gets at most 16 elements, which writes the result
  // itself (no partials, ticket or second fold). On the H200, mean, dot and norm2 of float and
  // double ran 0.4-1.4 us faster so at 2^11, faster or level at 2^12 but norm2 float (0.3 us
  // slower), and up to 3 us slower at 2^13 (32 elements a work-item): docs/PERF.md, "One group
  // where the array is small".
  const bool one_group = !cpu && n <= policy_.wg_size * 16;
  policy_.groups =
      ctx.tuning().fast_groups  // the fast-groups knob fixes it, as for fast
          ? ctx.tuning().fast_groups
          : one_group
                ? 1
                : std::clamp<std::size_t>(
                      (n + policy_.wg_size * per_item - 1) / (policy_.wg_size * per_item), 1, cap);
  const std::size_t items = policy_.groups * policy_.wg_size;
  policy_.items_per_thread = static_cast<unsigned>((n + items - 1) / items);
  policy_.vec_width = static_cast<unsigned>(vec);
  policy_.path = std::string(cpu ? "cpu-shape" : "gpu-shape") +
                 (vec > 1 ? " vec" + std::to_string(vec) : "") +
                 (lanes ? " lanes" + std::to_string(kExprLanes) : "") + " x" +
                 std::to_string(unroll) + " ticket";
  if (lanes) policy_.vec_width = kExprLanes;
  // A work-item's elements into its accumulators, the accumulators, the group's tree, the last
  // group's loop over the partials and its tree.
  // With blocks: a block's rounds (with vector loads, whole vectors: at most block + vec - 1
  // elements an accumulator, and the last block up to vec * unroll more from the loops' ends)
  // and the fold of the accumulators, then the stack (a carry chain and the final fold, each at
  // most one per level).
  // With lanes: a lane's rounds (a block's, or all of its stream's), the fold of the 16 lanes
  // and the streams, the stack; the remainder after the vectors (fewer than unroll * 16
  // elements) in one accumulator; each reaching the stack or the work-item's final fold.
  const std::uint64_t block_elems = (std::uint64_t{spec_.block} + vec - 1) / vec * vec;
  const std::uint64_t per_lane = policy_.items_per_thread / (std::uint64_t{unroll} * kExprLanes);
  const std::uint64_t levels = spec_.block ? 2 * (ceil_log2(per_lane / spec_.block + 2) + 1) : 0;
  const std::uint64_t in_item =
      lanes ? std::max<std::uint64_t>(
                  (spec_.block ? std::min<std::uint64_t>(per_lane, spec_.block) : per_lane) +
                      kExprLanes + unroll,
                  std::uint64_t{unroll} * (kExprLanes + 1)) +
                  levels + 2
      : spec_.block
          ? std::min<std::uint64_t>(policy_.items_per_thread, block_elems + vec * unroll) + unroll +
                2 * (ceil_log2(policy_.items_per_thread / (block_elems * unroll) + 2) + 1)
          : policy_.items_per_thread + unroll;
  depth_ = in_item + 2 * ceil_log2(policy_.wg_size) +
           (policy_.groups + policy_.wg_size - 1) / policy_.wg_size;
  if (spec_.block) policy_.path += " pairwise blocks of " + std::to_string(spec_.block);
  partials_ = ctx.zeroed_buffer(policy_.groups * acc_bytes());
  ticket_ = ctx.zeroed_buffer(sizeof(cl_uint));
}

void ExprReduction::enqueue(const std::vector<cl::Buffer>& in, std::size_t n, const cl::Buffer& out,
                            std::vector<cl::Event>& events, std::uint64_t base) {
  set_expr_inputs(main_, in, spec_.acc, spec_.shift, base);
  main_.setArg(kExprArgs, static_cast<cl_ulong>(n));
  main_.setArg(kExprArgs + 1, partials_);
  main_.setArg(kExprArgs + 2, ticket_);
  main_.setArg(kExprArgs + 3, out);
  events.emplace_back();
  ctx_.queue().enqueueNDRangeKernel(main_, cl::NullRange,
                                    cl::NDRange(policy_.groups * policy_.wg_size),
                                    cl::NDRange(policy_.wg_size), nullptr, &events.back());
}

void ExprReduction::enqueue_fold(const cl::Buffer& accs, std::size_t stride, std::size_t m,
                                 const cl::Buffer& out, std::vector<cl::Event>& events) {
  if (!fold_.get()) fold_ = build("reduce_expr_fold", aux_options_);
  fold_.setArg(0, accs);
  fold_.setArg(1, static_cast<cl_ulong>(stride));
  fold_.setArg(2, static_cast<cl_uint>(m));
  fold_.setArg(3, out);
  events.emplace_back();
  ctx_.queue().enqueueNDRangeKernel(fold_, cl::NullRange, cl::NDRange(1), cl::NullRange, nullptr,
                                    &events.back());
}

ExprLaws ExprReduction::check_laws(const std::vector<cl::Buffer>& in, std::size_t n,
                                   TimeLimit limit) {
  if (spec_.width != 1) throw Error(Errc::kUsage, "the law check takes one-value accumulators");
  const DType t = spec_.acc;
  const std::size_t as = acc_size(t);
  // The sample: up to 254 elements drawn at random, the first and the last.
  std::mt19937_64 rng(0x9E3779B97F4A7C15ull ^ n);
  std::vector<cl_ulong> idx;
  if (n > 0) {
    idx = {0, n - 1};
    for (std::size_t k = 0; k < std::min<std::size_t>(n, 254); ++k) idx.push_back(rng() % n);
  }
  const auto m = static_cast<cl_uint>(idx.size());
  cl::Kernel sample = build("reduce_expr_sample", aux_options_);
  cl::Buffer idx_buf = ctx_.zeroed_buffer(std::max<std::size_t>(idx.size(), 1) * sizeof(cl_ulong));
  if (!idx.empty()) {
    enqueue_write(ctx_.queue(), idx_buf, 0, idx.size() * sizeof(cl_ulong), idx.data(),
                  ctx_.tuning().transfer_piece);
    finish(ctx_.queue(), limit, "the law check's sample indices");
  }
  cl::Buffer mapped = ctx_.zeroed_buffer(std::max<std::size_t>(idx.size(), 1) * as);
  std::vector<unsigned char> pool(idx.size() * as);
  if (m > 0) {
    set_expr_inputs(sample, in, t, spec_.shift);
    sample.setArg(kExprArgs, idx_buf);
    sample.setArg(kExprArgs + 1, m);
    sample.setArg(kExprArgs + 2, mapped);
    run_one(ctx_, sample, m, limit, "the law check's sample of " + named("--map", spec_.map));
    read_back(ctx_, mapped, pool.size(), pool.data(), limit, "the law check's sample");
  }
  const std::vector<unsigned char> edges = edge_bytes(t);
  pool.insert(pool.end(), edges.begin(), edges.end());
  const std::size_t values = pool.size() / as;
  // Every pool value as a, then random triples.
  std::vector<cl_uint> tri;
  const auto pick = [&] { return static_cast<cl_uint>(rng() % values); };
  for (std::size_t k = 0; k < values; ++k) {
    tri.push_back(static_cast<cl_uint>(k));
    tri.push_back(pick());
    tri.push_back(pick());
  }
  for (int k = 0; k < 4096; ++k)
    for (int j = 0; j < 3; ++j) tri.push_back(pick());
  const auto triples = static_cast<cl_uint>(tri.size() / 3);
  cl::Kernel laws = build("reduce_expr_laws", aux_options_);
  cl::Buffer pool_buf(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, pool.size(),
                      pool.data());
  cl::Buffer tri_buf(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                     tri.size() * sizeof(cl_uint), tri.data());
  cl::Buffer out = ctx_.zeroed_buffer(std::size_t{triples} * 8 * as);
  laws.setArg(0, pool_buf);
  laws.setArg(1, tri_buf);
  laws.setArg(2, triples);
  laws.setArg(3, out);
  run_one(ctx_, laws, triples, limit, "the law check of " + named("--reduce", spec_.reduce));
  std::vector<unsigned char> res(std::size_t{triples} * 8 * as);
  read_back(ctx_, out, res.size(), res.data(), limit, "the law check's results");

  ExprLaws r;
  r.samples = values;
  r.triples = triples;
  const auto at = [&](const std::vector<unsigned char>& v, std::size_t k) {
    return Value::from_bytes(t, v.data() + k * as);
  };
  const std::string R = named("--reduce", spec_.reduce);
  const std::string I = named("--identity", spec_.identity);
  // Associativity first (a tree regroups), then the identity (groups and work-items start
  // from it), then commutativity (work-items take elements out of order).
  for (int law = 0; law < 3 && r.failure.empty(); ++law)
    for (std::size_t k = 0; k < triples && r.failure.empty(); ++k) {
      const Value a = at(pool, tri[3 * k]), b = at(pool, tri[3 * k + 1]),
                  c = at(pool, tri[3 * k + 2]);
      const Value ab = at(res, 8 * k), bc = at(res, 8 * k + 1), left = at(res, 8 * k + 2),
                  right = at(res, 8 * k + 3), ba = at(res, 8 * k + 4), ia = at(res, 8 * k + 5),
                  ai = at(res, 8 * k + 6), id = at(res, 8 * k + 7);
      bool skip = false;
      if (law == 0 && !agree(left, right, {a, b, c}, {ab, bc, left, right}, &skip))
        r.failure = R + " is not associative: with a = " + a.str() + ", b = " + b.str() +
                    ", c = " + c.str() + ", reduce(reduce(a, b), c) = " + left.str() +
                    " but reduce(a, reduce(b, c)) = " + right.str();
      else if (law == 1 && !same_exact(ia, a))
        r.failure = I + " is not neutral for " + R + ": reduce(" + id.str() + ", " + a.str() +
                    ") = " + ia.str() + ", not " + a.str();
      else if (law == 1 && !same_exact(ai, a))
        r.failure = I + " is not neutral for " + R + ": reduce(" + a.str() + ", " + id.str() +
                    ") = " + ai.str() + ", not " + a.str();
      else if (law == 2 && !agree(ab, ba, {a, b}, {ab, ba}, &skip))
        r.failure = R + " is not commutative: with a = " + a.str() + ", b = " + b.str() +
                    ", reduce(a, b) = " + ab.str() + " but reduce(b, a) = " + ba.str();
    }
  return r;
}

Value ExprReduction::reference(const std::vector<cl::Buffer>& in, std::size_t n, TimeLimit limit,
                               double* magnitude, bool* wider, std::vector<cl::Event>& events) {
  return reference([&](const ExprPieceFn& f) { f(in, n); }, limit, magnitude, wider, events);
}

Value ExprReduction::reference(const std::function<void(const ExprPieceFn&)>& pieces,
                               TimeLimit limit, double* magnitude, bool* wider,
                               std::vector<cl::Event>& events) {
  if (spec_.width != 1)
    throw Error(Errc::kUsage, "the one-work-item reference takes one-value accumulators");
  DType t = spec_.acc;
  *wider = false;
  cl::Kernel k;
  if (t == DType::kFloat && ctx_.info().fp64) {
    // The same expressions with a double accumulator, where they build so (the map's own
    // arithmetic stays in its operands' types); else the float fold.
    try {
      k = ctx_.kernel("reduce_expr.cl", "reduce_expr_seq",
                      options_ + " -DCLR_TYPE=5" + acc_option(DType::kDouble), tail_);
      t = DType::kDouble;
      *wider = true;
    } catch (const Error& e) {
      if (e.category() != Errc::kBuild) throw;
    }
  }
  if (!*wider) k = build("reduce_expr_seq", aux_options_);
  cl::Buffer out = ctx_.zeroed_buffer(acc_size(t));
  // Every piece's fold resumes from the value the pieces before it left in out.
  // absolute: the fold of |map| (float accumulators), from the same program.
  const auto fold = [&](cl_uint absolute, const std::string& what, std::vector<cl::Event>* evs) {
    cl_uint resume = 0;
    pieces([&](const std::vector<cl::Buffer>& in, std::size_t len) {
      set_expr_inputs(k, in, t, spec_.shift);
      k.setArg(kExprArgs, static_cast<cl_ulong>(len));
      k.setArg(kExprArgs + 1, resume);
      k.setArg(kExprArgs + 2, absolute);
      k.setArg(kExprArgs + 3, out);
      run_one(ctx_, k, 1, limit, what, evs);
      resume = 1;
    });
  };
  fold(0, "the one-work-item reference of " + named("--map", spec_.map), &events);
  unsigned char bytes[8] = {};
  read_back(ctx_, out, acc_size(t), bytes, limit, "the one-work-item reference");
  Value v = Value::from_bytes(t, bytes);
  *magnitude = 0.0;
  if (is_float(t)) {
    // The scale of the float bound: the same fold over |map|, in double where the fold is.
    fold(1, "the one-work-item fold of |map|", nullptr);
    read_back(ctx_, out, acc_size(t), bytes, limit, "the one-work-item fold of |map|");
    *magnitude = std::fabs(Value::from_bytes(t, bytes).f);
  }
  return v;
}

std::vector<Value> ExprReduction::post(const std::vector<Value>& vs, std::size_t n,
                                       TimeLimit limit) {
  if (spec_.post.empty() || vs.empty()) return vs;
  const DType t = spec_.acc;
  const std::size_t as = acc_size(t);
  std::vector<unsigned char> bytes(vs.size() * as);
  for (std::size_t k = 0; k < vs.size(); ++k)
    dispatch_dtype(t, [&](auto zero) {
      const auto x = value_as<decltype(zero)>(vs[k]);
      std::memcpy(bytes.data() + k * as, &x, as);
    });
  return post_bytes(bytes, n, limit);
}

std::vector<Value> ExprReduction::post_bytes(const std::vector<unsigned char>& accs, std::size_t n,
                                             TimeLimit limit) {
  const DType t = spec_.acc;
  const std::size_t ab = acc_bytes(), vs = dtype_size(t), m = accs.size() / ab;
  std::vector<Value> r;
  if (spec_.post.empty()) {
    for (std::size_t j = 0; j < m; ++j) r.push_back(Value::from_bytes(t, accs.data() + j * ab));
    return r;
  }
  if (m == 0) return r;
  cl::Kernel k = build("reduce_expr_post", aux_options_);
  cl::Buffer in(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, accs.size(),
                const_cast<unsigned char*>(accs.data()));
  cl::Buffer out = ctx_.zeroed_buffer(m * vs);
  k.setArg(0, in);
  k.setArg(1, static_cast<cl_uint>(m));
  k.setArg(2, static_cast<cl_ulong>(n));
  k.setArg(3, out);
  run_one(ctx_, k, 1, limit, named("--post", spec_.post));
  std::vector<unsigned char> bytes(m * vs);
  read_back(ctx_, out, bytes.size(), bytes.data(), limit, named("--post", spec_.post));
  for (std::size_t j = 0; j < m; ++j) r.push_back(Value::from_bytes(t, bytes.data() + j * vs));
  return r;
}

std::vector<unsigned char> ExprReduction::map_values(const std::vector<cl::Buffer>& in,
                                                     std::size_t first, std::size_t count,
                                                     TimeLimit limit) {
  std::vector<unsigned char> r(count * acc_bytes());
  if (count == 0) return r;
  std::vector<cl_ulong> idx(count);
  for (std::size_t k = 0; k < count; ++k) idx[k] = first + k;
  cl::Kernel sample = build("reduce_expr_sample", aux_options_);
  cl::Buffer idx_buf(ctx_.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                     idx.size() * sizeof(cl_ulong), idx.data());
  cl::Buffer out = ctx_.zeroed_buffer(r.size());
  set_expr_inputs(sample, in, spec_.acc, spec_.shift);
  sample.setArg(kExprArgs, idx_buf);
  sample.setArg(kExprArgs + 1, static_cast<cl_uint>(count));
  sample.setArg(kExprArgs + 2, out);
  run_one(ctx_, sample, count, limit, named("--map", spec_.map));
  read_back(ctx_, out, r.size(), r.data(), limit, named("--map", spec_.map));
  return r;
}

std::vector<unsigned char> ExprReduction::where_values(const std::vector<cl::Buffer>& in,
                                                       std::size_t first, std::size_t count,
                                                       TimeLimit limit) {
  if (spec_.where.empty()) throw Error(Errc::kInternal, "where_values without a --where");
  std::vector<unsigned char> r(count);
  if (count == 0) return r;
  cl::Kernel where = build("reduce_expr_where", aux_options_);
  cl::Buffer out = ctx_.zeroed_buffer(count);
  set_expr_inputs(where, in, spec_.acc, spec_.shift);
  where.setArg(kExprArgs, static_cast<cl_ulong>(first));
  where.setArg(kExprArgs + 1, static_cast<cl_uint>(count));
  where.setArg(kExprArgs + 2, out);
  run_one(ctx_, where, count, limit, named("--where", spec_.where));
  read_back(ctx_, out, r.size(), r.data(), limit, named("--where", spec_.where));
  return r;
}

std::vector<unsigned char> where_mask(ExprReduction& er, const ExprPieces& pieces, std::size_t n,
                                      TimeLimit limit) {
  std::vector<unsigned char> mask;
  if (er.spec().where.empty()) return mask;
  mask.reserve(n);
  pieces([&](const std::vector<cl::Buffer>& in, std::size_t len) {
    for (std::size_t first = 0; first < len; first += std::size_t{1} << 20) {
      const std::size_t count = std::min<std::size_t>(len - first, std::size_t{1} << 20);
      const std::vector<unsigned char> v = er.where_values(in, first, count, limit);
      mask.insert(mask.end(), v.begin(), v.end());
    }
  });
  return mask;
}

std::vector<unsigned char> where_mask(ExprReduction& er, const std::vector<cl::Buffer>& in,
                                      std::size_t n, TimeLimit limit) {
  return where_mask(
      er, [&](const ExprReduction::ExprPieceFn& f) { f(in, n); }, n, limit);
}

}  // namespace clreduce

// test_reduce_plan.cpp: reduction plans as a library user holds them: every variant run on
// sub-ranges of one buffer at aligned but awkward offsets and lengths (arg indices counted from
// the offset), and at any element offset where the plan reads any start (fast), a plan for n
// run on shorter ranges, two plans in flight on one queue, and the ranges a plan refuses. Integer
// results are compared exactly with the host reference.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <cstring>
#include <random>

#include "clreduce/error.hpp"
#include "io/data.hpp"
#include "reduce/variant.hpp"
#include "test_helpers.hpp"
#include "verify/reference.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;
using clreduce::test::device_context;
using clreduce::test::TuningGuard;

namespace {

// Every variant but `exact`, which sums float and double only: its plans are tested in
// test_exact.cpp.
std::vector<std::string> variant_names() {
  std::vector<std::string> v;
  for (const auto& r : reduce_variants())
    if (r->name() != "exact") v.push_back(r->name());
  return v;
}

// Elements [offset, offset + length) of a as an array of their own.
HostArray slice(const HostArray& a, std::size_t offset, std::size_t length) {
  HostArray s;
  s.type = a.type;
  s.n = length;
  const std::size_t size = dtype_size(a.type);
  s.bytes.assign(a.bytes.begin() + static_cast<std::ptrdiff_t>(offset * size),
                 a.bytes.begin() + static_cast<std::ptrdiff_t>((offset + length) * size));
  return s;
}

// A device buffer holding bytes (a host write: Oclgrind counts it as initialising them).
cl::Buffer upload(const std::vector<unsigned char>& bytes) {
  Context& ctx = device_context();
  cl::Buffer b(ctx.context(), CL_MEM_READ_WRITE, bytes.size());
  ctx.queue().enqueueWriteBuffer(b, CL_TRUE, 0, bytes.size(), bytes.data());
  return b;
}

ReduceProblem problem_of(Op op, DType type, std::size_t n) {
  ReduceProblem p;
  p.op = op;
  p.type = type;
  p.n = n;
  p.acc_type = acc_dtype(op, type);
  return p;
}

// Runs plan on in[offset, offset + length) and returns the result read back.
Value run_range(ReducePlan& plan, const cl::Buffer& in, std::size_t offset, std::size_t length) {
  Context& ctx = device_context();
  std::vector<unsigned char> bytes(16, 0xA5);
  const cl::Buffer out = upload(bytes);
  std::vector<cl::Event> events;
  plan.enqueue(in, offset, length, out, events);
  ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, 16, bytes.data());
  Value v = Value::from_bytes(plan.problem().acc_type, bytes.data());
  if (is_arg_op(plan.problem().op)) std::memcpy(&v.index, bytes.data() + 8, 8);
  return v;
}

void require_same(const Value& got, const Value& want) {
  INFO("got " << got.str() << " @" << got.index << ", expected " << want.str() << " @"
              << want.index);
  REQUIRE(got.i == want.i);
  REQUIRE(got.u == want.u);
  REQUIRE(got.index == want.index);
}

}  // namespace

TEST_CASE("every reduction plan runs on sub-ranges at awkward offsets", "[reduce][plan]") {
  const std::string variant = GENERATE(from_range(variant_names()));
  struct OpType {
    Op op;
    DType type;
  };
  // A widening sum and an arg op on 64-bit elements (indices count from the offset).
  const OpType ot = GENERATE(OpType{Op::kSum, DType::kInt32}, OpType{Op::kArgMin, DType::kInt64});
  Context& ctx = device_context();
  const std::size_t size = dtype_size(ot.type);
  // Sub-buffers start at multiples of the base address alignment: step is the smallest offset.
  const std::size_t step = std::max<std::size_t>(1, ctx.base_align() / size);
  const std::size_t total = 13 * step + 70001;
  const std::uint64_t seed = std::random_device{}();
  CAPTURE(variant, op_name(ot.op), dtype_name(ot.type), step, seed);
  HostArray a = generate(ot.type, total, seed);
  if (ot.op == Op::kArgMin) {  // ties and an extreme near each range's start
    for (std::size_t i = 0; i < total; i += 997) a.as<std::int64_t>()[i] = -2000000000000LL;
  }
  const cl::Buffer in = upload(a.bytes);
  const ReduceVariant& v = *find_reduce_variant(variant);
  // One plan for the longest range, run on shorter ones too; and plans made for some lengths.
  const std::size_t longest = 70001;
  const auto big = v.plan(ctx, problem_of(ot.op, ot.type, longest), 0);
  struct Range {
    std::size_t offset, length;
  };
  for (const Range& r :
       {Range{0, 1}, Range{step, 1}, Range{step, 2}, Range{3 * step, 17}, Range{5 * step, 255},
        Range{7 * step, 257}, Range{11 * step, 1023}, Range{2 * step, 7919},
        Range{13 * step, 65537}, Range{step, longest}, Range{13 * step, longest}}) {
    CAPTURE(r.offset, r.length);
    const Value want = reference_reduce(slice(a, r.offset, r.length), ot.op);
    require_same(run_range(*big, in, r.offset, r.length), want);
    if (r.length == 2 || r.length == 257 || r.length == 65537) {  // a plan made for the range
      const auto exact = v.plan(ctx, problem_of(ot.op, ot.type, r.length), 0);
      require_same(run_range(*exact, in, r.offset, r.length), want);
    }
  }
  // A plan whose kernels take the range's first element: any element offset (rows of 1000).
  if (big->any_start()) {
    for (const Range& r : {Range{1, 1}, Range{1, 300}, Range{3, 4099}, Range{step + 5, 257},
                           Range{1000, 7919}, Range{3000, 65537}, Range{7, longest}}) {
      CAPTURE(r.offset, r.length);
      require_same(run_range(*big, in, r.offset, r.length),
                   reference_reduce(slice(a, r.offset, r.length), ot.op));
    }
  }
  // Two plans of one problem in flight on one queue, on two chunks, twice over before either is
  // read: each keeps its own scratch (partials, tickets).
  const auto other = v.plan(ctx, problem_of(ot.op, ot.type, longest), 0);
  std::vector<unsigned char> ra(16, 0xA5), rb(16, 0xA5);
  const cl::Buffer outa = upload(ra), outb = upload(rb);
  std::vector<cl::Event> events;
  for (int round = 0; round < 2; ++round) {
    big->enqueue(in, 0, longest, outa, events);
    other->enqueue(in, 13 * step, longest, outb, events);
  }
  ctx.queue().enqueueReadBuffer(outa, CL_TRUE, 0, 16, ra.data());
  ctx.queue().enqueueReadBuffer(outb, CL_TRUE, 0, 16, rb.data());
  for (const auto& [bytes, offset] : {std::pair{&ra, std::size_t{0}}, std::pair{&rb, 13 * step}}) {
    CAPTURE(offset);
    Value got = Value::from_bytes(big->problem().acc_type, bytes->data());
    if (is_arg_op(ot.op)) std::memcpy(&got.index, bytes->data() + 8, 8);
    require_same(got, reference_reduce(slice(a, offset, longest), ot.op));
  }
}

TEST_CASE("a reduction plan refuses ranges it cannot run", "[reduce][plan]") {
  Context& ctx = device_context();
  const HostArray a = generate(DType::kInt32, 4096, 3);
  const cl::Buffer in = upload(a.bytes);
  cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, 16);
  std::vector<cl::Event> events;
  struct Case {
    std::size_t offset, length;
    const char* says;
  };
  const std::size_t step = ctx.base_align() / 4;
  // topdown's ranges are sub-buffers, at the base alignment; fast's any element offset.
  for (const char* variant : {"topdown", "fast"}) {
    const auto plan =
        find_reduce_variant(variant)->plan(ctx, problem_of(Op::kSum, DType::kInt32, 1000), 0);
    CHECK(plan->any_start() == (std::string(variant) == "fast"));
    for (const Case& c :
         {Case{0, 0, "cannot reduce 0"}, Case{0, 1001, "cannot reduce 1001"},
          Case{4096 - 10, 20, "pass the end of a buffer"},
          Case{4097, 1, "pass the end of a buffer"}, Case{1, 100, "base address alignment"},
          Case{step + 1, 100, "base address alignment"}}) {
      if (plan->any_start() && std::string(c.says) == "base address alignment") continue;
      CAPTURE(variant, c.offset, c.length);
      try {
        plan->enqueue(in, c.offset, c.length, out, events);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.category() == Errc::kUsage);
        CHECK_THAT(e.what(), ContainsSubstring(c.says));
      }
    }
  }
  try {
    find_reduce_variant("topdown")->plan(ctx, problem_of(Op::kSum, DType::kInt32, 0), 0);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kUsage);
  }
}

// Small enough for Oclgrind (tests/oclgrind.sh runs it): fast's plans at element offsets that
// are not vector-aligned (a head before the first vector), in both shapes over 3 groups.
TEST_CASE("fast: plans at any element offset, small", "[.oclgrind]") {
  // A context of its own: the shared one lives until exit, past Oclgrind's own teardown.
  Context ctx(select_device(list_devices(), clreduce::test::test_device_spec()),
              CLREDUCE_SOURCE_KERNEL_DIR, false, tuning_from_env());
  for (const char* shape : {"gpu", "cpu"}) {
    const TuningGuard force(ctx, "fast-shape", shape);
    const TuningGuard groups(ctx, "fast-groups", "3");
    for (const Op op : {Op::kSum, Op::kArgMin}) {
      const DType type = op == Op::kSum ? DType::kInt32 : DType::kFloat;
      const HostArray a = generate(type, 400, 11);
      cl::Buffer in(ctx.context(), CL_MEM_READ_WRITE, a.bytes.size());
      ctx.queue().enqueueWriteBuffer(in, CL_TRUE, 0, a.bytes.size(), a.bytes.data());
      const auto plan = find_reduce_variant("fast")->plan(ctx, problem_of(op, type, 300),
                                                          std::string(shape) == "gpu" ? 16 : 1);
      for (const std::size_t first : {1, 3, 97}) {
        CAPTURE(shape, op_name(op), first);
        std::vector<unsigned char> bytes(16, 0xA5);
        cl::Buffer out(ctx.context(), CL_MEM_READ_WRITE, 16);
        ctx.queue().enqueueWriteBuffer(out, CL_TRUE, 0, 16, bytes.data());
        std::vector<cl::Event> events;
        plan->enqueue(in, first, 300, out, events);
        ctx.queue().enqueueReadBuffer(out, CL_TRUE, 0, 16, bytes.data());
        Value got = Value::from_bytes(plan->problem().acc_type, bytes.data());
        if (is_arg_op(op)) std::memcpy(&got.index, bytes.data() + 8, 8);
        require_same(got, reference_reduce(slice(a, first, 300), op));
      }
    }
  }
}

// mpi_ranks_main.cpp: run/ranks.hpp's MPI module, run as R ranks by `mpirun -n R` (tests/run/
// mpi_ranks.sh) or as one process without a launcher (the one-rank fallback, MPI never touched).
// Every rank checks its own results against what a sequential pass over the whole array (or over
// every rank's piece, which each rank rebuilds) gives; the verdict is the AND over ranks.
//   usage: clreduce_mpi_ranks EXPECTED_RANKS SCRATCH_DIR
// Exit 0 when every check passed on every rank, 1 otherwise.
#include <sys/stat.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "clreduce/error.hpp"
#include "io/npy.hpp"
#include "run/fold.hpp"
#include "run/ranks.hpp"
#include "verify/exact_sum.hpp"

#if CLREDUCE_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

using namespace clreduce;

namespace {

Ranks g;
int g_checks = 0, g_failed = 0;

#define CHECK(cond) check((cond), #cond, __LINE__, "")
#define CHECK_MSG(cond, msg) check((cond), #cond, __LINE__, (msg))

void check(bool ok, const char* what, int line, const std::string& msg) {
  ++g_checks;
  if (ok) return;
  ++g_failed;
  std::fprintf(stderr, "rank %d of %d: FAILED line %d: %s %s\n", g.rank, g.size, line, what,
               msg.c_str());
}

std::uint64_t bits(double d) {
  std::uint64_t b;
  std::memcpy(&b, &d, 8);
  return b;
}
double nan_with(std::uint64_t payload, bool negative) {
  const std::uint64_t b =
      (negative ? 0xfff0000000000000ull : 0x7ff0000000000000ull) | 0x0008000000000000ull | payload;
  double d;
  std::memcpy(&d, &b, 8);
  return d;
}

// Two values are the same when their type, index and the bits of the used field agree.
bool same(const Value& a, const Value& b) {
  if (a.type != b.type || a.index != b.index) return false;
  if (is_float(a.type)) return bits(a.f) == bits(b.f);
  return is_signed(a.type) ? a.i == b.i : a.u == b.u;
}
std::string show(const Value& v) {
  return dtype_name(v.type) + " " + v.str() + " index " + std::to_string(v.index) + " bits " +
         std::to_string(is_float(v.type) ? bits(v.f) : v.u);
}

template <class T> Value element(T x, std::int64_t index, Op op) {
  Value v;
  if constexpr (std::is_floating_point_v<T>) {
    v.type = std::is_same_v<T, float> ? DType::kFloat : DType::kDouble;
    v.f = static_cast<double>(x);
  } else if constexpr (std::is_signed_v<T>) {
    v.type = sizeof(T) == 4 ? DType::kInt32 : DType::kInt64;
    v.i = x;
  } else {
    v.type = sizeof(T) == 4 ? DType::kUInt32 : DType::kUInt64;
    v.u = x;
  }
  v.index = is_arg_op(op) ? index : -1;
  return v;
}

// This rank's slice of xs reduced with fold_values, its index global, then combined over ranks.
template <class T> Combined reduce_slice(Op op, DType acc, const std::vector<T>& xs) {
  const Slice s = rank_slice(xs.size(), g.rank, g.size);
  Value mine;
  mine.type = acc;
  for (std::uint64_t k = 0; k < s.count; ++k) {
    const std::uint64_t i = s.first + k;
    const Value e = convert_value(element(xs[i], static_cast<std::int64_t>(i), op), acc);
    mine = k == 0 ? e : fold_values(op, mine, e);
  }
  return allreduce_value(op, mine, s.count == 0);
}

void test_rank_slice() {
  for (int R = 1; R <= 6; ++R)
    for (std::uint64_t n : {0ull, 1ull, 2ull, 5ull, 6ull, 7ull, 100ull, 1000003ull}) {
      std::uint64_t next = 0, longest = 0, shortest = n;
      for (int r = 0; r < R; ++r) {
        const Slice s = rank_slice(n, r, R);
        CHECK_MSG(s.first == next, "n " + std::to_string(n) + " R " + std::to_string(R));
        next = s.first + s.count;
        longest = std::max(longest, s.count);
        shortest = std::min(shortest, s.count);
        // The first n % R ranks are one longer.
        CHECK(s.count == n / static_cast<std::uint64_t>(R) +
                             (static_cast<std::uint64_t>(r) < n % static_cast<std::uint64_t>(R)));
      }
      CHECK_MSG(next == n, "n " + std::to_string(n) + " R " + std::to_string(R));
      CHECK(longest - shortest <= 1);
    }
  // n < R: the last ranks own nothing.
  const Slice last = rank_slice(2, 2, 3);
  CHECK(last.count == 0 && last.first == 2);
  const Slice mine = rank_slice(7, g.rank, g.size);
  CHECK(mine.count ==
        7 / static_cast<std::uint64_t>(g.size) +
            (static_cast<std::uint64_t>(g.rank) < 7 % static_cast<std::uint64_t>(g.size)));
}

// A split scan's slices: rank 0's begins with the first piece, the rest as rank_slice() cuts
// the remainder; together they tile [0, n) in rank order. The piece weighs in / (in + acc).
void test_split_slices() {
  CHECK(split_first_piece(1000, 1, 4, 8) == 0);  // one rank: no split
  // 1/3 over 2 + 1/3: n / 7, then a multiple of 1024 elements.
  CHECK(split_first_piece(7000000, 2, 4, 8) == 1000000 - 1000000 % 1024);
  CHECK(split_first_piece(1000000, 2, 4, 4) == 200000 - 200000 % 1024);  // 1/2 over 2 + 1/2
  CHECK(split_first_piece(7 * 2047, 2, 4, 8) == 2047);                   // under 2048: not rounded
  CHECK(split_first_piece(7 * 4000, 2, 8, 8) == 4000 * 7 / 5 - 4000 * 7 / 5 % 1024);
  CHECK(split_first_piece(3, 2, 4, 8) == 0);  // too short to leave the piece an element
  CHECK(split_first_piece(0, 3, 8, 8) == 0);
  CHECK(split_first_piece(7000000, 2, 4, 8, 0.25) == 777778 - 777778 % 1024);  // 1/4 over 2 + 1/4
  for (int R = 2; R <= 5; ++R)
    for (std::uint64_t n : {0ull, 1ull, 2ull, 7ull, 100ull, 1000003ull}) {
      const std::uint64_t piece = split_first_piece(n, R, 4, 8);
      CHECK(piece <= n);
      std::uint64_t next = 0;
      for (int r = 0; r < R; ++r) {
        const Slice s = rank_slice(n, r, R, piece), rest = rank_slice(n - piece, r, R);
        CHECK_MSG(s.first == next, "n " + std::to_string(n) + " R " + std::to_string(R));
        CHECK(s.count == rest.count + (r == 0 ? piece : 0));
        next = s.first + s.count;
      }
      CHECK_MSG(next == n, "n " + std::to_string(n) + " R " + std::to_string(R));
    }
  bool threw = false;
  try {
    rank_slice(5, 0, 2, 6);  // a piece longer than the array
  } catch (const Error& e) {
    threw = e.category() == Errc::kInternal;
  }
  CHECK(threw);
}

// Bytes from rank 0 to the last rank and back (in pieces past 1 GiB only in size; here several
// sizes, each byte checked), and the last rank's carry broadcast to every rank.
void test_send_bytes() {
  if (!g.many()) {
    bool threw = false;
    unsigned char b = 0;
    try {
      send_bytes(0, &b, 1);
    } catch (const Error& e) {
      threw = e.category() == Errc::kInternal;
    }
    CHECK_MSG(threw, "one rank sends nothing");
    return;
  }
  const int last = g.size - 1;
  for (std::uint64_t n : {0ull, 1ull, 4097ull, 3000001ull}) {
    std::vector<unsigned char> v(n);
    for (std::uint64_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 131 + n);
    if (g.rank == 0) send_bytes(last, v.data(), n);
    if (g.rank == last) {
      std::vector<unsigned char> got(n, 0);
      recv_bytes(0, got.data(), n);
      CHECK_MSG(got == v, "to the last rank, " + std::to_string(n) + " bytes");
      for (auto& c : got) c = static_cast<unsigned char>(c ^ 0x5A);
      send_bytes(0, got.data(), n);
    }
    if (g.rank == 0) {
      std::vector<unsigned char> back(n, 0);
      recv_bytes(last, back.data(), n);
      for (auto& c : v) c = static_cast<unsigned char>(c ^ 0x5A);
      CHECK_MSG(back == v, "back from the last rank, " + std::to_string(n) + " bytes");
    }
  }
  ScanCarry c;
  if (g.rank == last) {
    c.value.type = DType::kInt64;
    c.value.i = -1234567890123;
    c.empty = false;
    c.reset = true;
  }
  const ScanCarry got = bcast_carry(c, last);
  CHECK(!got.empty && got.reset && got.value.type == DType::kInt64 &&
        got.value.i == -1234567890123);
}

void test_allreduce() {
  const int R = g.size;
  const auto per = [&](std::size_t k) { return k * static_cast<std::size_t>(R); };

  // Sum of int32 in int64: 10R copies of INT32_MAX.
  {
    std::vector<std::int32_t> xs(per(10) + 1, std::numeric_limits<std::int32_t>::max());
    const Combined c = reduce_slice(Op::kSum, DType::kInt64, xs);
    CHECK(c.has && c.value.type == DType::kInt64);
    CHECK_MSG(c.value.i == static_cast<std::int64_t>(xs.size()) * 2147483647, show(c.value));
  }
  // int64 sums wrap: every element near INT64_MAX / 2.
  {
    std::vector<std::int64_t> xs(per(3) + 2, std::numeric_limits<std::int64_t>::max() / 2 + 12345);
    std::uint64_t want = 0;
    for (auto x : xs) want += static_cast<std::uint64_t>(x);
    const Combined c = reduce_slice(Op::kSum, DType::kInt64, xs);
    CHECK_MSG(c.has && c.value.i == static_cast<std::int64_t>(want), show(c.value));
  }
  // int32 accumulated in int32 (--acc int32) wraps at 32 bits; uint64 products wrap.
  {
    std::vector<std::int32_t> xs(per(4) + 3, 2000000000);
    std::uint32_t want = 0;
    for (auto x : xs) want += static_cast<std::uint32_t>(x);
    const Combined c = reduce_slice(Op::kSum, DType::kInt32, xs);
    CHECK_MSG(c.value.type == DType::kInt32 && c.value.i == static_cast<std::int32_t>(want),
              show(c.value));
    std::vector<std::uint64_t> ys(per(5) + 1);
    std::uint64_t prod = 1;
    for (std::size_t i = 0; i < ys.size(); ++i) prod *= (ys[i] = 0x9e3779b97f4a7c15ull + 2 * i);
    const Combined p = reduce_slice(Op::kProd, DType::kUInt64, ys);
    CHECK_MSG(p.value.u == prod, show(p.value));
  }
  // argmin / argmax: ties in every rank but the first; the first index wins.
  for (const bool from_rank0 : {true, false}) {
    std::vector<double> xs(per(6) + 1, 5.0);
    std::vector<std::int32_t> ys(xs.size(), -3);
    std::int64_t want = -1;
    for (int r = from_rank0 ? 0 : 1; r < R; ++r) {
      const Slice s = rank_slice(xs.size(), r, R);
      const std::uint64_t at = s.first + s.count / 2;
      xs[at] = 1.0;
      ys[at] = 77;
      if (want < 0) want = static_cast<std::int64_t>(at);
    }
    if (want < 0) {  // one rank: nothing after rank 0; put the tie at two places of it
      xs[2] = xs[4] = 1.0;
      ys[2] = ys[4] = 77;
      want = 2;
    }
    const Combined a = reduce_slice(Op::kArgMin, DType::kDouble, xs);
    CHECK_MSG(a.has && a.value.index == want && a.value.f == 1.0, show(a.value));
    const Combined b = reduce_slice(Op::kArgMax, DType::kInt32, ys);
    CHECK_MSG(b.value.index == want && b.value.i == 77, show(b.value));
    const Combined m = reduce_slice(Op::kMin, DType::kDouble, xs);
    CHECK_MSG(m.value.f == 1.0 && m.value.index == -1, show(m.value));
  }
  // NaN: min and max return the first NaN (its payload tells which), argmin its index.
  for (const int first_nan_rank : {0, 1}) {
    if (first_nan_rank >= R) continue;
    std::vector<double> xs(per(4) + 2);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i % 7) - 3.0;
    double want_nan = 0.0;
    std::int64_t want_index = -1;
    for (int r = first_nan_rank; r < R; ++r) {
      const Slice s = rank_slice(xs.size(), r, R);
      const std::uint64_t at = s.first + s.count - 1;
      xs[at] = nan_with(static_cast<std::uint64_t>(r + 1), r % 2 == 1);
      if (want_index < 0) {
        want_index = static_cast<std::int64_t>(at);
        want_nan = xs[at];
      }
    }
    for (Op op : {Op::kMin, Op::kMax}) {
      const Combined c = reduce_slice(op, DType::kDouble, xs);
      CHECK_MSG(std::isnan(c.value.f) && bits(c.value.f) == bits(want_nan), show(c.value));
    }
    for (Op op : {Op::kArgMin, Op::kArgMax}) {
      const Combined c = reduce_slice(op, DType::kDouble, xs);
      CHECK_MSG(c.value.index == want_index && bits(c.value.f) == bits(want_nan), show(c.value));
    }
  }
  // Fewer elements than ranks: the ranks with none contribute nothing; no elements at all: has
  // is false on every rank.
  {
    // The last rank owns none; the minimum from the middle on, its first index wins.
    std::vector<double> xs(static_cast<std::size_t>(std::max(1, R - 1)), 4.0);
    for (std::size_t i = xs.size() / 2; i < xs.size(); ++i) xs[i] = -1.0;
    const Combined c = reduce_slice(Op::kArgMin, DType::kDouble, xs);
    CHECK_MSG(
        c.has && c.value.index == static_cast<std::int64_t>(xs.size() / 2) && c.value.f == -1.0,
        show(c.value));
    const Combined none = reduce_slice(Op::kMax, DType::kDouble, std::vector<double>{});
    CHECK(!none.has);
    CHECK(c.ms >= 0.0);
  }
  // Ranks' results in rank order: rank r contributes r's own value; empty ranks in between.
  {
    Value v;
    v.type = DType::kFloat;
    const bool empty = g.rank % 3 == 1;
    v.f = empty ? 999.0 : 10.0 - g.rank % 2;  // ties on every other rank
    v.index = 100 * g.rank;
    std::vector<Value> all;
    for (int r = 0; r < R; ++r)
      if (r % 3 != 1) {
        Value w = v;
        w.f = 10.0 - r % 2;
        w.index = 100 * r;
        all.push_back(w);
      }
    Value want = all[0];
    for (std::size_t k = 1; k < all.size(); ++k) want = fold_values(Op::kArgMin, want, all[k]);
    const Combined c = allreduce_value(Op::kArgMin, v, empty);
    CHECK_MSG(c.has && same(c.value, want), show(c.value) + " want " + show(want));
  }
}

ScanCarry carry(double x, bool reset, bool empty) {
  ScanCarry c;
  c.value.type = DType::kDouble;
  c.value.f = x;
  c.reset = reset;
  c.empty = empty;
  return c;
}

// This rank's slice of xs as an exact state, added over ranks and rounded: exact_sum of xs, bit
// for bit, where the slices' rounded sums folded in floating point would round twice.
template <class T> void check_exact(const std::vector<T>& xs, const char* what) {
  const Slice s = rank_slice(xs.size(), g.rank, g.size);
  HostArray slice;
  slice.type = std::is_same_v<T, float> ? DType::kFloat : DType::kDouble;
  slice.n = s.count;
  slice.bytes.resize(s.count * sizeof(T));
  if (s.count) std::memcpy(slice.bytes.data(), xs.data() + s.first, s.count * sizeof(T));
  const Combined c = allreduce_exact(slice.type, exact_state(slice));
  HostArray whole = slice;
  whole.n = xs.size();
  whole.bytes.resize(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(whole.bytes.data(), xs.data(), xs.size() * sizeof(T));
  const Value want = exact_sum(whole);
  CHECK_MSG(c.has == !xs.empty(), what);
  CHECK_MSG(same_bits(c.value, want) && std::signbit(c.value.f) == std::signbit(want.f),
            std::string(what) + ": " + show(c.value) + ", expected " + show(want));
}

template <class T> void exact_cases() {
  using L = std::numeric_limits<T>;
  const T mx = L::max(), den = L::denorm_min(), inf = L::infinity(), nan = L::quiet_NaN();
  const T half = std::ldexp(T(1), -L::digits), z = T(0);
  // 6 elements: every rank of 2 and 3 owns some; the decisive one lands on the last rank.
  check_exact<T>({T(1), z, z, half, z, den}, "a tie broken on the last rank");
  check_exact<T>({T(1), z, z, half, z, -den}, "a tie broken downwards");
  check_exact<T>({mx, z, z, mx, z, -mx}, "overflow on a rank and back");
  check_exact<T>({T(1e30), z, z, T(3.25), z, T(-1e30)}, "cancellation across ranks");
  check_exact<T>({inf, z, z, z, z, -inf}, "+inf and -inf on two ranks");
  check_exact<T>({T(1), z, nan, z, z, T(2)}, "NaN on one rank");
  check_exact<T>({-z, -z, -z, -z, -z, -z}, "every rank -0");
  check_exact<T>({-z, -z, -z, -z, -z, z}, "+0 on the last rank");
  check_exact<T>({-z}, "-0 on rank 0, the others empty");
  check_exact<T>({}, "every rank empty");
}

void test_allreduce_exact() {
  exact_cases<float>();
  exact_cases<double>();
}

void test_exscan_carry() {
  const int R = g.size;
  // Patterns of (reset, empty) over ranks, by rank: none; a reset on rank 1; rank 1 empty and a
  // reset on rank 2; rank 0 empty; every rank empty; resets everywhere.
  for (int pattern = 0; pattern < 6; ++pattern)
    for (Op op : {Op::kSum, Op::kMin, Op::kMax, Op::kProd}) {
      std::vector<ScanCarry> pieces;
      for (int r = 0; r < R; ++r) {
        bool reset = false, empty = false;
        if (pattern == 1) reset = r == 1;
        if (pattern == 2) {
          empty = r == 1;
          reset = r == 2;
        }
        if (pattern == 3) empty = r == 0;
        if (pattern == 4) empty = true;
        if (pattern == 5) reset = true;
        // Sums in an order that rounds differently than other orders would.
        double x = r == 0 ? 1e16 : (r % 2 ? 1.0 : -1e16 + 3.0 * r);
        if (op == Op::kMin || op == Op::kMax) x = r == 2 ? nan_with(9, false) : 2.0 - r;
        if (op == Op::kProd) x = 1.5 + r;
        pieces.push_back(carry(x, reset, empty));
      }
      const std::vector<ScanCarry> want = exclusive_carries(op, pieces);
      double ms = -1.0;
      const ScanCarry got = exscan_carry(op, pieces[static_cast<std::size_t>(g.rank)], &ms);
      const ScanCarry& w = want[static_cast<std::size_t>(g.rank)];
      const std::string what = "pattern " + std::to_string(pattern) + " op " + op_name(op);
      CHECK_MSG(got.empty == w.empty, what);
      if (!w.empty) {
        CHECK_MSG(got.reset == w.reset, what);
        CHECK_MSG(same(got.value, w.value),
                  what + ": " + show(got.value) + " want " + show(w.value));
      }
      CHECK(ms >= 0.0);
      if (g.rank == 0) CHECK(got.empty);
    }
  // A hand-made case: sums of int64 with a reset on rank 2 (ranks 0, 1 then restart).
  {
    ScanCarry c;
    c.value.type = DType::kInt64;
    c.value.i = 10 + g.rank;
    c.reset = g.rank == 2;
    c.empty = false;
    const ScanCarry got = exscan_carry(Op::kSum, c);
    if (g.rank == 1) CHECK(!got.empty && got.value.i == 10);
    if (g.rank == 2) CHECK(!got.empty && got.value.i == 21);
    if (g.rank == 3) CHECK(!got.empty && got.value.i == 12 && got.reset);
  }
}

ScanRefState ref_state(int r, int pattern) {
  ScanRefState s;
  s.empty = pattern == 1 && r == 1;
  s.reset = pattern == 2 && r == 1;
  s.exact.type = DType::kInt64;
  s.exact.i = 1000 * (r + 1);
  s.run = 0.5L * (r + 1);
  s.mag.abs_sum = 2.0L * (r + 1);
  s.mag.big = 3.0L + r;
  s.mag.small = 0.5L;
  s.mag.zero = r == 0;
  s.mag.pos_inf = r == 2;
  s.count = static_cast<std::uint64_t>(10 + r);
  return s;
}

void test_exscan_ref_state() {
  for (int pattern = 0; pattern < 3; ++pattern) {
    ScanRefState want;  // empty
    for (int r = 0; r < g.rank; ++r) want = fold_ref_state(Op::kSum, want, ref_state(r, pattern));
    const ScanRefState got = exscan_ref_state(Op::kSum, ref_state(g.rank, pattern));
    const std::string what = "pattern " + std::to_string(pattern);
    CHECK_MSG(got.empty == want.empty, what);
    if (want.empty) continue;
    CHECK_MSG(same(got.exact, want.exact) && got.run == want.run && got.count == want.count &&
                  got.reset == want.reset,
              what);
    CHECK_MSG(got.mag.abs_sum == want.mag.abs_sum && got.mag.big == want.mag.big &&
                  got.mag.small == want.mag.small && got.mag.zero == want.mag.zero &&
                  got.mag.pos_inf == want.mag.pos_inf && got.mag.nan == want.mag.nan,
              what);
  }
  // By hand, no resets: rank r gets the earlier ranks' totals.
  const ScanRefState got = exscan_ref_state(Op::kSum, ref_state(g.rank, 0));
  const int r = g.rank;
  if (r == 0) CHECK(got.empty);
  if (r >= 1) {
    CHECK(got.exact.i == 1000 * r * (r + 1) / 2);
    CHECK(got.run == 0.25L * r * (r + 1));
    CHECK(got.count == static_cast<std::uint64_t>(10 * r + r * (r - 1) / 2));
    CHECK(got.mag.zero && got.mag.pos_inf == (r >= 3));
    long double big = 1.0L;
    for (int k = 0; k < r; ++k) big *= 3.0L + k;
    CHECK(got.mag.big == big);
  }
  // fold_ref_state itself: a reset in the later keeps the later; empties pass through.
  ScanRefState a = ref_state(0, 0), b = ref_state(1, 0);
  b.reset = true;
  CHECK(fold_ref_state(Op::kSum, a, b).run == b.run);
  ScanRefState e;
  CHECK(fold_ref_state(Op::kProd, a, e).run == a.run);
  CHECK(fold_ref_state(Op::kProd, e, a).count == a.count);
  b.reset = false;
  const ScanRefState p = fold_ref_state(Op::kProd, a, b);
  CHECK(p.run == a.run * b.run && p.mag.small == 0.25L && p.count == a.count + b.count);
}

void test_small_collectives() {
  const int R = g.size;
  const std::vector<double> all = gather_ranks(1.5 * g.rank + 0.25);
  CHECK(all.size() == static_cast<std::size_t>(R));
  for (int r = 0; r < R && r < static_cast<int>(all.size()); ++r)
    CHECK(all[static_cast<std::size_t>(r)] == 1.5 * r + 0.25);
  CHECK(all_ranks(true));
  CHECK(all_ranks(g.rank != R - 1) == false);
  CHECK(sum_ranks(static_cast<std::uint64_t>(g.rank) + 1) ==
        static_cast<std::uint64_t>(R) * (static_cast<std::uint64_t>(R) + 1) / 2);
  barrier_ranks();
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

template <class T>
void round_trip(const std::string& dir, std::uint64_t n, DType type, std::string name = "") {
  if (name.empty()) name = "a_" + dtype_name(type) + "_" + std::to_string(n) + ".npy";
  const std::string path = dir + "/" + name;
  std::vector<T> global(n);
  for (std::uint64_t i = 0; i < n; ++i) global[i] = static_cast<T>(3 * static_cast<double>(i) - 7);
  const Slice s = rank_slice(n, g.rank, g.size);
  HostArray slice;
  slice.type = type;
  slice.n = s.count;
  slice.bytes.allocate_uninit(s.count * sizeof(T));
  if (s.count) std::memcpy(slice.bytes.data(), global.data() + s.first, s.count * sizeof(T));
  write_npy_ranks(path, slice, s.first, n, g);
  barrier_ranks();
  // The file, byte for byte: write_npy's header for the whole, then every element in order.
  const std::string want = npy_header(type, n) +
                           std::string(reinterpret_cast<const char*>(global.data()), n * sizeof(T));
  const std::string got = read_all(path);
  CHECK_MSG(got.size() == want.size(), path + ": " + std::to_string(got.size()) + " bytes");
  CHECK_MSG(got == want, path);
  CHECK(got.compare(0, 6, "\x93NUMPY") == 0 && (got.size() - n * sizeof(T)) % 64 == 0);
  const NpyInfo info = npy_info(path);
  CHECK(info.type == type && info.n == n && info.data_at == npy_header(type, n).size() &&
        !info.big_endian);
  const HostArray back = read_npy_slice(path, s.first, s.count);
  CHECK(back.type == type && back.n == s.count && back.bytes.size() == s.count * sizeof(T));
  CHECK(s.count == 0 ||
        std::memcmp(back.bytes.data(), global.data() + s.first, s.count * sizeof(T)) == 0);
  // Slices of 1 MiB or more are mapped, not read.
  CHECK(back.bytes.is_view() == (s.count * sizeof(T) >= (1u << 20)));
  // Another rank's slice, read by this one.
  const Slice o = rank_slice(n, (g.rank + 1) % g.size, g.size);
  const HostArray other = read_npy_slice(path, o.first, o.count);
  CHECK(o.count == 0 ||
        std::memcmp(other.bytes.data(), global.data() + o.first, o.count * sizeof(T)) == 0);
  barrier_ranks();
}

void test_npy(const std::string& dir) {
  if (g.root()) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  barrier_ranks();
  round_trip<std::int32_t>(dir, 1000 * static_cast<std::uint64_t>(g.size) + 7, DType::kInt32);
  round_trip<double>(dir, static_cast<std::uint64_t>(g.size) - 1, DType::kDouble);  // an empty rank
  round_trip<std::uint64_t>(dir, 0, DType::kUInt64);
  round_trip<double>(dir, 300000 * static_cast<std::uint64_t>(g.size) + 1, DType::kDouble);
  // Overwriting with a shorter array: the old content is gone, its permissions stay.
  const std::string over = dir + "/over.npy";
  round_trip<std::int32_t>(dir, 1000 * static_cast<std::uint64_t>(g.size) + 7, DType::kInt32,
                           "over.npy");
  if (g.root()) ::chmod(over.c_str(), 0640);
  barrier_ranks();
  round_trip<float>(dir, 5, DType::kFloat, "over.npy");
  struct stat st {};
  CHECK(::stat(over.c_str(), &st) == 0 && (st.st_mode & 07777) == 0640);
  // A directory that does not exist: every rank throws, nothing is written.
  bool threw = false;
  try {
    HostArray empty;
    const Slice s = rank_slice(0, g.rank, g.size);
    write_npy_ranks(dir + "/missing/x.npy", empty, s.first, 0, g);
  } catch (const Error& e) {
    // An input error, as write_npy's: the rank that found the cause says it; the rest, that
    // another rank failed.
    const std::string what = e.what();
    threw = g.root() || !g.many()
                ? e.category() == Errc::kInput && what.find("does not exist") != std::string::npos
                : e.category() == Errc::kInput && what.find("another rank") != std::string::npos;
    CHECK_MSG(threw, what);
  }
  CHECK(threw);
  CHECK(!std::filesystem::exists(dir + "/missing"));
  // A slice past the end is refused.
  threw = false;
  try {
    read_npy_slice(over, 3, 3);
  } catch (const Error& e) {
    threw = e.category() == Errc::kInput &&
            std::string(e.what()).find("past the end") != std::string::npos;
  }
  CHECK(threw);
  barrier_ranks();
  // No temporary file is left behind.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    ++files;
    CHECK_MSG(entry.path().filename().string()[0] != '.', entry.path().string());
  }
  CHECK(files == 5);
}

}  // namespace

int main(int argc, char** argv) {
  g = init_ranks(&argc, &argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s EXPECTED_RANKS SCRATCH_DIR\n", argv[0]);
    abort_ranks(2);
  }
  const int expected = std::atoi(argv[1]);
  try {
    CHECK_MSG(g.size == expected, "size " + std::to_string(g.size));
    CHECK(g.rank >= 0 && g.rank < g.size);
    // One host: the ranks on it are every rank, in the same order.
    CHECK(g.local_size == g.size && g.local_rank == g.rank);
    CHECK(g.many() == (expected > 1) && g.root() == (g.rank == 0));
    CHECK(mpi_built() == (CLREDUCE_HAVE_MPI != 0));
    CHECK(mpi_built() ? mpi_library_version().rfind("Open MPI v", 0) == 0
                      : mpi_library_version().empty());
#if CLREDUCE_HAVE_MPI
    int initialised = 0;
    MPI_Initialized(&initialised);
    CHECK_MSG(initialised == (expected > 1 ? 1 : 0), "MPI is started only under a launcher");
#endif
    test_rank_slice();
    test_split_slices();
    test_send_bytes();
    test_allreduce();
    test_allreduce_exact();
    test_exscan_carry();
    test_exscan_ref_state();
    test_small_collectives();
    test_npy(std::string(argv[2]) + "/ranks" + std::to_string(g.size));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: unexpected exception: %s\n", g.rank, e.what());
    abort_ranks(1);
  }
  const bool ok = all_ranks(g_failed == 0);
  std::printf("rank %d of %d: %d checks, %d failed\n", g.rank, g.size, g_checks, g_failed);
  if (g.root()) std::printf("%s\n", ok ? "every rank passed" : "FAILED on some rank");
  finalize_ranks();
  return ok ? 0 : 1;
}

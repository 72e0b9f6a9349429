// ranks.cpp: MPI ranks through Open MPI (any MPI-3 library works), or one rank when clreduce was
// built without MPI or was not started by a launcher. Every combine is a user-defined,
// non-commutative MPI_Op over the bytes of a trivially copyable struct: MPI then applies it in
// rank order, as u = v op u with v (invec) from the lower ranks (MPI-3.1, 5.9.5), which is
// fold(earlier = invec, later = inoutvec) here.
#include "run/ranks.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <type_traits>

#include "clreduce/error.hpp"
#include "io/files.hpp"
#include "io/npy.hpp"
#include "io/text.hpp"

#if CLREDUCE_HAVE_MPI
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace clreduce {

namespace {

// min or max of two long doubles as the kernels treat NaN (the earlier NaN wins, then the later).
long double min_max(bool want_min, long double a, long double b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return want_min ? (b < a ? b : a) : (b > a ? b : a);
}

#if CLREDUCE_HAVE_MPI
Ranks g_ranks;       // this run's ranks (one until init_ranks() starts MPI)
bool g_mpi = false;  // MPI was initialised here (and not finalised yet)
Op g_op = Op::kSum;  // the operator the user-defined MPI ops apply (set before each call)

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// A rank's reduction result as bytes: the value and whether the rank had any elements.
struct RankValue {
  Value value;
  bool empty = true;
};
static_assert(std::is_trivially_copyable_v<RankValue>);
static_assert(std::is_trivially_copyable_v<ScanCarry>);
static_assert(std::is_trivially_copyable_v<ExactState>);

// earlier + later, exactly (integer addition: the order does not matter, but MPI's is kept).
ExactState fold_exact_states(Op, const ExactState& earlier, const ExactState& later) {
  ExactState r = earlier;
  exact_add(r, later);
  return r;
}
static_assert(std::is_trivially_copyable_v<ScanRefState>);

// earlier op later for ranks' results: an empty side gives the other.
RankValue fold_rank_values(Op op, const RankValue& earlier, const RankValue& later) {
  if (later.empty) return earlier;
  if (earlier.empty) return later;
  RankValue r;
  r.value = fold_values(op, earlier.value, later.value);
  r.empty = false;
  return r;
}

// A struct of trivially copyable bytes as an MPI type (contiguous bytes: every rank runs the same
// binary on the same machine type, long double included).
template <class T> MPI_Datatype bytes_type() {
  MPI_Datatype t;
  MPI_Type_contiguous(static_cast<int>(sizeof(T)), MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

// An exception cannot cross MPI's C frames: a fold that throws (a bug: ranks of different
// accumulator types) ends every rank.
[[noreturn]] void fold_failed(const char* what) {
  std::fprintf(stderr, "clreduce: internal error combining ranks' results: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 70);
  std::_Exit(70);
}

// inoutvec[k] = invec[k] op inoutvec[k], invec from the lower ranks.
template <class T, T (*Fold)(Op, const T&, const T&)>
void user_fold(void* invec, void* inoutvec, int* len, MPI_Datatype*) {
  try {
    const auto* in = static_cast<const T*>(invec);
    auto* inout = static_cast<T*>(inoutvec);
    for (int k = 0; k < *len; ++k) {
      T earlier, later;
      std::memcpy(&earlier, in + k, sizeof(T));
      std::memcpy(&later, inout + k, sizeof(T));
      const T r = Fold(g_op, earlier, later);
      std::memcpy(inout + k, &r, sizeof(T));
    }
  } catch (const std::exception& e) {
    fold_failed(e.what());
  }
}

// The collective call `call(type, mpi_op)` with the rank-order op Fold on T, timed.
template <class T, T (*Fold)(Op, const T&, const T&), class Call> double with_op(Op op, Call call) {
  MPI_Datatype type = bytes_type<T>();
  MPI_Op mpi_op;
  MPI_Op_create(&user_fold<T, Fold>, /*commute=*/0, &mpi_op);
  g_op = op;
  const auto t0 = std::chrono::steady_clock::now();
  call(type, mpi_op);
  const double ms = ms_since(t0);
  MPI_Op_free(&mpi_op);
  MPI_Type_free(&type);
  return ms;
}

// Zeroed storage for T (its padding too), then the value: what travels is fully initialised.
template <class T> T zeroed(const T& v) {
  T t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  t = v;
  return t;
}

bool started_by_launcher() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var)) return true;
  return false;
}

#endif

}  // namespace

bool mpi_built() { return CLREDUCE_HAVE_MPI != 0; }

std::string mpi_library_version() {
#if CLREDUCE_HAVE_MPI
  // One of the calls MPI allows before MPI_Init.
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, static_cast<std::size_t>(len > 0 ? len : 0));
  s = s.substr(0, s.find_first_of("\r\n"));
  // "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, ..." -> "Open MPI v4.1.4"
  s = s.substr(0, s.find(','));
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\0')) s.pop_back();
  return s;
#else
  return "";
#endif
}

Ranks init_ranks(int* argc, char*** argv) {
#if CLREDUCE_HAVE_MPI
  if (!g_mpi && started_by_launcher()) {
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    g_mpi = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_ranks.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks.size);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_ranks.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &g_ranks.local_rank);
    MPI_Comm_size(local, &g_ranks.local_size);
    MPI_Comm_free(&local);
  }
  return g_ranks;
#else
  (void)argc;
  (void)argv;
  return Ranks();
#endif
}

void finalize_ranks() {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    MPI_Finalize();
    g_mpi = false;
    g_ranks = Ranks();
  }
#endif
}

void abort_ranks(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#if CLREDUCE_HAVE_MPI
  if (g_mpi) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

Slice rank_slice(std::uint64_t n, int r, int R, std::uint64_t first_piece) {
  if (R < 1 || r < 0 || r >= R || first_piece > n)
    throw Error(Errc::kInternal, "internal: rank " + std::to_string(r) + " of " +
                                     std::to_string(R) + " ranks, a first piece of " +
                                     std::to_string(first_piece) + " of " + std::to_string(n));
  if (first_piece > 0) {
    Slice s = rank_slice(n - first_piece, r, R);
    if (r == 0)
      s.count += first_piece;
    else
      s.first += first_piece;
    return s;
  }
  const auto ur = static_cast<std::uint64_t>(r), uR = static_cast<std::uint64_t>(R);
  const std::uint64_t base = n / uR, extra = n % uR;
  Slice s;
  s.count = base + (ur < extra ? 1 : 0);
  s.first = ur * base + (ur < extra ? ur : extra);
  return s;
}

std::uint64_t split_first_piece(std::uint64_t n, int R, std::size_t in, std::size_t acc,
                                double weight) {
  if (R < 2 || in == 0) return 0;
  const double w = weight > 0 ? weight : static_cast<double>(in) / static_cast<double>(in + acc);
  const auto piece = static_cast<std::uint64_t>(
      std::llround(static_cast<double>(n) * (w / (w + static_cast<double>(R)))));
  // A whole number of 1024 elements where the piece is longer (so that rank 0's share starts
  // 4 KiB-aligned in its slice, as a CPU device takes memory in place).
  return std::min(piece >= 2048 ? piece - piece % 1024 : piece, n);
}

namespace {

// Pieces of at most 1 GiB (MPI counts are int), in order.
template <class Each> void in_pieces(std::uint64_t bytes, Each&& each) {
  for (std::uint64_t at = 0; at < bytes;) {
    const std::uint64_t k = std::min<std::uint64_t>(bytes - at, std::uint64_t{1} << 30);
    each(at, static_cast<int>(k));
    at += k;
  }
}

}  // namespace

void send_bytes(int to, const unsigned char* p, std::uint64_t n) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi && g_ranks.many()) {
    in_pieces(
        n, [&](std::uint64_t at, int k) { MPI_Send(p + at, k, MPI_BYTE, to, 1, MPI_COMM_WORLD); });
    return;
  }
#endif
  (void)p;
  throw Error(Errc::kInternal, "internal: " + std::to_string(n) + " bytes sent to rank " +
                                   std::to_string(to) + " without MPI ranks");
}

void recv_bytes(int from, unsigned char* p, std::uint64_t n) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi && g_ranks.many()) {
    in_pieces(n, [&](std::uint64_t at, int k) {
      MPI_Recv(p + at, k, MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    });
    return;
  }
#endif
  (void)p;
  throw Error(Errc::kInternal, "internal: " + std::to_string(n) + " bytes from rank " +
                                   std::to_string(from) + " without MPI ranks");
}

ScanCarry bcast_carry(const ScanCarry& mine, int root) {
  ScanCarry c = mine;
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    c = zeroed(mine);
    MPI_Bcast(&c, sizeof c, MPI_BYTE, root, MPI_COMM_WORLD);
  }
#else
  (void)root;
#endif
  return c;
}

Combined allreduce_value(Op op, const Value& mine, bool empty) {
  Combined c;
  c.value = mine;
  c.has = !empty;
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    RankValue v;
    v.value = mine;
    v.empty = empty;
    RankValue in = zeroed(v), out = zeroed(RankValue());
    c.ms = with_op<RankValue, fold_rank_values>(
        op, [&](MPI_Datatype t, MPI_Op o) { MPI_Allreduce(&in, &out, 1, t, o, MPI_COMM_WORLD); });
    c.value = out.value;
    c.has = !out.empty;
  }
#else
  (void)op;
#endif
  return c;
}

Combined allreduce_exact(DType acc, const ExactState& mine) {
  Combined c;
  ExactState all = mine;
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    ExactState in = zeroed(mine), out = zeroed(ExactState());
    c.ms = with_op<ExactState, fold_exact_states>(Op::kSum, [&](MPI_Datatype t, MPI_Op o) {
      MPI_Allreduce(&in, &out, 1, t, o, MPI_COMM_WORLD);
    });
    all = out;
  }
#endif
  c.value = exact_round(acc, all);
  c.has = !all.empty;
  return c;
}

Value last_of_ranks(const Value& mine, bool empty) {
  Value v = mine;
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    int me = empty ? -1 : g_ranks.rank, last = -1;
    MPI_Allreduce(&me, &last, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (last >= 0) MPI_Bcast(&v, sizeof v, MPI_BYTE, last, MPI_COMM_WORLD);
  }
#else
  (void)empty;
#endif
  return v;
}

ScanCarry exscan_carry(Op op, const ScanCarry& mine, double* ms) {
  ScanCarry r;  // empty: rank 0's, and the only rank's
  double t = 0.0;
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    ScanCarry in = zeroed(mine), out = zeroed(ScanCarry());
    t = with_op<ScanCarry, fold_carry>(op, [&](MPI_Datatype type, MPI_Op o) {
      MPI_Exscan(&in, &out, 1, type, o, MPI_COMM_WORLD);
    });
    if (g_ranks.rank > 0) r = out;  // MPI_Exscan leaves rank 0's undefined
  }
#else
  (void)op;
  (void)mine;
#endif
  if (ms) *ms = t;
  return r;
}

ScanRefState fold_ref_state(Op op, const ScanRefState& earlier, const ScanRefState& later) {
  if (later.empty) return earlier;
  if (earlier.empty || later.reset) return later;
  ScanRefState r;
  r.exact = fold_values(op, earlier.exact, later.exact);
  switch (op) {
    case Op::kSum: r.run = earlier.run + later.run; break;
    case Op::kProd: r.run = earlier.run * later.run; break;
    case Op::kMin:
    case Op::kArgMin: r.run = min_max(true, earlier.run, later.run); break;
    case Op::kMax:
    case Op::kArgMax: r.run = min_max(false, earlier.run, later.run); break;
  }
  r.mag = earlier.mag;
  r.mag.abs_sum += later.mag.abs_sum;
  r.mag.big *= later.mag.big;
  r.mag.small *= later.mag.small;
  r.mag.nan = r.mag.nan || later.mag.nan;
  r.mag.pos_inf = r.mag.pos_inf || later.mag.pos_inf;
  r.mag.neg_inf = r.mag.neg_inf || later.mag.neg_inf;
  r.mag.zero = r.mag.zero || later.mag.zero;
  r.count = earlier.count + later.count;
  r.reset = earlier.reset;
  r.empty = false;
  return r;
}

ScanRefState exscan_ref_state(Op op, const ScanRefState& mine) {
  ScanRefState r;  // empty: rank 0's, and the only rank's
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    ScanRefState in = zeroed(mine), out = zeroed(ScanRefState());
    with_op<ScanRefState, fold_ref_state>(op, [&](MPI_Datatype type, MPI_Op o) {
      MPI_Exscan(&in, &out, 1, type, o, MPI_COMM_WORLD);
    });
    if (g_ranks.rank > 0) r = out;
  }
#else
  (void)op;
  (void)mine;
#endif
  return r;
}

bool all_ranks(bool mine) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    int in = mine ? 1 : 0, out = 0;
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return out != 0;
  }
#endif
  return mine;
}

std::uint64_t sum_ranks(std::uint64_t mine) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    std::uint64_t out = 0;
    MPI_Allreduce(&mine, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return out;
  }
#endif
  return mine;
}

std::vector<double> gather_ranks(double mine) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    std::vector<double> all(static_cast<std::size_t>(g_ranks.size));
    MPI_Allgather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
    return all;
  }
#endif
  return {mine};
}

std::vector<unsigned char> gather_bytes_ranks(const std::vector<unsigned char>& mine) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) {
    std::vector<unsigned char> all(mine.size() * static_cast<std::size_t>(g_ranks.size));
    MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                  static_cast<int>(mine.size()), MPI_BYTE, MPI_COMM_WORLD);
    return all;
  }
#endif
  return mine;
}

void barrier_ranks() {
#if CLREDUCE_HAVE_MPI
  if (g_mpi) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

#if CLREDUCE_HAVE_MPI
namespace {

// s on rank `from`, sent to every rank.
std::string bcast_string(std::string s, int from) {
  std::uint64_t len = s.size();
  MPI_Bcast(&len, 1, MPI_UINT64_T, from, MPI_COMM_WORLD);
  s.resize(static_cast<std::size_t>(len));
  for (std::uint64_t at = 0; at < len;) {  // pieces of at most 1 GiB (counts are int)
    const std::uint64_t k = std::min<std::uint64_t>(len - at, std::uint64_t{1} << 30);
    MPI_Bcast(&s[static_cast<std::size_t>(at)], static_cast<int>(k), MPI_CHAR, from,
              MPI_COMM_WORLD);
    at += k;
  }
  return s;
}

// Settings as one string: each name and value followed by a NUL.
std::string join_settings(const std::vector<Setting>& settings) {
  std::string s;
  for (const Setting& x : settings) {
    s += x.name;
    s += '\0';
    s += x.value;
    s += '\0';
  }
  return s;
}

std::vector<Setting> split_settings(const std::string& s) {
  std::vector<std::string> words;
  for (std::size_t pos = 0, end; (end = s.find('\0', pos)) != std::string::npos; pos = end + 1)
    words.push_back(s.substr(pos, end - pos));
  std::vector<Setting> settings;
  for (std::size_t k = 0; k + 1 < words.size(); k += 2)
    settings.push_back({words[k], words[k + 1]});
  return settings;
}

// "NAME is VALUE on rank R", the value made printable.
std::string setting_words(const Setting& x, int rank, bool name) {
  return (name ? x.name + " is " : std::string()) + printable(x.value) + " on rank " +
         std::to_string(rank);
}

}  // namespace
#endif

Agreement agree_ranks(int code, const std::string& line, const std::vector<Setting>& settings,
                      int differ_code) {
  Agreement a;
  a.go = code < 0;
  a.code = code < 0 ? 0 : code;
  a.line = line;
#if CLREDUCE_HAVE_MPI
  if (!g_mpi) return a;
  const int me = g_ranks.rank, size = g_ranks.size;
  // The first failing rank, whether every rank failed, and whether every (any) rank stops.
  const bool failed = code > 0, stops = code >= 0;
  int in[4] = {failed ? me : size, failed ? 1 : 0, stops ? 1 : 0, stops ? 0 : 1}, out[4] = {};
  MPI_Allreduce(in, out, 4, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  const int first = out[0];
  const bool every_failed = out[1] == 1, all_stop = out[2] == 1, any_stop = out[3] == 0;
  a.go = false;
  if (first < size) {
    int agreed = code;
    MPI_Bcast(&agreed, 1, MPI_INT, first, MPI_COMM_WORLD);
    a.code = agreed;
    a.line = bcast_string(me == first ? line : std::string(), first);
    if (!(every_failed && first == 0)) a.line = "rank " + std::to_string(first) + ": " + a.line;
    return a;
  }
  // No rank failed: every rank's settings against rank 0's.
  const std::vector<Setting> root =
      split_settings(bcast_string(me == 0 ? join_settings(settings) : std::string(), 0));
  std::string mine;  // this rank's difference, if any
  for (std::size_t k = 0; k < std::max(root.size(), settings.size()) && me != 0; ++k) {
    const Setting none{"(nothing)", ""};
    const Setting& r = k < root.size() ? root[k] : none;
    const Setting& m = k < settings.size() ? settings[k] : none;
    if (r.name == m.name && r.value == m.value) continue;
    mine = "ranks were started with different options: " +
           (r.name == m.name ? setting_words(r, 0, true) + ", " + setting_words(m, me, false)
                             : setting_words(r, 0, true) + ", " + setting_words(m, me, true));
    break;
  }
  int differs = mine.empty() ? size : me, first_differs = size;
  MPI_Allreduce(&differs, &first_differs, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first_differs < size) {
    a.code = differ_code;
    a.differ = true;
    a.line = bcast_string(mine, first_differs);
    return a;
  }
  if (any_stop && !all_stop) {  // settings that do not say what each rank does
    a.code = differ_code;
    a.differ = true;
    a.line = "ranks were started with different options: some stop before the run, others run";
    return a;
  }
  a.go = !any_stop;
  a.code = 0;
  a.line.clear();
#else
  (void)settings;
  (void)differ_code;
#endif
  return a;
}

HostArray scatter_from_root(const HostArray& whole, std::uint64_t* total) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi && g_ranks.many()) {
    std::uint64_t head[2] = {static_cast<std::uint64_t>(whole.type), whole.n};
    MPI_Bcast(head, 2, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    HostArray mine;
    mine.type = static_cast<DType>(head[0]);
    *total = head[1];
    const std::size_t size = dtype_size(mine.type);
    const auto slice_of = [&](int r) { return rank_slice(head[1], r, g_ranks.size); };
    const Slice s = slice_of(g_ranks.rank);
    bool ok = true;
    try {
      mine.bytes.allocate_uninit(static_cast<std::size_t>(s.count) * size);
      mine.n = static_cast<std::size_t>(s.count);
    } catch (const std::bad_alloc&) {
      ok = false;
    }
    if (!all_ranks(ok))
      throw Error(Errc::kUnsupported, ok ? "another rank is out of host memory for its slice"
                                         : "out of host memory for this rank's slice of " +
                                               std::to_string(s.count) + " elements");
    if (g_ranks.root()) {
      for (int r = 1; r < g_ranks.size; ++r) {
        const Slice sr = slice_of(r);
        const unsigned char* from = whole.bytes.data() + sr.first * size;
        in_pieces(sr.count * size, [&](std::uint64_t at, int k) {
          MPI_Send(from + at, k, MPI_BYTE, r, 0, MPI_COMM_WORLD);
        });
      }
      if (s.count) std::memcpy(mine.bytes.data(), whole.bytes.data(), s.count * size);
    } else {
      in_pieces(s.count * size, [&](std::uint64_t at, int k) {
        MPI_Recv(mine.bytes.data() + at, k, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      });
    }
    return mine;
  }
#endif
  *total = whole.n;
  return whole;
}

#if CLREDUCE_HAVE_MPI
namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<std::size_t>(len > 0 ? len : 0));
}

// Writes n bytes at offset through independent MPI-IO writes of at most 1 GiB (counts are int).
int write_at(MPI_File f, std::uint64_t offset, const unsigned char* p, std::uint64_t n) {
  while (n > 0) {
    const std::uint64_t k = std::min<std::uint64_t>(n, std::uint64_t{1} << 30);
    MPI_Status st;
    const int rc = MPI_File_write_at(f, static_cast<MPI_Offset>(offset), p, static_cast<int>(k),
                                     MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) return rc;
    int done = 0;
    MPI_Get_count(&st, MPI_BYTE, &done);
    if (done <= 0) return MPI_ERR_IO;
    offset += static_cast<std::uint64_t>(done);
    p += done;
    n -= static_cast<std::uint64_t>(done);
  }
  return MPI_SUCCESS;
}

// The temporary file's name, chosen by rank 0 and sent to every rank.
std::string temp_name(const std::string& path) {
  std::string name;
  if (g_ranks.root()) {
    static unsigned counter = 0;
    std::filesystem::path p(path);
    const std::string dir = p.has_parent_path() ? p.parent_path().string() : ".";
    name = dir + "/." + p.filename().string().substr(0, 200) + ".tmp-" +
           std::to_string(::getpid()) + "-mpi" + std::to_string(counter++);
  }
  std::uint64_t len = name.size();
  MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  name.resize(static_cast<std::size_t>(len));
  MPI_Bcast(&name[0], static_cast<int>(len), MPI_CHAR, 0, MPI_COMM_WORLD);
  return name;
}

}  // namespace
#endif

void write_npy_ranks(const std::string& path, const HostArray& slice, std::uint64_t first,
                     std::uint64_t total, const Ranks& ranks) {
#if CLREDUCE_HAVE_MPI
  if (g_mpi && ranks.many()) {
    const std::size_t size = dtype_size(slice.type);
    std::string why;  // this rank's failure
    if (slice.bytes.size() != slice.n * size || first > total || slice.n > total - first)
      why = "internal error: a slice of " + std::to_string(slice.n) + " elements at " +
            std::to_string(first) + " of " + std::to_string(total);
    // Every rank must agree that the path can be written before the collective open.
    if (ranks.root()) {
      try {
        check_output_path(path);
      } catch (const Error& e) {
        why = e.what();  // as write_npy says it, an input error
      }
    }
    if (!all_ranks(why.empty())) {
      if (!why.empty()) throw Error(Errc::kInput, why);
      throw Error(Errc::kInput, "cannot write " + printable(path) + ": another rank failed");
    }
    const std::string temp = temp_name(path);
    const std::string header = npy_header(slice.type, total);
    MPI_File f;
    int rc = MPI_File_open(MPI_COMM_WORLD, temp.c_str(),
                           MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL, &f);
    if (!all_ranks(rc == MPI_SUCCESS)) {
      if (rc == MPI_SUCCESS) MPI_File_close(&f);
      barrier_ranks();
      if (ranks.root()) ::unlink(temp.c_str());
      throw Error(Errc::kInput,
                  "cannot write " + printable(path) + ": " +
                      (rc != MPI_SUCCESS ? mpi_error_text(rc) : "another rank failed") +
                      " (no file was written)");
    }
    rc = MPI_SUCCESS;
    if (ranks.root())
      rc = write_at(f, 0, reinterpret_cast<const unsigned char*>(header.data()), header.size());
    if (rc == MPI_SUCCESS)
      rc = write_at(f, header.size() + first * size, slice.bytes.data(), slice.bytes.size());
    const int sync_rc = MPI_File_sync(f);  // collective
    if (rc == MPI_SUCCESS) rc = sync_rc;
    const int close_rc = MPI_File_close(&f);  // collective
    if (rc == MPI_SUCCESS) rc = close_rc;
    bool ok = all_ranks(rc == MPI_SUCCESS);
    std::string root_why;
    if (ranks.root()) {
      if (ok) {
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0) ::chmod(temp.c_str(), st.st_mode & 07777);
        if (::rename(temp.c_str(), path.c_str()) != 0) {
          ok = false;
          root_why = std::strerror(errno);
        }
      }
      if (!ok) ::unlink(temp.c_str());
    }
    int ok_int = ok ? 1 : 0;
    MPI_Bcast(&ok_int, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok_int)
      throw Error(Errc::kInput, "cannot write " + printable(path) + ": " +
                                    (rc != MPI_SUCCESS   ? mpi_error_text(rc)
                                     : !root_why.empty() ? root_why
                                                         : "another rank failed") +
                                    " (the file is unchanged)");
    return;
  }
#endif
  if (first != 0 || slice.n != total)
    throw Error(Errc::kInternal, "internal: one rank writing a slice of " +
                                     std::to_string(slice.n) + " elements at " +
                                     std::to_string(first) + " of " + std::to_string(total));
  (void)ranks;
  write_npy(path, slice);
}

}  // namespace clreduce

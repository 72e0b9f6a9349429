// ranks.hpp: MPI ranks (Open MPI), the distributed engine behind `mpirun -n R clreduce ...`. Each
// rank owns a contiguous slice of the global array and runs it on one device; the slices'
// results meet here: reductions through MPI_Allreduce with a user-defined, non-commutative
// MPI_Op (rank order, so arg ops keep the first index and NumPy's widening holds), scans through
// MPI_Exscan of the slices' carries (the seeds' flag operator as a user-defined op). Without MPI
// at build time (CLREDUCE_HAVE_MPI 0) every function works for one rank, and mpi_built() says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "clreduce/types.hpp"
#include "run/fold.hpp"
#include "verify/exact_sum.hpp"
#include "verify/float_check.hpp"
#include "verify/scan_reference.hpp"

namespace clreduce {

// Whether clreduce was built with MPI, and which ("Open MPI v4.1.4"; "" without).
bool mpi_built();
std::string mpi_library_version();

// The ranks of this run: this process's rank among `size`, and its rank among the ranks on its
// host (to pick a device). One rank (size 1) when not started by mpirun or built without MPI.
struct Ranks {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  bool many() const { return size > 1; }
  bool root() const { return rank == 0; }
};

// Starts MPI when this process was started by an MPI launcher (Open MPI's OMPI_COMM_WORLD_SIZE,
// or PMIX_RANK, in the environment) and MPI was built in; else one rank, and MPI is never
// touched. Call once, first thing in main(). finalize_ranks() at exit (a no-op when not
// started); abort_ranks(code) ends every rank (MPI_Abort) after a fatal error on one.
Ranks init_ranks(int* argc, char*** argv);
void finalize_ranks();
[[noreturn]] void abort_ranks(int code);

// Start-up agreement. Before the run, a rank may stop (a bad flag, a file, a device, a kernel
// build; --help or --version) where the others go on, and ranks may have been started with
// different arguments: none may then wait in a collective that another never reaches. Every rank
// calls agree_ranks() at the same fixed points before the first collective of the run, and a
// rank that stops before one of them calls it once, from wherever it stopped, with its exit code:
// every call is the same sequence of collectives up to the point where the ranks' answers say
// they all stop.
//   code: -1 this rank goes on; 0 it has finished (it printed what was asked); > 0 it met an
//   error, whose one-line message is `line`.
//   settings: the options that shape the run, as (name, canonical value) pairs, compared with
//   rank 0's (a rank that stops with an error passes none).
// Returns go = true when every rank goes on with rank 0's settings. Otherwise every rank gets the
// same answer: the first failing rank's (in rank order) code and line, prefixed "rank R: " unless
// every rank failed and R is 0; else, when settings differ, differ_code and a line naming the
// first setting that differs with its value on rank 0 and on the first rank that differs
// (differ = true); else code 0 (every rank finished). One rank: its own code and line.
struct Setting {
  std::string name;
  std::string value;
};
struct Agreement {
  bool go = true;
  int code = 0;
  bool differ = false;
  std::string line;
};
Agreement agree_ranks(int code, const std::string& line, const std::vector<Setting>& settings,
                      int differ_code);

// Rank r's slice of n elements among R ranks: [first, first + count), contiguous, in rank
// order, the first n % R ranks one element longer (a rank may own nothing when n < R).
// first_piece > 0 (a split scan, below): the array's first first_piece elements go with rank 0's
// slice, and the rest is cut so.
struct Slice {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};
Slice rank_slice(std::uint64_t n, int r, int R, std::uint64_t first_piece = 0);

// A scan split across ranks (tuning key scan-split auto, not segmented): the array's first piece,
// of split_first_piece() elements, begins rank 0's slice, but the last rank scans it (rank 0 sends
// it there once, and gets its output back after the timed runs) while the other ranks reduce their
// shares; then every rank scans its share with its carry-in. As several devices of one process
// split (run/scan_runner.hpp): the piece weighs in / (in + acc) of a share (in, acc: the element's
// and the accumulator's bytes), so that its scan takes about as long as a share's total, rounded
// down to a multiple of 1024 elements from 2048 on. 0 when R < 2 or n is too short to leave the
// piece an element. weight > 0 (scan-split-piece) takes the place of in / (in + acc).
std::uint64_t split_first_piece(std::uint64_t n, int R, std::size_t in, std::size_t acc,
                                double weight = 0);
// Bytes from this rank to rank `to`, and into this rank from rank `from` (pieces of at most 1 GiB,
// in order): the split scan's first piece and its output. One rank: Error(Errc::kInternal).
void send_bytes(int to, const unsigned char* p, std::uint64_t n);
void recv_bytes(int from, unsigned char* p, std::uint64_t n);
// Rank root's carry, on every rank (one rank: mine).
ScanCarry bcast_carry(const ScanCarry& mine, int root);

// The slices' reduction results combined in rank order: fold_values(op, ...) (run/fold.hpp)
// semantics exactly (integers wrap, arg ops keep the earlier index on ties and the first NaN).
// `mine` has its index already global. empty: this rank's slice has no elements (it then
// contributes nothing). Returns the whole's result on every rank (has = false when every slice
// was empty). ms: the MPI call's wall time on this rank.
struct Combined {
  Value value;
  bool has = false;
  double ms = 0.0;
};
Combined allreduce_value(Op op, const Value& mine, bool empty);

// The slices' exact states (`exact`, the correctly rounded sum: verify/exact_sum.hpp) added
// exactly over every rank (a user-defined MPI op on the states' bytes: integer limbs with
// carries, flags OR-ed), rounded once to acc (float or double): the correctly rounded sum of
// the whole array, on every rank. `mine` is empty (ExactState::empty) when this rank's slice has
// no elements; has = false when every slice was empty. ms: the MPI call's wall time.
Combined allreduce_exact(DType acc, const ExactState& mine);

// The exclusive scan of the slices' carries in rank order with fold_carry(op, ...): what reaches
// this rank's slice from the slices before it (empty on rank 0). ms: the MPI call's wall time.
ScanCarry exscan_carry(Op op, const ScanCarry& mine, double* ms = nullptr);

// The host reference's state at a slice's end (verify/scan_reference.hpp's ScanRefState), for
// distributed verification of scans; fold_ref_state(earlier, later) is the flag operator on these.
ScanRefState fold_ref_state(Op op, const ScanRefState& earlier, const ScanRefState& later);
ScanRefState exscan_ref_state(Op op, const ScanRefState& mine);

// Logical AND of a flag over every rank (the verdicts), a sum of counts, and every rank's
// double gathered at every rank in rank order (per-rank kernel ms).
bool all_ranks(bool mine);
std::uint64_t sum_ranks(std::uint64_t mine);
std::vector<double> gather_ranks(double mine);
// Every rank's bytes (the same count on every rank) gathered at every rank, in rank order: the
// reduction engine's accumulators.
std::vector<unsigned char> gather_bytes_ranks(const std::vector<unsigned char>& mine);
// The value of the last rank whose slice is not empty (mine when no rank has one): a scan's
// last element, which that rank holds.
Value last_of_ranks(const Value& mine, bool empty);
// A barrier (timing the ranks' runs from a common start).
void barrier_ranks();

// Rank 0's array `whole` (one only rank 0 can read: standard input, which an MPI launcher gives
// to rank 0 alone) cut into the ranks' slices (rank_slice()): returns this rank's slice, sent by
// rank 0, and sets *total to the whole array's length. Collective: every rank calls it at once
// (`whole` is read on rank 0 only); when a rank cannot allocate its slice, every rank throws
// Error(Errc::kUnsupported) before anything is sent. One rank: `whole`.
HostArray scatter_from_root(const HostArray& whole, std::uint64_t* total);

// Writes the global .npy of `total` elements from every rank's slice (its elements [first,
// first + slice.n)), collectively: rank 0 writes the header, every rank its slice (MPI-IO) into
// a temporary file beside path, renamed over path by rank 0 once every rank's write succeeded
// and removed on any failure, when every rank throws Error(Errc::kInput). One rank: write_npy().
// Slices are read back with read_npy_slice() (io/npy.hpp).
void write_npy_ranks(const std::string& path, const HostArray& slice, std::uint64_t first,
                     std::uint64_t total, const Ranks& ranks);

}  // namespace clreduce

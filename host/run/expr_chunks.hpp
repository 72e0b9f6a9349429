// expr_chunks.hpp: the reduction engine (reduce/expr.hpp) over input arrays of any length,
// through the chunk driver (run/chunks.hpp): the arrays lie on the device alike (whole, in
// chunks past one allocation or max-chunk, streamed past device memory, or used in place), each
// chunk is reduced to its accumulator (the arg rows' indices counted from the array's start),
// and the chunks' accumulators are folded in chunk order on the device by the reduce itself
// (cl/reduce_expr.cl's reduce_expr_fold): the caller posts once, as after one launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clreduce/cl.hpp"
#include "clreduce/types.hpp"
#include "reduce/expr.hpp"
#include "run/chunks.hpp"
#include "runtime/context.hpp"

namespace clreduce {

// The layout every input of one reduction shares on device d: chunks of one length in
// elements, each within the allocation and max-chunk for the widest element; in place only
// where every array's chunks are aligned for it (else copied to the device).
ChunkLayout expr_layout(const DeviceInfo& d, const Tuning& t, const std::vector<HostArray>& arrays);

// The inputs of one reduction on one device. Refers to ctx and the arrays (one length), which
// must outlive it; one thread at a time.
class ExprArrays {
 public:
  ExprArrays(Context& ctx, const std::vector<HostArray>& arrays);
  const ChunkLayout& layout() const { return layout_; }
  // The elements an ExprReduction for these arrays is planned for: one chunk's, or the whole.
  std::size_t plan_n() const { return layout_.chunks > 1 ? layout_.chunk : layout_.n; }
  // The operations the chunks' fold adds to an element's chain (chunks - 1; 0 for one chunk).
  std::uint64_t fold_depth() const { return layout_.chunks > 1 ? layout_.chunks - 1 : 0; }
  // Resident layouts: uploads every array's chunks once and waits; the host milliseconds it took
  // (0 in place or streamed, which upload inside each run).
  double upload(const std::string& what);
  // Enqueues er's reduction of the whole (er planned for plan_n()), leaving the accumulator
  // at out[0], before post: one launch where the arrays are one resident chunk, else every
  // chunk's launch into a partial and the partials' fold in chunk order. Appends the launches'
  // events (the fold's last) and flushes; the caller waits for the last. base: the global index
  // of the arrays' element 0 (a device's share of larger arrays), from which the arg rows'
  // indices count.
  void enqueue(ExprReduction& er, const cl::Buffer& out, std::vector<cl::Event>& events,
               std::uint64_t base = 0);
  // fn(first, length, buffers) for the first `chunks` chunks (all: SIZE_MAX), in order, with
  // each array's buffer of that chunk (from its element 0): the checks' and the reference's
  // launches. n = 0: once, fn(0, 0, buffers of one byte).
  void each(const std::function<void(std::size_t, std::size_t, const std::vector<cl::Buffer>&)>& fn,
            std::size_t chunks = SIZE_MAX);

 private:
  Context& ctx_;
  ChunkLayout layout_;
  std::vector<std::unique_ptr<ChunkedArray>> arrays_;
  std::vector<ChunkedArray*> ptrs_;
  std::vector<cl::Buffer> empty_;  // n = 0: one byte per array, never read
  cl::Buffer partials_;            // several chunks: their accumulators at stride_ bytes
  std::vector<cl::Buffer> views_;
  std::size_t stride_ = 0;
  std::vector<unsigned char> sentinel_;
};

}  // namespace clreduce

// expr_chunks.cpp: the reduction engine's inputs through the chunk driver, and the chunks' fold.
#include "run/expr_chunks.hpp"

#include <algorithm>

#include "clreduce/error.hpp"
#include "core/checked.hpp"
#include "runtime/transfer.hpp"

namespace clreduce {

ChunkLayout expr_layout(const DeviceInfo& d, const Tuning& t,
                        const std::vector<HostArray>& arrays) {
  if (arrays.empty()) throw Error(Errc::kInternal, "internal: a reduction without arrays");
  std::size_t widest = 1;
  for (const HostArray& a : arrays) widest = std::max(widest, dtype_size(a.type));
  const std::size_t n = arrays.front().n;
  const auto aligned = [&](const ChunkLayout& L) {
    for (const HostArray& a : arrays)
      if (!in_place_aligned(d, L, ElementBytes{dtype_size(a.type)}, HostArrays{a.bytes.data()},
                            L.align))
        return false;
    return true;
  };
  ChunkLayout L =
      choose_layout(d, t, n, ElementBytes{widest}, HostArrays{arrays.front().bytes.data()});
  if (L.in_place && !aligned(L)) {
    Tuning copied = t;
    copied.in_place = "off";
    L = choose_layout(d, copied, n, ElementBytes{widest});
  }
  return L;
}

ExprArrays::ExprArrays(Context& ctx, const std::vector<HostArray>& arrays)
    : ctx_(ctx), layout_(expr_layout(ctx.info(), ctx.tuning(), arrays)) {
  for (const HostArray& a : arrays) {
    arrays_.push_back(std::make_unique<ChunkedArray>(ctx, layout_, a, nullptr, nullptr,
                                                     ElementBytes{dtype_size(a.type)}));
    ptrs_.push_back(arrays_.back().get());
    empty_.push_back(ctx.zeroed_buffer(1));
  }
}

double ExprArrays::upload(const std::string& what) {
  double ms = 0.0;
  for (const auto& a : arrays_) ms += a->upload(what);
  return ms;
}

void ExprArrays::enqueue(ExprReduction& er, const cl::Buffer& out, std::vector<cl::Event>& events,
                         std::uint64_t base) {
  if (layout_.chunks == 0) {  // an empty array: the identity (a row's post takes n = 0)
    er.enqueue(empty_, 0, out, events, base);
    ctx_.queue().flush();
    return;
  }
  if (layout_.chunks == 1 && !layout_.streamed()) {
    ChunkedArray::each_chunk(ptrs_, [&](std::size_t, const std::vector<cl::Buffer>& in) {
      er.enqueue(in, layout_.n, out, events, base);
    });
    return;
  }
  const std::size_t as = er.acc_bytes();
  const std::size_t stride = (as + ctx_.base_align() - 1) / ctx_.base_align() * ctx_.base_align();
  if (stride != stride_ || views_.size() != layout_.chunks) {
    stride_ = stride;
    partials_ = cl::Buffer(ctx_.context(), CL_MEM_READ_WRITE,
                           checked_bytes(layout_.chunks, stride, "the chunks' accumulators"));
    views_.clear();
    for (std::size_t c = 0; c < layout_.chunks; ++c)
      views_.push_back(ctx_.view(partials_, c * stride, as));
    sentinel_.assign(layout_.chunks * stride, 0xA5);
  }
  // A sentinel first, so that a chunk no kernel wrote cannot pass into the fold unseen.
  enqueue_write(ctx_.queue(), partials_, 0, sentinel_.size(), sentinel_.data(),
                ctx_.tuning().transfer_piece);
  ChunkedArray::each_chunk(ptrs_, [&](std::size_t c, const std::vector<cl::Buffer>& in) {
    er.enqueue(in, layout_.length(c), views_[c], events, base + layout_.begin(c));
  });
  er.enqueue_fold(partials_, stride, layout_.chunks, out, events);
  ctx_.queue().flush();
}

void ExprArrays::each(
    const std::function<void(std::size_t, std::size_t, const std::vector<cl::Buffer>&)>& fn,
    std::size_t chunks) {
  if (layout_.chunks == 0) {
    fn(0, 0, empty_);
    return;
  }
  ChunkedArray::each_chunk(
      ptrs_,
      [&](std::size_t c, const std::vector<cl::Buffer>& in) {
        fn(layout_.begin(c), layout_.length(c), in);
      },
      chunks);
}

}  // namespace clreduce

// test_transfer.cpp: fills, writes, reads and copies split into pieces land every byte where
// they should, at awkward offsets and piece sizes; waits give up with a time-out error.
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include <chrono>
#include <cstdint>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "clreduce/error.hpp"
#include "runtime/transfer.hpp"
#include "test_helpers.hpp"

using namespace clreduce;
using clreduce::test::device_context;

TEST_CASE("for_each_piece covers a range in order with pieces of at most the limit", "[transfer]") {
  std::vector<std::pair<std::size_t, std::size_t>> got;
  for_each_piece(10, 25, 8, 4,
                 [&](std::size_t off, std::size_t len) { got.emplace_back(off, len); });
  const std::vector<std::pair<std::size_t, std::size_t>> want{{10, 8}, {18, 8}, {26, 8}, {34, 1}};
  CHECK(got == want);
  got.clear();
  for_each_piece(0, 7, 3, 4, [&](std::size_t off, std::size_t len) { got.emplace_back(off, len); });
  CHECK(got == (std::vector<std::pair<std::size_t, std::size_t>>{{0, 4},
                                                                 {4, 3}}));  // piece < align: align
  got.clear();
  for_each_piece(5, 0, 3, 1, [&](std::size_t off, std::size_t len) { got.emplace_back(off, len); });
  CHECK(got.empty());
}

TEST_CASE("transfers in tiny pieces move every byte", "[transfer]") {
  Context& ctx = device_context();
  const std::size_t piece = GENERATE(1, 3, 4, 7, 64, 1000, kMaxTransferPiece);
  CAPTURE(piece);
  const std::size_t bytes = 5003;
  std::vector<unsigned char> src(bytes), back(bytes, 0xEE);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  cl::Buffer a(ctx.context(), CL_MEM_READ_WRITE, bytes + 64),
      b(ctx.context(), CL_MEM_READ_WRITE, bytes + 64);
  std::vector<cl::Event> events;
  enqueue_write(ctx.queue(), a, 13, bytes, src.data(), piece, &events);
  finish(ctx.queue(), 60, "write");
  if (piece < bytes) CHECK(events.size() == (bytes + piece - 1) / piece);
  enqueue_copy(ctx.queue(), a, b, 13, 5, bytes, piece);
  enqueue_read(ctx.queue(), b, 5, bytes, back.data(), piece);
  finish(ctx.queue(), 60, "copy and read");
  CHECK(back == src);
  // Zero a middle stretch at an odd offset (1-byte pattern) and an aligned one (4-byte pattern).
  enqueue_zero(ctx.queue(), b, 5 + 101, 999, piece);
  enqueue_zero(ctx.queue(), b, 5 + 2000 - 1, 0, piece);
  enqueue_read(ctx.queue(), b, 5, bytes, back.data(), piece);
  finish(ctx.queue(), 60, "zero and read");
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned char want = i >= 101 && i < 101 + 999 ? 0 : src[i];
    if (back[i] != want) FAIL("byte " << i << " is " << int(back[i]) << ", expected " << int(want));
  }
  enqueue_write(ctx.queue(), a, 0, bytes, src.data(), piece);
  enqueue_zero(ctx.queue(), a, 8, 4000, piece);  // 4-byte pattern
  enqueue_read(ctx.queue(), a, 0, bytes, back.data(), piece);
  finish(ctx.queue(), 60, "aligned zero");
  for (std::size_t i = 0; i < bytes; ++i) {
    const unsigned char want = i >= 8 && i < 4008 ? 0 : src[i];
    if (back[i] != want) FAIL("byte " << i << " is " << int(back[i]) << ", expected " << int(want));
  }
}

TEST_CASE("a wait past its limit is a time-out error, a finished queue is not", "[transfer]") {
  Context& ctx = device_context();
  finish(ctx.queue(), 1, "nothing");  // an empty queue finishes at once
  // A user event that never completes holds the queue: the wait must give up, not hang.
  cl::UserEvent gate(ctx.context());
  std::vector<cl::Event> wait{gate};
  cl::Event marker;
  ctx.queue().enqueueMarkerWithWaitList(&wait, &marker);
  try {
    finish(ctx.queue(), 0.2, "the gated marker");
    FAIL("no time-out");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kTimeout);
    CHECK(std::string(e.what()).find("the gated marker did not finish") != std::string::npos);
  }
  gate.setStatus(CL_COMPLETE);
  finish(ctx.queue(), 60, "released");
}

TEST_CASE(
    "a time-out says what to change: a short --timeout is to be raised, past the default limit "
    "the device may have stopped responding",
    "[transfer]") {
  Context& ctx = device_context();
  struct Case {
    TimeLimit limit;
    std::string says;
  };
  TimeLimit longer(0.2);  // a limit the user set above the default one
  longer.user_default_s = 0.1;
  const Case cases[] = {{time_limit(0.2, 1000),
                         "held did not finish within --timeout 0.2 s; raise --timeout (the "
                         "default limit here is 60 s)"},
                        {TimeLimit(0.2),
                         "held did not finish within 0.2 s (the default limit; --timeout sets "
                         "another); the device may have stopped responding"},
                        {longer,
                         "held did not finish within --timeout 0.2 s; the device may have stopped "
                         "responding"}};
  CHECK(time_limit(0, 1000).s == default_timeout_s(1000));
  CHECK_FALSE(time_limit(0, 1000).users());
  for (const Case& c : cases) {
    cl::UserEvent gate(ctx.context());
    std::vector<cl::Event> wait{gate};
    cl::Event marker;
    ctx.queue().enqueueMarkerWithWaitList(&wait, &marker);
    try {
      finish(ctx.queue(), c.limit, "held");
      FAIL("no time-out");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kTimeout);
      CHECK(std::string(e.what()) == c.says);
    }
    gate.setStatus(CL_COMPLETE);
    finish(ctx.queue(), 60, "released");
  }
}

TEST_CASE("a finished command is judged by the device's clock, from the run's first command",
          "[transfer]") {
  Context& ctx = device_context();
  if (ctx.info().type != "CPU") SKIP("the device's clock judges finished work on CPU devices only");
  // A marker held 1 s by a user event: by the device's clock it took that long from its
  // enqueue, however soon after its end the wait looks at it.
  cl::UserEvent gate(ctx.context());
  std::vector<cl::Event> hold{gate};
  cl::Event late;
  ctx.queue().enqueueMarkerWithWaitList(&hold, &late);
  ctx.queue().flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  gate.setStatus(CL_COMPLETE);
  finish(ctx.queue(), 60, "released");
  cl_ulong queued = 0, end = 0;
  late.getProfilingInfo(CL_PROFILING_COMMAND_QUEUED, &queued);
  late.getProfilingInfo(CL_PROFILING_COMMAND_END, &end);
  if (queued == 0 || end < queued + 900'000'000u)
    SKIP("this device's markers report no enqueue-to-end time");
  try {
    wait(late, 0.5, "the late marker");
    FAIL("a command that took 1 s passed a 0.5 s limit");
  } catch (const Error& e) {
    CHECK(e.category() == Errc::kTimeout);
    CHECK(std::string(e.what()).find("the late marker did not finish within 0.5 s") !=
          std::string::npos);
  }
  CHECK_NOTHROW(wait(late, 5, "the late marker"));
  // A marker enqueued after the run's end took no time itself; from the run's first command
  // (`since`) it took 1 s. Limits of 0.5 s leave a loaded host room.
  cl::Event after;
  ctx.queue().enqueueMarkerWithWaitList(nullptr, &after);
  ctx.queue().flush();
  CHECK_NOTHROW(wait(after, 0.5, "the next marker"));
  CHECK_THROWS_AS(wait(after, 0.5, "the run", &late), Error);
  CHECK_THROWS_AS(finish(ctx.queue(), 0.5, "the run", &late), Error);
  CHECK_NOTHROW(finish(ctx.queue(), 5, "the run", &late));
}

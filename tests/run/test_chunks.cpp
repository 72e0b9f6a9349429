// test_chunks.cpp: arrays run in chunks (--max-chunk forces them small) and streamed through a
// few device slots, for every variant: reductions fold chunk results in order (ints exact, arg ops
// with global indices and the first index on ties), scans carry the running value and segment
// state across chunk edges, --output is the same file, transfers split into tiny pieces, and a
// device that does not finish within --timeout ends the run with exit 3.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "clreduce/error.hpp"
#include "clreduce/options.hpp"
#include "io/npy.hpp"
#include "run/chunks.hpp"
#include "test_helpers.hpp"

using Catch::Matchers::ContainsSubstring;
using namespace clreduce;
namespace fs = std::filesystem;

namespace {

using Result = clreduce::test::CliResult;
using clreduce::test::run_cli;

// A command that hangs fails the test instead of the suite: timeout exits 124.
const std::string kTimeout = "timeout 300";

using clreduce::test::TempDir;

std::vector<std::string> json_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("{\"variant\"", 0) == 0) rows.push_back(line);
  return rows;
}

// The raw text of a JSON row's field ("" when absent): a number, true/false, or "..." unquoted.
std::string field(const std::string& row, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const std::size_t at = row.find(k);
  if (at == std::string::npos) return "";
  std::size_t b = at + k.size();
  if (row[b] == '"') {
    const std::size_t e = row.find('"', b + 1);
    return row.substr(b + 1, e - b - 1);
  }
  std::size_t e = b;
  while (e < row.size() && row[e] != ',' && row[e] != '}') ++e;
  return row.substr(b, e - b);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

template <class T> void save(const std::string& path, DType t, const std::vector<T>& v) {
  HostArray a;
  a.type = t;
  a.n = v.size();
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  write_npy(path, a);
}

// Every row ran (not skipped) in `chunks` chunks and verified; reductions of integers and arg
// ops match the reference exactly (result, and the first index). Returns the number of rows.
std::size_t check_rows(const std::string& out, const std::string& chunks, bool exact_values) {
  std::size_t ran = 0;
  for (const std::string& row : json_rows(out)) {
    CAPTURE(row);
    if (field(row, "skipped") == "true") continue;
    ++ran;
    CHECK(field(row, "verified") == "true");
    CHECK(field(row, "chunks") == chunks);
    if (field(row, "mode") == "reduce" && exact_values)
      CHECK(field(row, "result") == field(row, "expected"));
    if (!field(row, "index").empty()) CHECK(field(row, "index") == field(row, "expected_index"));
  }
  return ran;
}

}  // namespace

TEST_CASE(
    "chunked reductions and scans: every variant, ops and types, chunk edges at 1, a prime "
    "and group multiples",
    "[chunks]") {
  struct Case {
    std::string args;
    std::size_t n;
    std::size_t chunk;  // elements
    bool exact;         // integer results, or arg ops: compared exactly
  };
  // Element sizes: int32/float 4, double/int64/uint64 8. Chunks of 1 element, 7 (a prime),
  // 4096 (a multiple of every group size, where the rounding of chunk sizes starts), and lengths
  // past a vector that are not multiples of 8 (13, 100, 1001): a chunk used in place then starts
  // at an address that is not a multiple of a vector's size, in the output as in the input.
  const Case cases[] = {
      {"--op sum --type int32 --max-chunk 4", 37, 1, true},
      {"--op argmin --type float --max-chunk 4", 23, 1, true},
      {"--op sum --type int32 --max-chunk 28", 1000, 7, true},
      {"--op argmax --type int64 --max-chunk 56", 1000, 7, true},
      {"--op max --type double --max-chunk 56", 999, 7, true},
      {"--op sum --type float --max-chunk 28", 1000, 7, false},
      {"--op prod --type uint64 --max-chunk 56", 500, 7, true},
      {"--op min --type int32 --max-chunk 16384", 3 * 4096 + 5, 4096, true},
      {"--op sum --type double --max-chunk 2^15", 2 * 4096 + 1, 4096, false},
      {"--op sum --type int32 --max-chunk 52", 1000, 13, true},
      {"--op min --type double --max-chunk 800", 1000, 100, true},
      {"--op sum --type float --max-chunk 4004", 3000, 1001, false},
      {"--op prod --type int64 --max-chunk 8008", 2500, 1001, true},
  };
  for (const Case& c : cases) {
    const std::string args = "--variant all --format json --repeat 1 --warmup 0 --size " +
                             std::to_string(c.n) + " " + c.args;
    CAPTURE(args);
    const Result r = run_cli(args, kTimeout);
    CHECK(r.code == 0);
    const std::size_t chunks = (c.n + c.chunk - 1) / c.chunk;
    CHECK(check_rows(r.out, std::to_string(chunks), c.exact) >= 12);
  }
}

TEST_CASE("chunked arg ops: the extreme in a later chunk, ties across chunks give the first index",
          "[chunks]") {
  const TempDir d;
  std::vector<std::int32_t> ints(1000, 0);
  ints[300] = 5;  // chunk 42 of 7 elements
  ints[701] = 5;  // a tie in a later chunk
  ints[999] = 5;  // and in the last, partial chunk
  save(d / "ints.npy", DType::kInt32, ints);
  std::vector<float> floats(1000, 1.0f);
  floats[514] = -2.0f;  // only in a later chunk
  floats[997] = -2.0f;
  save(d / "floats.npy", DType::kFloat, floats);
  struct Case {
    std::string args, index;
  };
  const Case cases[] = {
      {"--input " + (d / "ints.npy") + " --op argmax --max-chunk 28", "300"},
      {"--input " + (d / "ints.npy") + " --op argmax --max-chunk 4", "300"},
      {"--input " + (d / "floats.npy") + " --op argmin --max-chunk 28", "514"},
      {"--input " + (d / "floats.npy") + " --op argmin --max-chunk 2000", "514"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const Result r =
        run_cli(c.args + " --variant all --format json --repeat 1 --warmup 0", kTimeout);
    CHECK(r.code == 0);
    std::size_t ran = 0;
    for (const std::string& row : json_rows(r.out)) {
      if (field(row, "skipped") == "true") continue;
      CAPTURE(row);
      ++ran;
      CHECK(field(row, "verified") == "true");
      CHECK(field(row, "index") == c.index);
    }
    CHECK(ran >= 12);
  }
}

TEST_CASE(
    "chunked scans: segments and exclusive mode straddle chunk edges, --output is the same "
    "file",
    "[chunks]") {
  const TempDir d;
  const std::string scans =
      "--variant scan-hillis-steele,scan-blelloch,scan-hierarchical,scan-lookback,scan-fast";
  for (const std::string& mode :
       {std::string("--op sum --type int32"), std::string("--op sum --type int32 --exclusive"),
        std::string("--op max --type float --segment-length 7"),
        std::string("--op sum --type int64 --segment-length 5 --exclusive"),
        std::string("--op prod --type uint32 --segment-length 3")}) {
    // Chunks of 1 element (or 1 input element where the output is wider), 5 or 2, 4096, and
    // lengths that are not multiples of 8: 13 or 6, and 1001 or 500.
    const std::pair<const char*, const char*> chunkings[] = {
        {"4", "301"}, {"20", "2001"}, {"2^14", "9001"}, {"52", "1000"}, {"4004", "5003"}};
    for (const auto& [chunk, n] : chunkings) {
      const std::string args = scans + " --size " + n + " --format json --repeat 1 --warmup 0 " +
                               mode + " --max-chunk " + chunk;
      CAPTURE(args);
      const Result r = run_cli(args, kTimeout);
      CHECK(r.code == 0);
      std::size_t ran = 0;
      for (const std::string& row : json_rows(r.out)) {
        CAPTURE(row);
        ++ran;
        CHECK(field(row, "verified") == "true");
        CHECK(field(row, "wrong_count") == "0");
        CHECK(std::stoul(field(row, "chunks")) > 1);
      }
      CHECK(ran == 5);
    }
  }
  // --output, written chunk by chunk, is byte for byte the file of a run in one piece.
  for (const std::string& v : {"scan-fast", "scan-blelloch"}) {
    const std::string base = "--variant " + v + " --size 10007 --segment-length 13 --exclusive " +
                             "--repeat 1 --warmup 0 --output ";
    const Result whole = run_cli(base + (d / "whole.npy"), kTimeout);
    const Result chunked = run_cli(base + (d / "chunked.npy") + " --max-chunk 44", kTimeout);
    CHECK(whole.code == 0);
    CHECK(chunked.code == 0);
    CHECK_THAT(chunked.out, ContainsSubstring("chunks of"));
    CHECK(read_file(d / "whole.npy").size() > 40000);
    CHECK(read_file(d / "whole.npy") == read_file(d / "chunked.npy"));
  }
}

TEST_CASE(
    "scan-fast's CPU paths on ranges that start between vectors: chunks, tiles and superblocks "
    "whose lengths are not multiples of 8",
    "[chunks]") {
  // Each path's vector scan stores whole vectors: a range that starts at an element whose
  // address is not a multiple of the vector's size takes a scalar head first (in place, a chunk
  // of 100 int32 sums into int64 starts 800 bytes into the host's output).
  const std::pair<const char*, const char*> shapes[] = {
      {"cpu", "--max-chunk 400"},
      {"cpu", "--max-chunk 4004"},
      {"cpu", "--max-chunk 52 --tune in-place=off"},
      {"cpu", "--tune scan-chunk=13 --tune scan-groups=3"},
      {"cpu-lookback", "--max-chunk 400"},
      {"cpu-lookback", "--max-chunk 4004"},
      {"cpu-lookback", "--max-chunk 52 --tune in-place=off"},
      {"cpu-lookback", "--tune scan-tile=1025"}};
  for (const auto& [path, shape] : shapes) {
    for (const std::string mode : {"--op sum --type int32", "--op min --type double --exclusive",
                                   "--op sum --type uint32 --acc uint32 --segment-length 9"}) {
      const std::string args =
          "--variant scan-fast --size 3001 --format json --repeat 1 "
          "--warmup 0 --tune scan-fast-path=" +
          std::string(path) + " " + shape + " " + mode;
      CAPTURE(args);
      const Result r = run_cli(args, kTimeout);
      CHECK(r.code == 0);
      const std::vector<std::string> rows = json_rows(r.out);
      REQUIRE(rows.size() == 1);
      CHECK(field(rows[0], "verified") == "true");
      CHECK(field(rows[0], "wrong_count") == "0");
    }
  }
}

TEST_CASE("copy_streaming copies every byte at every alignment and length, nothing past them",
          "[chunks]") {
  std::vector<unsigned char> src(4096 + 64), dst(4096 + 64);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
  for (std::size_t s_at = 0; s_at < 16; ++s_at)
    for (std::size_t d_at = 0; d_at < 16; ++d_at)
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{16},
                                  std::size_t{17}, std::size_t{63}, std::size_t{64},
                                  std::size_t{65}, std::size_t{200}, std::size_t{4096}}) {
        std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xA5));
        clreduce::copy_streaming(dst.data() + d_at, src.data() + s_at, n);
        bool same = true, untouched = true;
        for (std::size_t i = 0; i < dst.size(); ++i) {
          if (i >= d_at && i < d_at + n)
            same = same && dst[i] == src[s_at + i - d_at];
          else
            untouched = untouched && dst[i] == 0xA5;
        }
        CAPTURE(s_at, d_at, n);
        CHECK(same);
        CHECK(untouched);
      }
}

TEST_CASE("streamed runs: a few device slots, each way of feeding them, in pieces of a few bytes",
          "[chunks]") {
  const TempDir d;
  const Result ref = run_cli(
      "--variant scan-fast --size 20011 --type int32 --segment-length 9 "
      "--repeat 1 --warmup 0 --output " +
          (d / "ref.npy"),
      kTimeout);
  REQUIRE(ref.code == 0);
  int k = 0;
  for (const std::string source : {"write", "stage", "stage-memcpy", "host-ptr"}) {
    for (const std::string slots : {"2", "3"}) {
      for (const std::string piece : {"1073741824", "12"}) {
        const std::string stream =
            " --tune in-place=off --tune stream=on --tune stream-bytes=2^14"
            " --tune stream-slots=" +
            slots + " --tune stream-source=" + source + " --tune transfer-piece=" + piece +
            " --repeat 2 --warmup 1 --format json";
        CAPTURE(stream);
        const Result r = run_cli(
            "--variant fast,topdown,bottomup --op argmax --type float "
            "--size 30011" +
                stream,
            kTimeout);
        CHECK(r.code == 0);
        CHECK(check_rows(r.out, field(json_rows(r.out).front(), "chunks"), true) == 3);
        CHECK(std::stoul(field(json_rows(r.out).front(), "chunks")) > 2);
        CHECK_THAT(r.out, ContainsSubstring("streamed"));
        // A scan through the slots writes the same file.
        const std::string out = d / ("s" + std::to_string(++k) + ".npy");
        const Result s = run_cli(
            "--variant scan-fast --size 20011 --type int32 --segment-length 9 "
            "--output " +
                out + stream,
            kTimeout);
        CHECK(s.code == 0);
        CHECK_THAT(s.out, ContainsSubstring("\"verified\":true"));
        CHECK(read_file(out) == read_file(d / "ref.npy"));
      }
    }
  }
}

TEST_CASE(
    "a device that does not finish within --timeout ends the run: exit 3, one line naming "
    "the variant and size",
    "[chunks]") {
  // 2^25 elements take well over a millisecond on any CPU device; the wait polls and gives up.
  for (const std::string v : {"fast", "scan-fast", "bottomup --max-chunk 2^20"}) {
    CAPTURE(v);
    const Result r = run_cli("--size 2^25 --timeout 0.001 --variant " + v, kTimeout);
    CHECK(r.code == 3);
    // The user's own limit, far below the default: the line says to raise it.
    CHECK_THAT(r.out,
               ContainsSubstring("did not finish within --timeout 0.001 s; raise --timeout"));
    CHECK_THAT(r.out, ContainsSubstring("33554432"));
    CHECK_THAT(r.out, ContainsSubstring(v.substr(0, v.find(' '))));
    CHECK(clreduce::test::count_lines(r.out) == 1);
  }
  CHECK(run_cli("--size 10 --timeout 0").code == 2);
  CHECK(run_cli("--size 10 --timeout 1s").code == 2);
}

TEST_CASE("host arrays are used in place only where every chunk is aligned for the device",
          "[chunks]") {
  DeviceInfo cpu;
  cpu.type = "CPU";
  cpu.global_mem = std::uint64_t{1} << 34;
  cpu.max_alloc = std::uint64_t{1} << 32;
  cpu.base_align = 128;
  const Tuning t;
  REQUIRE(in_place_alignment(cpu) == 128);
  alignas(4096) static unsigned char buf[4096 * 8 + 256];  // buf + 128: never at 4096
  const ElementBytes doubles{8};
  // Aligned, or not known yet (the library's own memory is page-aligned): in place.
  CHECK(choose_layout(cpu, t, 1000, doubles, HostArrays{buf}).in_place);
  CHECK(choose_layout(cpu, t, 1000, doubles).in_place);
  // A .npy mapped where its data starts at byte 70, or at 72 (whole doubles, still off the
  // 16 bytes vectorised loads assume): copied, as on a discrete device.
  for (const std::size_t off : {std::size_t{6}, std::size_t{8}, std::size_t{64}}) {
    CAPTURE(off);
    const ChunkLayout L = choose_layout(cpu, t, 1000, doubles, HostArrays{buf + off});
    CHECK_FALSE(L.in_place);
    CHECK(L.chunks == 1);
    CHECK_FALSE(L.streamed());
  }
  // A plan whose kernels read any start asks only the element's alignment: 72 bytes in place,
  // 70 bytes (a .npy's data at byte 70) copied.
  CHECK(choose_layout(cpu, t, 1000, doubles, HostArrays{buf + 72}, 8).in_place);
  CHECK_FALSE(choose_layout(cpu, t, 1000, doubles, HostArrays{buf + 70}, 8).in_place);
  // Chunks that start off the alignment (7 doubles: 56 bytes) are copied; 16 doubles are 128
  // bytes, aligned.
  Tuning small = t;
  small.max_chunk = 56;
  CHECK_FALSE(choose_layout(cpu, small, 1000, doubles, HostArrays{buf}).in_place);
  small.max_chunk = 128;
  CHECK(choose_layout(cpu, small, 1000, doubles, HostArrays{buf}).in_place);
  // Scans: the flags and the output are checked too (a flag array 16 bytes off).
  const ElementBytes scan{4, 1, 8};
  CHECK(choose_layout(cpu, t, 1000, scan, HostArrays{buf, buf, buf}).in_place);
  CHECK_FALSE(choose_layout(cpu, t, 1000, scan, HostArrays{buf, buf + 16, buf}).in_place);
  CHECK_FALSE(choose_layout(cpu, t, 1000, scan, HostArrays{buf, buf, buf + 8}).in_place);
  // A device that aligns its buffers more strictly asks as much of host memory.
  cpu.base_align = 4096;
  unsigned char* off128 = buf + 128;  // 128-aligned, and not 4096-aligned wherever buf lies
  if (reinterpret_cast<std::uintptr_t>(off128) % 4096 == 0) off128 += 128;
  CHECK_FALSE(choose_layout(cpu, t, 1000, doubles, HostArrays{off128}).in_place);
}

TEST_CASE("device-memory: layouts plan for the lesser of it and the device's memory", "[chunks]") {
  DeviceInfo gpu;
  gpu.type = "GPU";
  gpu.global_mem = std::uint64_t{1} << 30;  // 1 GiB
  gpu.max_alloc = std::uint64_t{1} << 28;
  gpu.base_align = 128;
  Tuning t;
  const ElementBytes scan{4, 0, 8};
  CHECK(planned_memory(gpu, t) == gpu.global_mem);
  // 2^24 elements of 12 bytes, 192 MiB: resident, every chunk's bytes on the device.
  ChunkLayout L = choose_layout(gpu, t, std::size_t{1} << 24, scan);
  CHECK_FALSE(L.streamed());
  CHECK(device_bytes(L, scan) == (std::uint64_t{12} << 24));
  // Planned for 200 MiB: 192 MiB passes 0.85 of it, so it streams, through half of it.
  t.device_memory = std::size_t{200} << 20;
  CHECK(planned_memory(gpu, t) == t.device_memory);
  L = choose_layout(gpu, t, std::size_t{1} << 24, scan);
  REQUIRE(L.streamed());
  CHECK(device_bytes(L, scan) == std::uint64_t{L.slots} * L.chunk * 12);
  CHECK(device_bytes(L, scan) <= t.device_memory / 2);
  // More than the device has plans for the device's own.
  t.device_memory = std::size_t{1} << 40;
  CHECK(planned_memory(gpu, t) == gpu.global_mem);
  CHECK_FALSE(choose_layout(gpu, t, std::size_t{1} << 24, scan).streamed());
  // In place: the host arrays are the buffers, nothing on the device.
  t.in_place = "on";
  t.device_memory = std::size_t{1} << 20;
  L = choose_layout(gpu, t, std::size_t{1} << 24, scan);
  CHECK(L.in_place);
  CHECK(device_bytes(L, scan) == 0);
  // The knob's text: bytes from 1 to 2^62, 2^K accepted; 0 and words refused.
  Tuning k;
  set_tuning(k, "device-memory=2^20");
  CHECK(k.device_memory == (std::size_t{1} << 20));
  CHECK_THROWS_AS(set_tuning(k, "device-memory=0"), Error);
  CHECK_THROWS_AS(set_tuning(k, "device-memory=1048575"), Error);  // at least 1 MiB
  CHECK_THROWS_AS(set_tuning(k, "device-memory=1G"), Error);
}

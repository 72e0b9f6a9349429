// test_tuning_cli.cpp: every tuning knob is checked before any work, from the environment and
// from --tune alike; a value out of range is exit 2 with one line naming the knob, never clamped.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "clreduce/error.hpp"
#include "clreduce/options.hpp"
#include "test_helpers.hpp"

using namespace clreduce;
using Catch::Matchers::ContainsSubstring;
using clreduce::test::run_cli;

namespace {

std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

}  // namespace

TEST_CASE("bad knob values are refused up front with one line and exit 2", "[cli][tuning]") {
  struct Case {
    const char* env;
    const char* says;
  };
  for (const Case& c :
       {Case{"CLREDUCE_DISABLE_CAPS=bogus", "CLREDUCE_DISABLE_CAPS must be 'all' or names from"},
        Case{"CLREDUCE_LOOKBACK_ROWS=99",
             "CLREDUCE_LOOKBACK_ROWS must be auto or a count from 1 to 16, not '99'"},
        Case{"CLREDUCE_LOOKBACK_ROWS=abc",
             "CLREDUCE_LOOKBACK_ROWS must be auto or a count from 1 to 16, not 'abc'"},
        Case{"CLREDUCE_SCAN_CHUNK=abc", "CLREDUCE_SCAN_CHUNK must be a count"},
        Case{"CLREDUCE_SCAN_GROUPS=0", "CLREDUCE_SCAN_GROUPS must be a count from 1 to 4096"},
        Case{"CLREDUCE_SCAN_GROUPS=1000000", "CLREDUCE_SCAN_GROUPS must be a count from 1 to 4096"},
        Case{"CLREDUCE_LOOKBACK_LIMIT=-1", "CLREDUCE_LOOKBACK_LIMIT must be a count from 0"},
        Case{"CLREDUCE_TRANSFER_PIECE=0", "CLREDUCE_TRANSFER_PIECE must be a byte count"},
        Case{"CLREDUCE_EXACT_SHAPE=topdown", "CLREDUCE_EXACT_SHAPE must be one of auto, gpu, cpu"},
        Case{"CLREDUCE_EXACT_GROUPS=0", "CLREDUCE_EXACT_GROUPS must be a count from 1 to 2^20"},
        Case{"CLREDUCE_EXACT_TERMS=5", "CLREDUCE_EXACT_TERMS must be a count from 2 to 4, not '5'"},
        Case{"CLREDUCE_SCAN_SPLIT_PIECE=2",
             "CLREDUCE_SCAN_SPLIT_PIECE must be auto or a weight from 0.05 to 1, not '2'"},
        Case{"CLREDUCE_SCAN_FAST_PATH=bogus",
             "CLREDUCE_SCAN_FAST_PATH must be one of auto, lookback, cpu, cpu-lookback, "
             "hierarchical"}}) {
    CAPTURE(c.env);
    // With a reduction before scan-fast in the list: the refusal comes before any variant runs.
    const auto r = run_cli("--variant fast,scan-fast --size 1000", c.env);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, ContainsSubstring(c.says));
    CHECK(lines(r.out) == 1);
  }
}

TEST_CASE("tuning from the command line: set, checked, applied after the environment",
          "[cli][tuning]") {
  auto r = run_cli("--size 1000 --tune lookback-rows=17");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring(
                        "--tune lookback-rows must be auto or a count from 1 to 16, not '17'"));
  r = run_cli("--size 1000 --tune no-such-knob=1");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("unknown tuning key 'no-such-knob'"));
  r = run_cli("--size 1000 --tune fast-shape");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, ContainsSubstring("KEY=VALUE"));
  // The environment's bad value is replaced by --tune's good one only if --tune is applied after:
  // the environment is read first and a bad value there is still refused.
  r = run_cli("--size 1000 --tune fast-shape=cpu", "CLREDUCE_FAST_SHAPE=fpga");
  CHECK(r.code == 2);
  r = run_cli("--size 1000 --tune fast-shape=topdown --verbose --format json",
              "CLREDUCE_FAST_SHAPE=gpu");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, ContainsSubstring("topdown-scheme"));
}

TEST_CASE(
    "an OpenCL error in a run names the variant, op, type and size and what to change (exit 3)",
    "[cli][tuning]") {
  // -DWG_SIZE=3 after the host's own -DWG_SIZE: the kernels' required group size no longer
  // matches the launch's.
  for (const std::string v : {"fast", "topdown", "scan-blelloch"}) {
    CAPTURE(v);
    const auto r = run_cli(
        "--size 1000 --repeat 1 --warmup 0 --tune build-options=-DWG_SIZE=3 "
        "--variant " +
        v);
    CHECK(r.code == 3);
    CHECK_THAT(r.out, ContainsSubstring("clreduce: " + v +
                                        (v == "scan-blelloch" ? " sum scan of" : " sum of") +
                                        " 1000 int32 elements: "));
    CHECK_THAT(r.out, ContainsSubstring("CL_INVALID_WORK_GROUP_SIZE"));
    CHECK_THAT(r.out, ContainsSubstring("change --local-size, or the -D options of --tune "
                                        "build-options"));
    CHECK(lines(r.out) == 1);
  }
}

TEST_CASE("the help lists every tuning knob", "[cli][tuning]") {
  const auto r = run_cli("--help");
  CHECK(r.code == 0);
  for (const TuningKey& k : tuning_keys()) {
    CAPTURE(k.key);
    CHECK_THAT(r.out, ContainsSubstring(std::string("  ") + k.key + " = "));
  }
}

TEST_CASE("set_tuning refuses what it cannot take and keeps what it can", "[tuning]") {
  Tuning t;
  set_tuning(t, "lookback-limit=0");
  CHECK(t.lookback_limit == 0);
  set_tuning(t, "CLREDUCE_SCAN_CHUNK", "16", "env");
  CHECK(t.scan_chunk == 16);
  set_tuning(t, "disable-caps", "nv_shfl,subgroups", "x");
  CHECK(cap_disabled(t, "nv_shfl"));
  CHECK_FALSE(cap_disabled(t, "wg_collectives"));
  for (const char* bad :
       {"fast-groups=-1", "fast-groups=1e3", "fast-groups= 5", "fast-groups=1048577",
        "lookback-rows=0", "scan-chunk=18446744073709551616", "=3", "scan-split-piece=0",
        "scan-split-piece=nan", "scan-split-piece=0.3x", "scan-split-piece="}) {
    CAPTURE(bad);
    try {
      set_tuning(t, bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.category() == Errc::kUsage);
    }
  }
}

TEST_CASE("tuning_values gives every knob's value as text, and each knob changes its own",
          "[tuning]") {
  // A valid value other than the default for every knob: a knob added without one fails here.
  const std::pair<const char*, const char*> others[] = {
      {"build-options", "-DX=1"},   {"disable-caps", "nv_shfl,subgroups"},
      {"fast-shape", "cpu"},        {"fast-groups", "3"},
      {"fast-arg-streams", "on"},   {"exact-shape", "gpu"},
      {"exact-groups", "5"},        {"exact-terms", "3"},
      {"exact-store", "item"},      {"carry-layout", "strided"},
      {"share-threads", "off"},     {"scan-split", "off"},
      {"scan-fast-path", "cpu"},    {"lookback-limit", "7"},
      {"lookback-rows", "2"},       {"lookback-vec", "4"},
      {"lookback-read", "atomic"},  {"lookback-ids", "counter"},
      {"lookback-span", "3"},       {"scan-nt-stores", "off"},
      {"scan-chunk", "16"},         {"scan-groups", "9"},
      {"scan-tile", "2048"},        {"transfer-piece", "4096"},
      {"max-chunk", "8192"},        {"stream", "on"},
      {"stream-bytes", "65536"},    {"stream-slots", "5"},
      {"stream-source", "write"},   {"in-place", "off"},
      {"device-memory", "2097152"}, {"expr-lanes", "off"},
      {"expr-fold", "off"},         {"var-sums", "off"},
      {"lse-exp", "double"},        {"row-count", "acc"},
      {"expr-arg-vec", "off"},      {"expr-blocks", "on"},
      {"timeout", "2.5"},           {"segments-shape", "cpu"},
      {"segments-lane", "16"},      {"segments-piece", "4096"},
      {"segments-unroll", "4"},     {"segments-vec", "4"},
      {"segments-simd", "off"},     {"axis-cols", "4"},
      {"axis-unroll", "8"},         {"axis-pieces", "3"},
      {"scan-split-piece", "0.25"},
  };
  const auto base = tuning_values(Tuning());
  REQUIRE(base.size() == tuning_keys().size());
  for (std::size_t k = 0; k < base.size(); ++k) CHECK(base[k].first == tuning_keys()[k].key);
  for (const TuningKey& key : tuning_keys()) {
    CAPTURE(key.key);
    const auto at = std::find_if(std::begin(others), std::end(others),
                                 [&](const auto& o) { return std::string(o.first) == key.key; });
    REQUIRE(at != std::end(others));
    Tuning t;
    set_tuning(t, at->first, at->second, "test");
    const auto changed = tuning_values(t);
    REQUIRE(changed.size() == base.size());
    for (std::size_t k = 0; k < base.size(); ++k) {
      CAPTURE(base[k].first);
      CHECK((changed[k].second != base[k].second) == (base[k].first == key.key));
    }
  }
  Tuning a, b;
  set_tuning(a, "timeout", "0.1", "test");
  set_tuning(b, "timeout", "1e-1", "test");
  CHECK(tuning_values(a) == tuning_values(b));  // the value, not its spelling
}

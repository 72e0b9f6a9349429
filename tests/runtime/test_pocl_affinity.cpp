// test_pocl_affinity.cpp: the clreduce program asks PoCL to pin its workers only where the user
// left POCL_AFFINITY unset and the process may run on every core (PoCL pins worker i to CPU i).
#include <catch2/catch_test_macros.hpp>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>

#include "runtime/pocl_affinity.hpp"

using namespace clreduce;

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::optional<std::string>(v) : std::nullopt;
}

}  // namespace

TEST_CASE("PoCL's workers are pinned only where the user left it and every core is ours",
          "[device]") {
  const std::optional<std::string> saved = env("POCL_AFFINITY");
  cpu_set_t mask;
  REQUIRE(sched_getaffinity(0, sizeof mask, &mask) == 0);
  const long cpus = std::max(sysconf(_SC_NPROCESSORS_CONF), sysconf(_SC_NPROCESSORS_ONLN));
  bool every = true;
  for (long c = 0; c < cpus; ++c) every = every && CPU_ISSET(static_cast<int>(c), &mask);

  setenv("POCL_AFFINITY", "0", 1);  // the user's choice stays
  CHECK_FALSE(pin_pocl_workers());
  CHECK(env("POCL_AFFINITY") == "0");

  unsetenv("POCL_AFFINITY");
  CHECK(pin_pocl_workers() == every);
  CHECK(env("POCL_AFFINITY") == (every ? std::optional<std::string>("1") : std::nullopt));

  if (cpus >= 2 && CPU_ISSET(1, &mask)) {  // limited to CPU 1: PoCL's worker 0 could not pin
    unsetenv("POCL_AFFINITY");
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
    CHECK_FALSE(pin_pocl_workers());
    CHECK_FALSE(env("POCL_AFFINITY").has_value());
    REQUIRE(sched_setaffinity(0, sizeof mask, &mask) == 0);
  }

  if (saved)
    setenv("POCL_AFFINITY", saved->c_str(), 1);
  else
    unsetenv("POCL_AFFINITY");
}

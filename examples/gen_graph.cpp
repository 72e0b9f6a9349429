// gen_graph.cpp: writes a random DIMACS shortest-path graph (.gr) to stdout, the same for the
// same arguments on every machine. The first min(M, N-1) arcs form a random tree from node 1
// (every node i <= M+1 is reachable from node 1; each arc goes from a lower node to a higher
// one, so other sources reach fewer nodes); the rest join random pairs, self-loops and parallel
// arcs included. Weights are uniform in 0..MAXW.
//
// usage: gen_graph N M SEED [MAXW]   (MAXW default 1000); exit 2 on bad arguments.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

// splitmix64: a fast, well-mixed stream from one 64-bit state.
std::uint64_t next(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool parse(const char* s, std::uint64_t max, std::uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || errno == ERANGE || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t n = 0, m = 0, seed = 0, maxw = 1000;
  if (argc < 4 || argc > 5 || !parse(argv[1], 0x7fffffff, &n) || n < 1 ||
      !parse(argv[2], 1ull << 40, &m) || !parse(argv[3], ~0ull, &seed) ||
      (argc == 5 && !parse(argv[4], 1ull << 62, &maxw))) {
    std::cerr << "usage: gen_graph N M SEED [MAXW]: N nodes (1..2^31-1), M arcs, weights 0..MAXW "
                 "(default 1000)\n";
    return 2;
  }
  std::uint64_t s = seed;
  std::string out = "c random graph: gen_graph " + std::to_string(n) + " " + std::to_string(m) +
                    " " + std::to_string(seed) + " " + std::to_string(maxw) + "\np sp " +
                    std::to_string(n) + " " + std::to_string(m) + "\n";
  for (std::uint64_t k = 0; k < m; ++k) {
    std::uint64_t u, v;
    if (k + 1 < n) {  // tree arc into node k + 2 from one before it
      v = k + 2;
      u = 1 + next(s) % (v - 1);
    } else {
      u = 1 + next(s) % n;
      v = 1 + next(s) % n;
    }
    const std::uint64_t w = next(s) % (maxw + 1);
    out += "a " + std::to_string(u) + " " + std::to_string(v) + " " + std::to_string(w) + "\n";
    if (out.size() > (1u << 20)) {
      std::cout << out;
      out.clear();
    }
  }
  std::cout << out;
  return std::cout ? 0 : 1;
}

// exact_sum.cpp: exponent bins of integer significands (every finite float or double is m * 2^e
// exactly), then one big-integer sum of the bins and a rounding by big-integer comparison.
#include "verify/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "clreduce/error.hpp"
#include "core/parallel.hpp"

namespace clreduce {
namespace {

// The bit layout of float and double.
template <class T> struct Layout;
template <> struct Layout<float> {
  using Bits = std::uint32_t;
  static constexpr int kMantBits = 23;   // stored significand bits
  static constexpr int kExpMax = 255;    // biased exponent of inf and NaN
  static constexpr int kUnitExp = -149;  // the smallest subnormal is 2^kUnitExp
};
template <> struct Layout<double> {
  using Bits = std::uint64_t;
  static constexpr int kMantBits = 52;
  static constexpr int kExpMax = 2047;
  static constexpr int kUnitExp = -1074;
};

// A non-negative integer in radix 2^64, least significant word first, in place (no heap: the
// sums of short segments are taken by the million). The largest is a double sum's: 2^2098 units
// times 2^64 elements, 36 words; kWords leaves room for big_add's carries past it.
class Big {
 public:
  static constexpr std::size_t kWords = 40;
  Big() = default;
  Big(std::size_t n, std::uint64_t v) { resize(n, v); }
  Big(const std::uint64_t* first, const std::uint64_t* last) {
    for (; first != last; ++first) push_back(*first);
  }
  // Copies only the words in use.
  Big(const Big& o) : n_(o.n_) { std::copy(o.w_, o.w_ + o.n_, w_); }
  Big& operator=(const Big& o) {
    n_ = o.n_;
    std::copy(o.w_, o.w_ + o.n_, w_);
    return *this;
  }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  void resize(std::size_t n, std::uint64_t v) {
    if (n > kWords) throw Error(Errc::kInternal, "internal: an exact sum past its words");
    for (std::size_t i = n_; i < n; ++i) w_[i] = v;
    n_ = n;
  }
  void push_back(std::uint64_t v) { resize(n_ + 1, v); }
  void pop_back() { --n_; }
  std::uint64_t& back() { return w_[n_ - 1]; }
  std::uint64_t back() const { return w_[n_ - 1]; }
  std::uint64_t& operator[](std::size_t i) { return w_[i]; }
  std::uint64_t operator[](std::size_t i) const { return w_[i]; }
  const std::uint64_t* begin() const { return w_; }

 private:
  std::uint64_t w_[kWords];
  std::size_t n_ = 0;
};

// a += v * 2^shift.
void big_add(Big& a, unsigned __int128 v, std::size_t shift) {
  std::size_t k = shift / 64;
  const unsigned r = static_cast<unsigned>(shift % 64);
  // v * 2^r spans at most three words.
  std::uint64_t w[3] = {static_cast<std::uint64_t>(v << r),
                        static_cast<std::uint64_t>(r ? v >> (64 - r) : v >> 64),
                        static_cast<std::uint64_t>(r ? v >> (128 - r) : 0)};
  if (a.size() < k + 4) a.resize(k + 4, 0);
  unsigned __int128 carry = 0;
  for (std::size_t i = 0; i < 3 || carry; ++i, ++k) {
    if (k >= a.size()) a.push_back(0);
    const unsigned __int128 s = static_cast<unsigned __int128>(a[k]) + (i < 3 ? w[i] : 0) + carry;
    a[k] = static_cast<std::uint64_t>(s);
    carry = s >> 64;
  }
}

void big_trim(Big& a) {
  while (!a.empty() && a.back() == 0) a.pop_back();
}

// The words of a without its leading zeros.
std::size_t big_used(const Big& a) {
  std::size_t n = a.size();
  while (n > 0 && a[n - 1] == 0) --n;
  return n;
}

// -1, 0, 1 as a < b, a == b, a > b.
int big_cmp(const Big& a, const Big& b) {
  const std::size_t na = big_used(a), nb = big_used(b);
  if (na != nb) return na < nb ? -1 : 1;
  for (std::size_t i = na; i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

// a - b, for a >= b.
Big big_sub(const Big& a, const Big& b) {
  Big d(a.size(), 0);
  std::uint64_t borrow = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::uint64_t bi = i < b.size() ? b[i] : 0;
    const unsigned __int128 sub = static_cast<unsigned __int128>(bi) + borrow;
    d[i] = a[i] - static_cast<std::uint64_t>(sub);
    borrow = static_cast<unsigned __int128>(a[i]) < sub ? 1 : 0;
  }
  big_trim(d);
  return d;
}

// a >> s (floor), and a with its low s bits only.
Big big_shr(const Big& a, std::size_t s) {
  Big r;
  const std::size_t k = s / 64;
  const unsigned b = static_cast<unsigned>(s % 64);
  for (std::size_t i = k; i < a.size(); ++i) {
    std::uint64_t w = a[i] >> b;
    if (b && i + 1 < a.size()) w |= a[i + 1] << (64 - b);
    r.push_back(w);
  }
  big_trim(r);
  return r;
}
Big big_low(const Big& a, std::size_t s) {
  Big r(a.begin(), a.begin() + std::min(a.size(), (s + 63) / 64));
  if (s % 64 && r.size() == (s + 63) / 64) r.back() &= (std::uint64_t{1} << (s % 64)) - 1;
  big_trim(r);
  return r;
}
Big big_pow2(std::size_t s) {
  Big r(s / 64 + 1, 0);
  r.back() = std::uint64_t{1} << (s % 64);
  return r;
}

// Index of the highest set bit; a non-zero.
std::size_t big_top(const Big& a) {
  const std::uint64_t w = a.back();
  std::size_t b = 63;
  while (!((w >> b) & 1)) --b;
  return (a.size() - 1) * 64 + b;
}

// The exact sum of x[0..n) before rounding: the positive and the negative elements' magnitudes
// apart, in units of the smallest subnormal, and the specials.
struct Parts {
  Big p, q;
  bool nan = false, pinf = false, ninf = false;
};

template <class T> Parts exact_parts(const T* x, std::size_t n) {
  using L = Layout<T>;
  using Bits = typename L::Bits;
  Parts r;
  const Bits sign = Bits{1} << (8 * sizeof(Bits) - 1);
  // One element's bits: the specials noted, a finite one's significand and bin (its value is
  // sig * 2^(s + kUnitExp)); false for the specials.
  const auto split = [&](const T& xi, Bits& sig, std::size_t& s, bool& negative) {
    Bits b;
    std::memcpy(&b, &xi, sizeof b);
    const int e = static_cast<int>((b >> L::kMantBits) & static_cast<Bits>(L::kExpMax));
    const Bits m = b & ((Bits{1} << L::kMantBits) - 1);
    if (e == L::kExpMax) {
      if (m)
        r.nan = true;
      else if (b & sign)
        r.ninf = true;
      else
        r.pinf = true;
      return false;
    }
    // Normal: (2^kMantBits + m) * 2^(e - 1) units; subnormal (e = 0): m units.
    s = e ? static_cast<std::size_t>(e - 1) : 0;
    sig = e ? (m | (Bits{1} << L::kMantBits)) : m;
    negative = (b & sign) != 0;
    return true;
  };
  Bits sig = 0;
  std::size_t s = 0;
  bool negative = false;
  if (n < 64) {
    // A few elements (a short segment's): each added where it lies, without the bins (whose
    // clearing and walk would cost more than the elements).
    for (std::size_t i = 0; i < n; ++i)
      if (split(x[i], sig, s, negative)) big_add(negative ? r.q : r.p, sig, s);
    return r;
  }
  // bins[s]: the sum of the significands of the elements of value m * 2^(s + kUnitExp), one
  // sum for positives, one for negatives; 128 bits take 2^74 double significands.
  std::vector<unsigned __int128> pos(L::kExpMax), neg(L::kExpMax);
  for (std::size_t i = 0; i < n; ++i)
    if (split(x[i], sig, s, negative)) (negative ? neg : pos)[s] += sig;
  for (std::size_t k = 0; k < pos.size(); ++k) {
    if (pos[k]) big_add(r.p, pos[k], k);
    if (neg[k]) big_add(r.q, neg[k], k);
  }
  return r;
}

// The parts' sum p - q rounded once to T: the one rounding of exact_sum and exact_round.
template <class T> T round_parts(const Parts& a) {
  using L = Layout<T>;
  if (a.nan || (a.pinf && a.ninf)) return std::numeric_limits<T>::quiet_NaN();
  if (a.pinf) return std::numeric_limits<T>::infinity();
  if (a.ninf) return -std::numeric_limits<T>::infinity();
  const int c = big_cmp(a.p, a.q);
  if (c == 0) return T(0);  // +0, as NumPy's sum (which adds from +0) gives
  const Big mag = c > 0 ? big_sub(a.p, a.q) : big_sub(a.q, a.p);
  constexpr std::size_t prec = L::kMantBits + 1;
  const std::size_t top = big_top(mag);
  T r;
  if (top < prec) {  // below 2^prec units: exactly representable (subnormal or the first binade)
    r = std::ldexp(static_cast<T>(mag[0]), L::kUnitExp);
  } else {
    // mag = kept * 2^drop + rem, 0 <= rem < 2^drop; round kept to nearest, ties to even.
    const std::size_t drop = top + 1 - prec;
    const Big kept = big_shr(mag, drop);
    std::uint64_t k = kept[0];
    const int vs_half = big_cmp(big_low(mag, drop), big_pow2(drop - 1));
    if (vs_half > 0 || (vs_half == 0 && (k & 1))) ++k;
    // k <= 2^prec is exact in T; ldexp overflows to infinity past the largest finite value.
    r = std::ldexp(static_cast<T>(k), static_cast<int>(drop) + L::kUnitExp);
  }
  return c > 0 ? r : -r;
}

// Arrays from this many elements are summed on the host's cores (parallel_state).
constexpr std::size_t kParallelFrom = std::size_t{1} << 22;

// Carries s's limbs: each below the top into [0, 2^32), the top one signed.
void normalise(ExactState& s) {
  __int128 carry = 0;
  for (std::size_t j = 0; j + 1 < ExactState::kLimbs; ++j) {
    const __int128 v = static_cast<__int128>(s.limb[j]) + carry;
    s.limb[j] = static_cast<std::int64_t>(v & 0xFFFFFFFF);
    carry = v >> 32;  // floor(v / 2^32)
  }
  const __int128 top = static_cast<__int128>(s.limb[ExactState::kLimbs - 1]) + carry;
  if (top > std::numeric_limits<std::int64_t>::max() ||
      top < std::numeric_limits<std::int64_t>::min())
    throw Error(Errc::kInternal, "internal: an exact state past its top limb");
  s.limb[ExactState::kLimbs - 1] = static_cast<std::int64_t>(top);
}

constexpr std::uint32_t kAllFlags = ExactState::kNaN | ExactState::kPosInf | ExactState::kNegInf;

template <class T> typename Layout<T>::Bits bits_of(double v) {
  const T t = static_cast<T>(v);
  typename Layout<T>::Bits b;
  std::memcpy(&b, &t, sizeof b);
  return b;
}

// Position of a value on the line of representable values of T: consecutive values differ by 1,
// +0 and -0 are both 0.
template <class T> long double ordinal(double v) {
  const auto b = bits_of<T>(v);
  const auto sign = decltype(b){1} << (8 * sizeof(b) - 1);
  const long double mag = static_cast<long double>(b & ~sign);
  return b & sign ? -mag : mag;
}

// The state of parts, the exact sum of n elements.
ExactState state_of(const Parts& parts, std::size_t n) {
  ExactState s;
  if (n == 0) return s;
  s.empty = 0;
  s.flags = (parts.nan ? ExactState::kNaN : 0) | (parts.pinf ? ExactState::kPosInf : 0) |
            (parts.ninf ? ExactState::kNegInf : 0);
  // p - q, digit by digit (each in (-2^32, 2^32)), then carried.
  auto digit = [](const Big& b, std::size_t j) -> std::int64_t {
    return j / 2 < b.size() ? static_cast<std::int64_t>((b[j / 2] >> (32 * (j % 2))) & 0xFFFFFFFF)
                            : 0;
  };
  for (const Big* b : {&parts.p, &parts.q}) {
    Big t = *b;
    big_trim(t);
    if (t.size() * 2 > ExactState::kLimbs)
      throw Error(Errc::kInternal, "internal: an exact sum past the state's limbs");
  }
  for (std::size_t j = 0; j < ExactState::kLimbs; ++j)
    s.limb[j] = digit(parts.p, j) - digit(parts.q, j);
  normalise(s);
  return s;
}

// The state of x[0..n): below kParallelFrom elements in one pass; else one state per block of
// 2^20 elements on the host's cores, the blocks' states added exactly (exact_add: integers with
// carries, the specials OR-ed), which is the same state as one pass's whatever the blocks.
template <class T> ExactState state_t(const T* x, std::size_t n) {
  if (n < kParallelFrom) return state_of(exact_parts(x, n), n);
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<ExactState> part(blocks);
  parallel_for(blocks, true, [&](std::size_t b) {
    const std::size_t at = b * kBlock, len = std::min(kBlock, n - at);
    part[b] = state_of(exact_parts(x + at, len), len);
  });
  ExactState s;
  for (const ExactState& p : part) exact_add(s, p);
  return s;
}

// A few floats (a short segment's) whose running double sum from +0 stays exact: that sum,
// else false. Exact where every step's rounding error (TwoSum's, itself exact) is 0; then the
// exact sum is a double, and its conversion to float is its one rounding to nearest, ties to
// even, as round_parts rounds (an exact zero: +0, as the sum from +0 gives it).
bool exact_in_double(const float* x, std::size_t n, double& sum) {
  double s = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double a = x[i];
    if (!std::isfinite(a)) return false;
    const double t = s + a, b = t - s;
    if ((s - (t - b)) + (a - b) != 0.0) return false;
    s = t;
  }
  sum = s;
  return true;
}

template <class T> T exact_sum_t(const T* x, std::size_t n) {
  if constexpr (std::is_same_v<T, float>) {
    double s = 0.0;
    if (n < 64 && exact_in_double(x, n, s)) return static_cast<float>(s);
  }
  if (n < kParallelFrom) return round_parts<T>(exact_parts(x, n));
  // The same rounding (round_parts) of the same exact sum, from the state.
  return static_cast<T>(
      exact_round(std::is_same_v<T, float> ? DType::kFloat : DType::kDouble, state_t(x, n)).f);
}

}  // namespace

ExactState exact_state_of(const std::int64_t* limbs, std::size_t count, std::uint64_t flags) {
  if (count > ExactState::kLimbs || (flags & ~std::uint64_t{kAllFlags}))
    throw Error(Errc::kInternal, "internal: an exact state of " + std::to_string(count) +
                                     " limbs with flags " + std::to_string(flags) +
                                     " (not written by the kernel?)");
  ExactState s;
  std::copy(limbs, limbs + count, s.limb);
  s.flags = static_cast<std::uint32_t>(flags);
  s.empty = 0;
  normalise(s);
  return s;
}

ExactState exact_state(const float* x, std::size_t n) { return state_t(x, n); }
ExactState exact_state(const double* x, std::size_t n) { return state_t(x, n); }

ExactState exact_state(const HostArray& a) {
  if (a.type == DType::kFloat) return exact_state(a.as<float>(), a.n);
  if (a.type == DType::kDouble) return exact_state(a.as<double>(), a.n);
  throw Error(Errc::kInternal, "internal: exact_state of " + dtype_name(a.type));
}

void exact_add(ExactState& into, const ExactState& from) {
  if (from.empty) return;
  if (into.empty) {
    into = from;
    return;
  }
  for (std::size_t j = 0; j < ExactState::kLimbs; ++j) into.limb[j] += from.limb[j];
  into.flags |= from.flags;
  normalise(into);
}

bool same_state(const ExactState& a, const ExactState& b) {
  constexpr std::uint32_t specials = ExactState::kNaN | ExactState::kPosInf | ExactState::kNegInf;
  if ((a.flags & specials) != (b.flags & specials)) return false;
  if (a.flags & specials) return true;
  return std::equal(a.limb, a.limb + ExactState::kLimbs, b.limb);
}

Value exact_round(DType t, const ExactState& s) {
  if (t != DType::kFloat && t != DType::kDouble)
    throw Error(Errc::kInternal, "internal: exact_round to " + dtype_name(t));
  ExactState m = s;
  normalise(m);
  const bool negative = m.limb[ExactState::kLimbs - 1] < 0;
  if (negative) {
    for (std::int64_t& l : m.limb) l = -l;
    normalise(m);
  }
  static_assert(ExactState::kLimbs % 2 == 0);
  if (m.limb[ExactState::kLimbs - 1] >> 32)
    throw Error(Errc::kInternal, "internal: an exact state past its top limb");
  Parts parts;
  Big& mag = negative ? parts.q : parts.p;
  for (std::size_t j = 0; j < ExactState::kLimbs; j += 2)
    mag.push_back(static_cast<std::uint64_t>(m.limb[j]) | static_cast<std::uint64_t>(m.limb[j + 1])
                                                              << 32);
  parts.nan = (s.flags & ExactState::kNaN) != 0;
  parts.pinf = (s.flags & ExactState::kPosInf) != 0;
  parts.ninf = (s.flags & ExactState::kNegInf) != 0;
  Value v;
  v.type = t;
  v.f = t == DType::kFloat ? static_cast<double>(round_parts<float>(parts))
                           : round_parts<double>(parts);
  return v;
}

float exact_sum(const float* x, std::size_t n) { return exact_sum_t(x, n); }
double exact_sum(const double* x, std::size_t n) { return exact_sum_t(x, n); }

Value exact_sum(const HostArray& a) {
  Value v;
  v.type = a.type;
  if (a.type == DType::kFloat) {
    v.f = static_cast<double>(exact_sum(a.as<float>(), a.n));
  } else if (a.type == DType::kDouble) {
    v.f = exact_sum(a.as<double>(), a.n);
  } else {
    throw Error(Errc::kInternal, "internal: exact_sum of " + dtype_name(a.type));
  }
  return v;
}

bool same_bits(const Value& got, const Value& ref) {
  if (std::isnan(got.f) || std::isnan(ref.f)) return std::isnan(got.f) && std::isnan(ref.f);
  return ref.type == DType::kFloat ? bits_of<float>(got.f) == bits_of<float>(ref.f)
                                   : bits_of<double>(got.f) == bits_of<double>(ref.f);
}

FloatError float_error(const Value& got, const Value& ref) {
  FloatError e;
  if (std::isnan(got.f) || std::isnan(ref.f)) {
    const double d = std::isnan(got.f) && std::isnan(ref.f) ? 0.0 : std::nan("");
    e.ulps = e.rel = d;
    return e;
  }
  const bool single = ref.type == DType::kFloat;
  const double g = single ? static_cast<double>(static_cast<float>(got.f)) : got.f;
  if (g == ref.f) return e;
  if (std::isinf(g) || std::isinf(ref.f)) {
    e.ulps = e.rel = std::numeric_limits<double>::infinity();
    return e;
  }
  e.ulps = static_cast<double>(std::fabs(single ? ordinal<float>(g) - ordinal<float>(ref.f)
                                                : ordinal<double>(g) - ordinal<double>(ref.f)));
  const long double diff = std::fabs(static_cast<long double>(g) - static_cast<long double>(ref.f));
  e.rel = ref.f == 0.0 ? std::numeric_limits<double>::infinity()
                       : static_cast<double>(diff / std::fabs(static_cast<long double>(ref.f)));
  return e;
}

}  // namespace clreduce

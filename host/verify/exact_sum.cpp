// exact_sum.cpp: exponent bins of integer significands (every finite float or double is m * 2^e
// exactly), then one big-integer sum of the bins and a rounding by big-integer comparison.
#include "verify/exact_sum.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "clreduce/error.hpp"

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

// A non-negative integer in radix 2^64, least significant word first.
using Big = std::vector<std::uint64_t>;

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

// -1, 0, 1 as a < b, a == b, a > b.
int big_cmp(Big a, Big b) {
  big_trim(a);
  big_trim(b);
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (std::size_t i = a.size(); i-- > 0;)
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
  Big r(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), (s + 63) / 64)));
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
  // bins[s]: the sum of the significands of the elements of value m * 2^(s + kUnitExp), one
  // sum for positives, one for negatives; 128 bits take 2^74 double significands.
  std::vector<unsigned __int128> pos(L::kExpMax), neg(L::kExpMax);
  Parts r;
  const Bits sign = Bits{1} << (8 * sizeof(Bits) - 1);
  for (std::size_t i = 0; i < n; ++i) {
    Bits b;
    std::memcpy(&b, &x[i], sizeof b);
    const int e = static_cast<int>((b >> L::kMantBits) & static_cast<Bits>(L::kExpMax));
    const Bits m = b & ((Bits{1} << L::kMantBits) - 1);
    if (e == L::kExpMax) {
      if (m)
        r.nan = true;
      else if (b & sign)
        r.ninf = true;
      else
        r.pinf = true;
      continue;
    }
    // Normal: (2^kMantBits + m) * 2^(e - 1) units; subnormal (e = 0): m units.
    const std::size_t s = e ? static_cast<std::size_t>(e - 1) : 0;
    const Bits sig = e ? (m | (Bits{1} << L::kMantBits)) : m;
    ((b & sign) ? neg : pos)[s] += sig;
  }
  for (std::size_t s = 0; s < pos.size(); ++s) {
    if (pos[s]) big_add(r.p, pos[s], s);
    if (neg[s]) big_add(r.q, neg[s], s);
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

template <class T> T exact_sum_t(const T* x, std::size_t n) {
  return round_parts<T>(exact_parts(x, n));
}

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

ExactState exact_state(const HostArray& a) {
  Parts parts;
  if (a.type == DType::kFloat)
    parts = exact_parts(a.as<float>(), a.n);
  else if (a.type == DType::kDouble)
    parts = exact_parts(a.as<double>(), a.n);
  else
    throw Error(Errc::kInternal, "internal: exact_state of " + dtype_name(a.type));
  ExactState s;
  if (a.n == 0) return s;
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

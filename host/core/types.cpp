// types.cpp: names, sizes and NumPy accumulator rules for DType and Op.
#include "clreduce/types.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include "clreduce/error.hpp"
#include "core/parallel.hpp"
#include "io/text.hpp"

// The kernels' type and operator codes: only the table at the top of cl/clreduce.h is read.
#define CLR_CODES_ONLY
#include "clreduce.h"
#undef CLR_CODES_ONLY

namespace clreduce {

// Kernel builds pass static_cast<int> of these enums as -DCLR_TYPE, -DCLR_ACC and -DCLR_OP.
static_assert(static_cast<int>(DType::kInt32) == CLR_INT32 &&
                  static_cast<int>(DType::kUInt32) == CLR_UINT32 &&
                  static_cast<int>(DType::kInt64) == CLR_INT64 &&
                  static_cast<int>(DType::kUInt64) == CLR_UINT64 &&
                  static_cast<int>(DType::kFloat) == CLR_FLOAT &&
                  static_cast<int>(DType::kDouble) == CLR_DOUBLE &&
                  static_cast<int>(DType::kFloat16) == CLR_HALF &&
                  static_cast<int>(DType::kBool) == CLR_BOOL &&
                  static_cast<int>(DType::kInt8) == CLR_INT8 &&
                  static_cast<int>(DType::kUInt8) == CLR_UINT8 &&
                  static_cast<int>(DType::kInt16) == CLR_INT16 &&
                  static_cast<int>(DType::kUInt16) == CLR_UINT16,
              "DType's values must be the kernels' type codes (cl/clreduce.h)");
static_assert(static_cast<int>(Op::kSum) == CLR_SUM && static_cast<int>(Op::kProd) == CLR_PROD &&
                  static_cast<int>(Op::kMin) == CLR_MIN && static_cast<int>(Op::kMax) == CLR_MAX &&
                  static_cast<int>(Op::kArgMin) == CLR_ARGMIN &&
                  static_cast<int>(Op::kArgMax) == CLR_ARGMAX,
              "Op's values must be the kernels' operator codes (cl/clreduce.h)");

const std::vector<DType>& all_dtypes() {
  static const std::vector<DType> v = {DType::kInt32,  DType::kUInt32, DType::kInt64,
                                       DType::kUInt64, DType::kFloat,  DType::kDouble};
  return v;
}

const std::vector<DType>& input_dtypes() {
  static const std::vector<DType> v = {DType::kInt32,   DType::kUInt32, DType::kInt64,
                                       DType::kUInt64,  DType::kFloat,  DType::kDouble,
                                       DType::kFloat16, DType::kBool,   DType::kInt8,
                                       DType::kUInt8,   DType::kInt16,  DType::kUInt16};
  return v;
}

bool is_variant_dtype(DType t) { return static_cast<int>(t) <= static_cast<int>(DType::kDouble); }

void no_host_half(const char* where) {
  throw Error(Errc::kUsage, std::string("float16 is not taken by ") + where +
                                " (it reduces through the engine's rows)");
}

double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
  double v;
  if (exp == 0x1f)
    v = frac ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp == 0)
    v = std::ldexp(frac, -24);  // subnormal
  else
    v = std::ldexp(frac | 0x400, exp - 25);
  return sign ? -v : v;
}

std::uint16_t double_to_half(double x) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  if (std::isnan(x)) return static_cast<std::uint16_t>(sign | 0x7e00);
  const double a = std::fabs(x);
  if (a >= 65520.0) return static_cast<std::uint16_t>(sign | 0x7c00);  // rounds to inf
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal (or zero): a multiple of 2^-24, rounded to nearest even by nearbyint.
    return static_cast<std::uint16_t>(
        sign | static_cast<std::uint16_t>(std::nearbyint(std::ldexp(a, 24))));
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  // 11 significant bits: the significand as an integer in [2^10, 2^11], rounded to even.
  const double q = std::nearbyint(std::ldexp(m, 11));
  std::uint32_t sig = static_cast<std::uint32_t>(q);
  int ex = e - 1;  // a = (sig / 2^10) 2^ex
  if (sig == 2048) {
    sig = 1024;
    ++ex;
  }
  if (ex > 15) return static_cast<std::uint16_t>(sign | 0x7c00);
  return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(ex + 15) << 10 |
                                    (sig & 0x3ff));
}

const std::vector<Op>& all_ops() {
  static const std::vector<Op> v = {Op::kSum, Op::kProd,   Op::kMin,
                                    Op::kMax, Op::kArgMin, Op::kArgMax};
  return v;
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::kInt32: return "int32";
    case DType::kUInt32: return "uint32";
    case DType::kInt64: return "int64";
    case DType::kUInt64: return "uint64";
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kFloat16: return "float16";
    case DType::kBool: return "bool";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
  }
  return "?";
}

std::string op_name(Op op) {
  switch (op) {
    case Op::kSum: return "sum";
    case Op::kProd: return "prod";
    case Op::kMin: return "min";
    case Op::kMax: return "max";
    case Op::kArgMin: return "argmin";
    case Op::kArgMax: return "argmax";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  std::string valid;
  for (DType t : input_dtypes()) {
    if (s == dtype_name(t)) return t;
    valid += (valid.empty() ? "" : ", ") + dtype_name(t);
  }
  if (s == "float32") return DType::kFloat;
  if (s == "float64") return DType::kDouble;
  if (s == "half") return DType::kFloat16;
  throw Error(Errc::kUsage, "unknown type '" + printable(s) + "' (valid: " + valid + ")");
}

Op parse_op(const std::string& s) {
  std::string valid;
  for (Op op : all_ops()) {
    if (s == op_name(op)) return op;
    valid += (valid.empty() ? "" : ", ") + op_name(op);
  }
  throw Error(Errc::kUsage, "unknown op '" + printable(s) + "' (valid: " + valid + ")");
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8: return 1;
    case DType::kFloat16:
    case DType::kInt16:
    case DType::kUInt16: return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat: return 4;
    default: return 8;
  }
}

bool is_float(DType t) { return t == DType::kFloat || t == DType::kDouble || t == DType::kFloat16; }
bool is_signed(DType t) {
  return t == DType::kInt32 || t == DType::kInt64 || t == DType::kInt8 || t == DType::kInt16;
}

std::string dtype_cl_name(DType t) {
  switch (t) {
    case DType::kInt32: return "int";
    case DType::kUInt32: return "uint";
    case DType::kInt64: return "long";
    case DType::kUInt64: return "ulong";
    case DType::kFloat: return "float";
    case DType::kDouble: return "double";
    case DType::kFloat16: return "half";  // read with vload_half: a float in expressions
    case DType::kBool: return "uchar";
    case DType::kInt8: return "char";
    case DType::kUInt8: return "uchar";
    case DType::kInt16: return "short";
    case DType::kUInt16: return "ushort";
  }
  return "?";
}

bool is_arg_op(Op op) { return op == Op::kArgMin || op == Op::kArgMax; }
bool has_identity(Op op) { return op == Op::kSum || op == Op::kProd; }

DType acc_dtype(Op op, DType t) {
  if (op == Op::kSum || op == Op::kProd) {
    if (t == DType::kInt32 || t == DType::kInt8 || t == DType::kInt16 || t == DType::kBool)
      return DType::kInt64;
    if (t == DType::kUInt32 || t == DType::kUInt8 || t == DType::kUInt16) return DType::kUInt64;
  }
  return t;
}

DType resolve_acc(Op op, DType t, const std::string& wanted) {
  const DType def = acc_dtype(op, t);
  if (wanted.empty()) return def;
  const DType w = parse_dtype(wanted);
  if (w == def || w == t) return w;
  throw Error(Errc::kUsage, "accumulator " + printable(wanted) + " is not available for " +
                                op_name(op) + " of " + dtype_name(t) + " (use " + dtype_name(def) +
                                (def != t ? " or " + dtype_name(t) : std::string()) + ")");
}

Value Value::from_bytes(DType type, const unsigned char* p) {
  Value v;
  v.type = type;
  switch (type) {
    case DType::kInt32: {
      std::int32_t x;
      std::memcpy(&x, p, 4);
      v.i = x;
      break;
    }
    case DType::kUInt32: {
      std::uint32_t x;
      std::memcpy(&x, p, 4);
      v.u = x;
      break;
    }
    case DType::kInt64: std::memcpy(&v.i, p, 8); break;
    case DType::kUInt64: std::memcpy(&v.u, p, 8); break;
    case DType::kFloat: {
      float x;
      std::memcpy(&x, p, 4);
      v.f = static_cast<double>(x);
      break;
    }
    case DType::kDouble: std::memcpy(&v.f, p, 8); break;
    case DType::kFloat16: {
      std::uint16_t x;
      std::memcpy(&x, p, 2);
      v.f = half_to_double(x);
      break;
    }
    case DType::kBool:
    case DType::kUInt8: v.u = *p; break;
    case DType::kInt8: v.i = static_cast<std::int8_t>(*p); break;
    case DType::kInt16: {
      std::int16_t x;
      std::memcpy(&x, p, 2);
      v.i = x;
      break;
    }
    case DType::kUInt16: {
      std::uint16_t x;
      std::memcpy(&x, p, 2);
      v.u = x;
      break;
    }
  }
  return v;
}

std::string Value::str() const {
  char buf[64];
  if (is_float(type)) {
    if (std::isnan(f)) return "nan";
    if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
    std::snprintf(buf, sizeof buf, "%.*g",
                  type == DType::kFloat     ? 9
                  : type == DType::kFloat16 ? 5
                                            : 17,
                  f);
  } else if (type == DType::kBool) {
    return u ? "True" : "False";
  } else if (is_signed(type)) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(i));
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(u));
  }
  return buf;
}

}  // namespace clreduce

namespace clreduce {

namespace {

constexpr std::size_t kPage = 4096;

// Sets n bytes at p to v, in parallel for large n (first touch spreads the pages over the
// threads that will read them).
void fill_bytes(unsigned char* p, std::size_t n, unsigned char v) {
  constexpr std::size_t kPiece = std::size_t{1} << 24;
  const std::size_t pieces = (n + kPiece - 1) / kPiece;
  parallel_for(pieces, pieces > 4, [&](std::size_t k) {
    const std::size_t at = k * kPiece;
    std::memset(p + at, v, std::min(kPiece, n - at));
  });
}

}  // namespace

void Bytes::allocate(std::size_t n, bool zero) {
  if (n == size_ && !release_ && n > 0) {  // owned memory of the size asked: kept, not moved
    if (zero) fill_bytes(data_, n, 0);
    return;
  }
  release();
  if (n == 0) return;
  if (n > SIZE_MAX - kPage) throw std::bad_alloc();  // rounded up to whole pages, it would wrap
  void* p = std::aligned_alloc(kPage, (n + kPage - 1) / kPage * kPage);
  if (!p) throw std::bad_alloc();
  data_ = static_cast<unsigned char*>(p);
  size_ = n;
  if (zero) fill_bytes(data_, n, 0);
}

void Bytes::assign(std::size_t n, unsigned char value) {
  allocate(n, false);
  fill_bytes(data_, n, value);
}

void Bytes::adopt(unsigned char* p, std::size_t n, void (*on_release)(void*, std::size_t, void*),
                  void* arg) {
  release();
  data_ = p;
  size_ = n;
  release_ = on_release;
  release_arg_ = arg;
}

void Bytes::release() {
  if (release_)
    release_(data_, size_, release_arg_);
  else
    std::free(data_);
  data_ = nullptr;
  size_ = 0;
  release_ = nullptr;
  release_arg_ = nullptr;
}

void Bytes::swap(Bytes& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  std::swap(release_, o.release_);
  std::swap(release_arg_, o.release_arg_);
}

bool operator==(const Bytes& a, const Bytes& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

bool operator==(const Bytes& a, const std::vector<unsigned char>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

}  // namespace clreduce

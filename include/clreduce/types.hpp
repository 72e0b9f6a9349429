// types.hpp: element types and operators, with the NumPy rules that decide the accumulator.
// One enum each; every other file switches on them, so adding a type touches this file first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "clreduce/export.hpp"

namespace clreduce {

// The values are the kernels' codes: kernel builds pass them as -DCLR_TYPE, -DCLR_ACC and
// -DCLR_OP, and types.cpp static_asserts them against the table in cl/clreduce.h.
// kFloat16 to kUInt16 are input types of the reduction engine (host/reduce/expr.hpp) and the
// segments: they are read, generated and written, and reduced through the engine's rows; the
// variants (all_dtypes()) take the first six.
enum class DType {
  kInt32 = 0,
  kUInt32 = 1,
  kInt64 = 2,
  kUInt64 = 3,
  kFloat = 4,
  kDouble = 5,
  kFloat16 = 6,  // IEEE binary16 ('<f2'); the kernels read it with vload_half
  kBool = 7,     // one byte, 0 or 1 ('|b1')
  kInt8 = 8,
  kUInt8 = 9,
  kInt16 = 10,
  kUInt16 = 11
};
enum class Op { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kArgMin = 4, kArgMax = 5 };

// Names as the CLI and JSON spell them ("int32", "float", ...).
// The types every variant takes: int32, uint32, int64, uint64, float, double.
CLREDUCE_API const std::vector<DType>& all_dtypes();
// Those and the engine's input types: float16, bool, int8, uint8, int16, uint16.
CLREDUCE_API const std::vector<DType>& input_dtypes();
// Whether t is one of all_dtypes() (the variants take it).
CLREDUCE_API bool is_variant_dtype(DType t);
CLREDUCE_API const std::vector<Op>& all_ops();
CLREDUCE_API std::string dtype_name(DType t);
CLREDUCE_API std::string op_name(Op op);
// Parses a name; throws Error(kUsage) listing the valid names when unknown.
CLREDUCE_API DType parse_dtype(const std::string& s);
CLREDUCE_API Op parse_op(const std::string& s);

// Bytes per element.
CLREDUCE_API std::size_t dtype_size(DType t);
CLREDUCE_API bool is_float(DType t);
CLREDUCE_API bool is_signed(DType t);
// The OpenCL C spelling of the type ("int", "ulong", "double", ...).
CLREDUCE_API std::string dtype_cl_name(DType t);

// IEEE binary16 bits to a double (exact), and a double rounded to binary16 bits (to nearest,
// ties to even; overflow to inf, NaN kept).
CLREDUCE_API double half_to_double(std::uint16_t h);
CLREDUCE_API std::uint16_t double_to_half(double x);

CLREDUCE_API bool is_arg_op(Op op);
// NumPy's accumulator: sum and prod of ints narrower than 64 bits accumulate in 64 bits (bool,
// int8, int16, int32 -> int64; uint8, uint16, uint32 -> uint64); everything else keeps its type
// (float16 keeps float16 as NumPy's result type; the engine accumulates it in float).
CLREDUCE_API DType acc_dtype(Op op, DType t);
// The accumulator for op on t with a user override (--acc): `wanted` may be the NumPy default
// or, for sum and prod of 32-bit ints, the element type itself (int32 -> int32, wrapping).
// Throws Error(Errc::kUsage) for any other combination.
CLREDUCE_API DType resolve_acc(Op op, DType t, const std::string& wanted);
// True when n = 0 has an answer (the identity): sum and prod.
CLREDUCE_API bool has_identity(Op op);

// The bytes of a host array: owned memory (page-aligned, not zeroed unless asked: a 64 GiB array
// is not written twice) or a view of memory someone else keeps alive (a mapped file), behind the
// part of std::vector's interface the library uses. Copies are deep and owned.
class CLREDUCE_API Bytes {
 public:
  Bytes() = default;
  explicit Bytes(std::size_t n) { resize(n); }
  Bytes(const std::vector<unsigned char>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit
  Bytes(const Bytes& o) { assign(o.begin(), o.end()); }
  Bytes(Bytes&& o) noexcept { swap(o); }
  Bytes& operator=(const Bytes& o) {
    if (this != &o) {
      Bytes t(o);
      swap(t);
    }
    return *this;
  }
  Bytes& operator=(Bytes&& o) noexcept {
    Bytes t(std::move(o));
    swap(t);
    return *this;
  }
  Bytes& operator=(const std::vector<unsigned char>& v) {
    assign(v.begin(), v.end());
    return *this;
  }
  ~Bytes() { release(); }

  // n bytes of owned memory, zeroed; the contents are not kept. Owned memory of n bytes already
  // stays where it is (buffers over it stay valid); assign() too.
  void resize(std::size_t n) { allocate(n, true); }
  // n bytes of owned memory, uninitialised (the caller writes every byte).
  void allocate_uninit(std::size_t n) { allocate(n, false); }
  void assign(std::size_t n, unsigned char value);
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    allocate(static_cast<std::size_t>(last - first), false);
    unsigned char* p = data_;
    for (; first != last; ++first) *p++ = static_cast<unsigned char>(*first);
  }
  // A view of [p, p + n) that someone else owns, handed back when the view is
  // released (e.g. munmap of a mapped file): on_release(p, n, arg).
  void adopt(unsigned char* p, std::size_t n, void (*on_release)(void*, std::size_t, void*),
             void* arg);
  void clear() { release(); }
  void swap(Bytes& o) noexcept;

  unsigned char* data() { return data_; }
  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  unsigned char& operator[](std::size_t i) { return data_[i]; }
  const unsigned char& operator[](std::size_t i) const { return data_[i]; }
  unsigned char* begin() { return data_; }
  unsigned char* end() { return data_ + size_; }
  const unsigned char* begin() const { return data_; }
  const unsigned char* end() const { return data_ + size_; }
  // True when the memory is a view (adopt()), not owned.
  bool is_view() const { return release_ != nullptr; }
  operator std::vector<unsigned char>() const { return {begin(), end()}; }  // NOLINT: implicit

  friend CLREDUCE_API bool operator==(const Bytes& a, const Bytes& b);
  friend bool operator!=(const Bytes& a, const Bytes& b) { return !(a == b); }

 private:
  void allocate(std::size_t n, bool zero);
  void release();

  unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  void (*release_)(void*, std::size_t, void*) = nullptr;  // a view's release; null: owned
  void* release_arg_ = nullptr;
};
CLREDUCE_API bool operator==(const Bytes& a, const std::vector<unsigned char>& b);
inline bool operator==(const std::vector<unsigned char>& a, const Bytes& b) { return b == a; }

// A 1-D array on the host: raw little-endian bytes of n elements of type.
struct CLREDUCE_API HostArray {
  DType type = DType::kInt32;
  std::size_t n = 0;
  Bytes bytes;  // n * dtype_size(type)

  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <class T> T* as() { return reinterpret_cast<T*>(bytes.data()); }
};

// One reduction result: the value in the accumulator type, and the index for arg ops.
struct CLREDUCE_API Value {
  DType type = DType::kInt64;  // the accumulator type
  std::int64_t i = 0;          // used when type is a signed int
  std::uint64_t u = 0;         // used when type is an unsigned int
  double f = 0.0;              // used when type is float or double
  std::int64_t index = -1;     // argmin/argmax: first index of the extreme; -1 otherwise

  // Reads a value of `type` from device bytes (8 bytes for 64-bit types, 4 for 32-bit).
  static Value from_bytes(DType type, const unsigned char* p);
  // Prints as NumPy would, in the C locale, with enough digits to round-trip.
  std::string str() const;
};

// v's number as the C++ type A (the field A's kind is kept in: f, i or u).
template <class A> A value_as(const Value& v) {
  if constexpr (std::is_floating_point_v<A>)
    return static_cast<A>(v.f);
  else if constexpr (std::is_signed_v<A>)
    return static_cast<A>(v.i);
  else
    return static_cast<A>(v.u);
}

}  // namespace clreduce

namespace clreduce {

// Throws Error(Errc::kUsage): float16 has no C++ type here (dispatch_dtype()).
[[noreturn]] CLREDUCE_API void no_host_half(const char* where);

// Calls f with a value-initialised object of the C++ type behind t: f(std::int32_t{}), ...
// (bool: std::uint8_t, whose values are 0 and 1). float16 has no C++ type: code that takes it
// converts it first (half_to_double); here it throws Error(Errc::kUsage).
template <class F> decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kInt32: return f(std::int32_t{});
    case DType::kUInt32: return f(std::uint32_t{});
    case DType::kInt64: return f(std::int64_t{});
    case DType::kUInt64: return f(std::uint64_t{});
    case DType::kFloat: return f(float{});
    case DType::kInt8: return f(std::int8_t{});
    case DType::kUInt8:
    case DType::kBool: return f(std::uint8_t{});
    case DType::kInt16: return f(std::int16_t{});
    case DType::kUInt16: return f(std::uint16_t{});
    case DType::kFloat16: no_host_half("this step");
    case DType::kDouble: break;
  }
  return f(double{});
}

}  // namespace clreduce

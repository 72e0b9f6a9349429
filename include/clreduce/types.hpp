// types.hpp: element types and operators, with the NumPy rules that decide the accumulator.
// One enum each; every other file switches on them, so adding a type touches this file first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace clreduce {

// The values are the kernels' codes: kernel builds pass them as -DCLR_TYPE, -DCLR_ACC and
// -DCLR_OP, and types.cpp static_asserts them against the table in cl/clreduce.h.
enum class DType { kInt32 = 0, kUInt32 = 1, kInt64 = 2, kUInt64 = 3, kFloat = 4, kDouble = 5 };
enum class Op { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kArgMin = 4, kArgMax = 5 };

// Names as the CLI and JSON spell them ("int32", "float", ...).
const std::vector<DType>& all_dtypes();
const std::vector<Op>& all_ops();
std::string dtype_name(DType t);
std::string op_name(Op op);
// Parses a name; throws Error(kUsage) listing the valid names when unknown.
DType parse_dtype(const std::string& s);
Op parse_op(const std::string& s);

// Bytes per element.
std::size_t dtype_size(DType t);
bool is_float(DType t);
bool is_signed(DType t);
// The OpenCL C spelling of the type ("int", "ulong", "double", ...).
std::string dtype_cl_name(DType t);

bool is_arg_op(Op op);
// NumPy's accumulator: sum and prod of 32-bit ints accumulate in 64 bits (int32 -> int64,
// uint32 -> uint64); everything else keeps its type.
DType acc_dtype(Op op, DType t);
// The accumulator for op on t with a user override (--acc): `wanted` may be the NumPy default
// or, for sum and prod of 32-bit ints, the element type itself (int32 -> int32, wrapping).
// Throws Error(Errc::kUsage) for any other combination.
DType resolve_acc(Op op, DType t, const std::string& wanted);
// True when n = 0 has an answer (the identity): sum and prod.
bool has_identity(Op op);

// A 1-D array on the host: raw little-endian bytes of n elements of type.
struct HostArray {
  DType type = DType::kInt32;
  std::size_t n = 0;
  std::vector<unsigned char> bytes;  // n * dtype_size(type)

  template <class T> const T* as() const { return reinterpret_cast<const T*>(bytes.data()); }
  template <class T> T* as() { return reinterpret_cast<T*>(bytes.data()); }
};

// One reduction result: the value in the accumulator type, and the index for arg ops.
struct Value {
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

}  // namespace clreduce

namespace clreduce {

// Calls f with a value-initialised object of the C++ type behind t: f(std::int32_t{}), ...
template <class F> decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::kInt32: return f(std::int32_t{});
    case DType::kUInt32: return f(std::uint32_t{});
    case DType::kInt64: return f(std::int64_t{});
    case DType::kUInt64: return f(std::uint64_t{});
    case DType::kFloat: return f(float{});
    case DType::kDouble: break;
  }
  return f(double{});
}

}  // namespace clreduce

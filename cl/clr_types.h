// clr_types.h: vector types of the element and accumulator types, for kernels that load, fold or
// store several elements at once. Names are built from clreduce.h's T_NAME, A_NAME and U_NAME
// (the one table from type codes to OpenCL C types), so no kernel spells that table again:
//   CLR_VEC(T_NAME, 4)          int4 for int32 elements, double4 for double
//   CLR_AS_VEC(U_NAME, 8)       as_uint8 / as_ulong8: an accumulator vector's unsigned twin
//   CLR_CONVERT_VEC(A_NAME, 8)  convert_long8 for int32 sums, ...
// Any OpenCL C scalar type name works too (CLR_VEC(uchar, VEC)). The vector width must be a
// macro or literal of 2, 3, 4, 8 or 16. Included by a kernel after clreduce.h.
#ifndef CLR_TYPES_H
#define CLR_TYPES_H

#define CLR_CAT_(a, b) a##b
#define CLR_CAT(a, b) CLR_CAT_(a, b)  // pastes after expanding a and b

#define CLR_VEC(name, n) CLR_CAT(name, n)
#define CLR_AS_VEC(name, n) CLR_CAT(as_, CLR_VEC(name, n))
#define CLR_CONVERT_VEC(name, n) CLR_CAT(convert_, CLR_VEC(name, n))

#endif  // CLR_TYPES_H

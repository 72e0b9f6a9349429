// clr_expr_checks.h: the law check's kernels of a user reduction (--map, --reduce, --identity)
// and the predicate's (--where), included by reduce_expr.cl and reduce_segments.cl (after
// clr_expr.h), so that a check runs from the program of the reduction it checks.
#ifndef CLR_EXPR_CHECKS_H
#define CLR_EXPR_CHECKS_H

// The map of the elements at idx[0..m): the sample values of the law check.
__kernel void reduce_expr_sample(EXPR_INPUTS, __global const ulong* idx, uint m,
                                 __global acc_t* out) {
  EXPR_UNUSED;
  const uint k = (uint)get_global_id(0);
  if (k < m) out[k] = EXPR_MAP(idx[k]);
}

// For each of m triples (a, b, c) of pool values (indices tri[3k..3k+2]): out[8k..8k+7] =
// ab = op(a, b), bc = op(b, c), op(ab, c), op(a, bc), op(b, a), op(identity, a), op(a, identity),
// identity. The host compares them (associativity, commutativity, the identity's neutrality).
__kernel void reduce_expr_laws(__global const acc_t* pool, __global const uint* tri, uint m,
                               __global acc_t* out) {
  const uint k = (uint)get_global_id(0);
  if (k >= m) return;
  const acc_t a = pool[tri[3 * k]], b = pool[tri[3 * k + 1]], c = pool[tri[3 * k + 2]];
  const acc_t id = clr_identity();
  const acc_t ab = clr_op(a, b), bc = clr_op(b, c);
  __global acc_t* o = out + 8 * (ulong)k;
  o[0] = ab;
  o[1] = bc;
  o[2] = clr_op(ab, c);
  o[3] = clr_op(a, bc);
  o[4] = clr_op(b, a);
  o[5] = clr_op(id, a);
  o[6] = clr_op(a, id);
  o[7] = id;
}

#if EXPR_WHERE
// The predicate (--where) at elements first .. first + m - 1: out[k] is 1 where it holds, else 0
// (the host's references take the same elements as the reduction).
__kernel void reduce_expr_where(EXPR_INPUTS, ulong first, uint m, __global uchar* out) {
  EXPR_UNUSED;
  const uint k = (uint)get_global_id(0);
  if (k < m) out[k] = (uchar)(clr_expr_where(EXPR_ARGS(first + k)) != 0);
}
#endif

#endif  // CLR_EXPR_CHECKS_H

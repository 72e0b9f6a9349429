// clr_ticket.h: one launch, any number of work-groups (reduce_topdown.cl, reduce_fast.cl). Each
// group folds its work-items' values in local memory and publishes its partial; the last group
// to finish, found with an atomic ticket, folds the partials in index order and resets the
// ticket. Partials cross groups only through 32-bit atomics. Included by a kernel after
// clreduce.h.
#ifndef CLR_TICKET_H
#define CLR_TICKET_H

// A kernel that includes clr_tail.h before this file and is built with -DCLR_TAIL=2 (NVIDIA's
// warp shuffle, found by the start-up probes) finishes each group's fold in registers (the host
// splices one level of headers, so this file cannot include that one itself).

// Folds s[0..m) into s[0] with a fixed pairwise order: step k combines s[j] with s[j + h],
// h = ceil(w / 2). Any m <= local size. Call with every work-item of the group, after a barrier
// that makes s[0..m) visible; ends with a barrier.
inline void clr_local_fold(__local acc_t* s, uint m) {
  const uint lid = (uint)get_local_id(0);
  for (uint w = m; w > 1;) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
}

// The group's total of s[0..m) (any m <= local size, visible after a barrier), returned to
// work-item 0 (the others get a value of no meaning). Call with every work-item of the group.
// With CLR_TAIL 2, barrier steps fold down to 64 elements and warp 0 folds those by butterfly
// shuffles in registers (the same depth, ceil(log2 m), as the barrier steps all the way, which
// the other tails take); no barrier at the end, so s[] is free once the group has met the next
// barrier.
inline acc_t clr_group_total(__local acc_t* s, uint m) {
#if CLR_TAIL == 2
  const uint lid = (uint)get_local_id(0);
  uint w = m;
  while (w > 64u) {
    const uint h = (w + 1) / 2;
    if (lid + h < w) s[lid] = clr_op(s[lid], s[lid + h]);
    barrier(CLK_LOCAL_MEM_FENCE);
    w = h;
  }
  acc_t v = clr_identity();
  if (lid < 32) {  // warp 0, whole: the group size is a multiple of 32
    if (lid < w) v = s[lid];
    if (lid + 32 < w) v = clr_op(v, s[lid + 32]);
    CLR_SHFL_BFLY(v, 16);
    CLR_SHFL_BFLY(v, 8);
    CLR_SHFL_BFLY(v, 4);
    CLR_SHFL_BFLY(v, 2);
    CLR_SHFL_BFLY(v, 1);
  }
  return v;
#else
  clr_local_fold(s, m);
  return s[0];
#endif
}

// Cross-work-group hand-off: an accumulator stored and loaded word by word with 32-bit atomics,
// the only inter-group communication OpenCL 1.2 defines (plain stores and loads between groups
// are a data race, whatever fences surround them).
inline void clr_publish(__global acc_t* p, acc_t v) {
  clr_words u;
  u.a = v;
  __global volatile uint* q = (__global volatile uint*)p;
  for (uint k = 0; k < sizeof(acc_t) / 4; ++k) atomic_xchg(q + k, u.w[k]);
}

inline acc_t clr_collect(__global acc_t* p) {
  clr_words u;
  __global volatile uint* q = (__global volatile uint*)p;
  for (uint k = 0; k < sizeof(acc_t) / 4; ++k) u.w[k] = atomic_or(q + k, 0u);
  return u.a;
}

// The launch's result, written by one work-item.
inline void clr_ticket_write(__global acc_t* out, acc_t a) { out[0] = a; }

// The epilogue of a one-launch reduction. Call with every work-item of the group, each passing
// its value a, as the kernel's last statement; s holds wg accumulators (wg: the group size) and
// is_last points to a __local int of the kernel. Work-item 0 publishes the group's total as
// partials[group id] and takes a ticket (*ticket is zero when the launch starts); the group that
// takes the last one folds partials[0..groups) in index order, writes the total to out[0] and
// resets *ticket to zero for the next launch. A launch of one group writes its total to out[0]
// at once, with no partial, ticket or second fold. The other groups return early: nothing may follow
// the call (PoCL 3.1 hangs on a kernel that goes on after a group skipped barriers). Always
// inlined, like the kernel code it replaces: clang's cost model would keep it a call, and under
// C99's inline rules nothing provides that call's external definition.
__attribute__((always_inline)) inline void clr_ticket_reduce(acc_t a, __local acc_t* s, uint wg,
                                                             __local int* is_last,
                                                             __global acc_t* partials,
                                                             __global volatile uint* ticket,
                                                             __global acc_t* out) {
  const uint lid = (uint)get_local_id(0);
  const uint groups = (uint)get_num_groups(0);
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  a = clr_group_total(s, wg);
  // One group: its total is the result. An early return, as below: PoCL 3.1 hung (group size 3)
  // when the groups' paths met again after a block holding barriers and a return.
  if (groups == 1) {  // uniform across the launch
    if (lid == 0) clr_ticket_write(out, a);
    return;
  }

  if (lid == 0) {
    clr_publish(partials + get_group_id(0), a);
    mem_fence(CLK_GLOBAL_MEM_FENCE);  // the partial is visible before the ticket is taken
    *is_last = atomic_inc(ticket) == groups - 1;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (!*is_last) return;  // uniform across the group

  mem_fence(CLK_GLOBAL_MEM_FENCE);
  a = clr_identity();
  for (uint g = lid; g < groups; g += wg) a = clr_op(a, clr_collect(partials + g));
  s[lid] = a;
  barrier(CLK_LOCAL_MEM_FENCE);
  a = clr_group_total(s, wg);
  if (lid == 0) {
    clr_ticket_write(out, a);
    atomic_xchg(ticket, 0u);  // ready for the next launch
  }
}

#endif  // CLR_TICKET_H

// copy.cl: the copy ceiling of --measure-copy where the runtime's own copy is no ceiling (off
// NVIDIA GPUs: PoCL's clEnqueueCopyBuffer runs on one thread). Work-item g copies 16-byte
// words i = g * first + k * step, k = 0, 1, ..., while i < words: on CPUs (first = a run's
// length, step 1) a contiguous run each, as the CPU shapes read; elsewhere (first 1, step the
// work-items) strided, so neighbours read neighbours. The last work-item copies the bytes
// past the last whole word. src and dst start buffers of their own (16-byte aligned).
__kernel void copy_words(__global const uchar* restrict src, __global uchar* restrict dst,
                         ulong bytes, ulong first, ulong step) {
  const ulong words = bytes / 16;
  const ulong g = get_global_id(0);
  __global const uint4* s = (__global const uint4*)src;
  __global uint4* d = (__global uint4*)dst;
  const ulong end = step == 1 ? min(words, (g + 1) * first) : words;
  for (ulong i = g * first; i < end; i += step) d[i] = s[i];
  if (g == get_global_size(0) - 1)
    for (ulong i = words * 16; i < bytes; ++i) dst[i] = src[i];
}

#!/usr/bin/env python3
"""py_call_cost.py: the host time of one clreduce call on a small pyopencl array, and its parts.

Times --calls calls of each row below on a --size-element array (default 2^10 float32) already
on the device, each call on its own (time.perf_counter_ns around it), queue.finish() untimed
every --batch calls (default 50: calls back to back, as a program's kernels follow each other;
1: each call finds the queue idle, and PoCL's enqueue then wakes its worker threads); prints
the median and the fastest tenth per call in microseconds:
  clreduce.sum / max / argmax   the package's call: checks, dtype rules, the queue's Device, the
                                0-d result from the array's allocator, the kept plan's enqueue;
                                returns without waiting
  reduce_into sum / argmax      the extension module's enqueue alone (the kept plan's lookup,
                                the GIL released, kernel arguments and the launches), into a
                                buffer allocated once: the floor under the package's call
  result array                  a 0-d result array as the package's general path makes it
                                (the allocator and pyopencl.array.Array's fast constructor),
                                nothing enqueued
  pyopencl launch               a trivial pyopencl kernel (one work-item writing one float) by
                                cl.enqueue_nd_range_kernel, arguments set once: the runtime's
                                own launch cost on this device
  pyopencl kernel call          the same kernel called as kernel(queue, ...) (sets its arguments
                                each call)
The arrays come from a pyopencl.tools.MemoryPool (--allocator pool, the default) or have no
allocator (--allocator none: each result is a new cl.Buffer).

--profile OP runs cProfile over the calls of clreduce.OP instead and prints its top entries
(--top), sorted by own time.

Run where clreduce and PyOpenCL are installed (pip install . at the repository root):
  python3 tools/py_call_cost.py --device pocl --calls 20000
"""

import argparse
import cProfile
import pstats
import statistics
import sys
import time

import numpy as np

try:
    import clreduce
    import pyopencl as cl
    import pyopencl.array as cla
    import pyopencl.tools as clt
except ImportError as e:
    sys.exit(f"py_call_cost.py: needs clreduce and PyOpenCL ({e})")


def size_arg(text):
    if "^" in text:
        b, e = text.split("^")
        return int(b) ** int(e)
    return int(text)


def timed(f, calls, queue, batch=50):
    """Per-call times of f() in microseconds: (median, fastest tenth)."""
    for _ in range(batch):
        f()
    queue.finish()
    t = []
    clock = time.perf_counter_ns
    while len(t) < calls:
        for _ in range(batch):
            t0 = clock()
            f()
            t.append(clock() - t0)
        queue.finish()
    t.sort()
    return statistics.median(t) / 1e3, t[len(t) // 10] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="pocl",
                    help="the OpenCL device, as clreduce's device= takes it (default pocl)")
    ap.add_argument("--size", default="2^10", help="elements (N or B^E; default 2^10)")
    ap.add_argument("--dtype", default="float32", help="default float32")
    ap.add_argument("--calls", type=int, default=20000, help="timed calls per row (default 20000)")
    ap.add_argument("--allocator", choices=("pool", "none"), default="pool")
    ap.add_argument("--batch", type=int, default=50,
                    help="calls between two untimed queue.finish() (default 50)")
    ap.add_argument("--profile", default=None, metavar="OP",
                    help="profile clreduce.OP's calls with cProfile instead of timing the rows")
    ap.add_argument("--top", type=int, default=20, help="profile entries printed (default 20)")
    args = ap.parse_args()
    if args.calls < 1 or args.batch < 1 or args.top < 1:
        ap.error("--calls, --batch and --top must be at least 1")

    info = clreduce.Device(args.device).info
    found = [d for p in cl.get_platforms() if p.name == info.platform
             for d in p.get_devices() if d.name == info.name]
    if not found:
        sys.exit(f"py_call_cost.py: PyOpenCL finds no device {info.name!r} of platform "
                 f"{info.platform!r}")
    dev = found[0]
    ctx = cl.Context([dev])
    queue = cl.CommandQueue(ctx)
    alloc = clt.MemoryPool(clt.ImmediateAllocator(queue)) if args.allocator == "pool" else None
    n = size_arg(args.size)
    dtype = np.dtype(args.dtype)
    host = np.random.default_rng(0).standard_normal(n).astype(dtype)
    a = cla.to_device(queue, host, allocator=alloc)

    if args.profile:
        f = getattr(clreduce, args.profile)
        for _ in range(100):
            f(a)
        queue.finish()
        prof = cProfile.Profile()
        prof.enable()
        for i in range(args.calls):
            f(a)
            if i % args.batch == args.batch - 1:
                queue.finish()
        prof.disable()
        queue.finish()
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)
        return

    print(f"clreduce {clreduce.__version__} from {clreduce.__file__}; device {info.name!r}; "
          f"{n} {dtype.name}; {args.calls} calls a row, finish() every {args.batch}; allocator "
          f"{args.allocator}")
    rows = []
    for op in ("sum", "max", "argmax"):
        f = getattr(clreduce, op)
        r = f(a).get()
        want = getattr(np, op)(host)
        bound = 1e-3 * float(np.abs(host.astype(np.float64)).sum())
        ok = r == want if op == "argmax" else abs(float(r) - float(want)) <= bound
        if not ok:
            sys.exit(f"py_call_cost.py: clreduce.{op} gave {r}, NumPy {want}")
        rows.append((f"clreduce.{op}", timed(lambda: f(a), args.calls, queue, args.batch)))

    d = clreduce._cl_device(a, None, "sum")._dev
    tname = {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 16)
    mem = a.base_data.int_ptr
    for op in ("sum", "argmax"):
        rows.append((f"reduce_into {op}",
                     timed(lambda: d.reduce_into(op, tname, mem, 0, n, "", out.int_ptr, 0),
                           args.calls, queue, args.batch)))

    rt = np.dtype(np.float32)
    rows.append(("result array",
                 timed(lambda: clreduce._cl_new(a, (), rt), args.calls, queue, args.batch)))

    prg = cl.Program(ctx, "__kernel void one(__global float* p) { p[0] = 1.0f; }").build()
    knl = prg.one
    knl.set_args(out)
    gsize, lsize = (1,), None
    rows.append(("pyopencl launch",
                 timed(lambda: cl.enqueue_nd_range_kernel(queue, knl, gsize, lsize),
                       args.calls, queue, args.batch)))
    rows.append(("pyopencl kernel call",
                 timed(lambda: knl(queue, gsize, lsize, out), args.calls, queue, args.batch)))

    print(f"{'row':<22} {'median us':>10} {'p10 us':>8}")
    for name, (med, p10) in rows:
        print(f"{name:<22} {med:>10.2f} {p10:>8.2f}")


if __name__ == "__main__":
    main()

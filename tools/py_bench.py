#!/usr/bin/env python3
"""py_bench.py: the clreduce Python package against its peers, in one process, on the same data.

What is timed, for each op (sum, max, argmax, cumsum), size and dtype:
  clreduce     clreduce.<op> of a pyopencl.array.Array already on clreduce's device (read where
               it lies, on PyOpenCL's queue; the result stays on the device as a pyopencl array,
               0-d for a reduction); sync: queue.finish()
  staged       clreduce.<op> of the NumPy array (on a GPU the upload is part of every call; on a
               CPU device the array is read in place); the result is on the host when it returns
  pyopencl     PyOpenCL on the same device and the same arrays: pyopencl.array.sum/max, argmax
               by a ReductionKernel over a (value, index) struct (first index on ties), cumsum by
               a GenericScanKernel (int32 sums into int64, as NumPy's); sync: queue.finish()
  cupy         cupy.sum/max/argmax/cumsum of a cupy array already on the CUDA GPU; sync:
               cupy.cuda.Device().synchronize()
  torch        torch.sum/max/argmax/cumsum of a CUDA tensor; sync: torch.cuda.synchronize()
  numpy        numpy.<op> of the host array (one core)
The pyopencl arrays that clreduce and PyOpenCL read are allocated from one
pyopencl.tools.MemoryPool, which both then allocate their results from (the arrays' allocator),
as CuPy and PyTorch allocate from their own pools by default.

Two times per call, after --warmup untimed calls (which build the kernels): "call", the host
time until the call returns (device work it only enqueued may still run), and "sync", the call
and then the peer's sync, so the device work done. Each cell is the median of --repeat calls,
in ms: PEER the sync time, PEER_call the call time, and PEER_p10 and PEER_call_p10 their fastest
tenth. Every peer's result is checked against NumPy's first (integers exactly; floats within
1e-3 of the sum of |x| up to that element): a mismatch prints "wrong" and no time. A peer that
is not importable, or finds no device, is skipped with a note on stderr ("-").

Then the call overhead: the same ops on a 2^10-element array already on the device, timed over
--overhead-calls calls, in microseconds (NumPy's on the host array). And the CPU row:
clreduce.sum(a, device='cpu') (a CPU OpenCL device such as PoCL; skipped without one) against
numpy.sum at --cpu-size elements of float32.

The table's ratio columns are x_PEER = PEER's sync time / clreduce's (above 1: clreduce is
faster); the CPU row's x_numpy is numpy.sum's time / clreduce's. --out FILE writes every row as
CSV (unit: ms, or us for the overhead rows).

Run where clreduce is installed (pip install . at the repository root; docs/PYTHON.md), with
PyOpenCL (pip install pyopencl mako: its reduction and scan kernels need Mako), CuPy and PyTorch
where they are. On one H100, about 3 minutes:
  python3 tools/py_bench.py --sizes 2^24,2^26,2^28 --dtypes float32,int32 --out py_bench.csv
"""

import argparse
import csv
import statistics
import sys
import time

import numpy as np

try:
    import clreduce
except ImportError:
    sys.exit("py_bench.py: the clreduce package is not installed (pip install . at the repository "
             "root, docs/PYTHON.md)")

OPS = ("sum", "max", "argmax", "cumsum")
# A peer's columns: its name plus each suffix, and what they hold: (which time, 0 p10 / 1 median).
SUFFIXES = {"": ("sync", 1), "_p10": ("sync", 0), "_call": ("call", 1), "_call_p10": ("call", 0)}


def parse_size(s):
    s = s.strip()
    if "^" in s:
        b, e = s.split("^")
        return int(b) ** int(e)
    return int(s)


def note(msg):
    print(f"# {msg}", file=sys.stderr)


def timed(fn, sync, warmup, repeat):
    """Times repeat calls of fn after warmup untimed ones (each followed by sync): {"call": the
    seconds until fn returned, "sync": until sync() returned after it}, each as (p10, median);
    and the first call's result."""
    out = fn()
    sync()
    for _ in range(warmup - 1):
        fn()
        sync()
    calls, syncs = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = fn()
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        del r
        calls.append(t1 - t0)
        syncs.append(t2 - t0)

    def stats(ts):
        return sorted(ts)[len(ts) // 10], statistics.median(ts)
    return {"call": stats(calls), "sync": stats(syncs)}, out


def no_sync():
    pass


def check(op, got, a, ref):
    """got (a host value or array) against NumPy's answer; ref: (want, |x| prefix sums)."""
    want, cabs = ref
    got = np.asarray(got)
    if got.shape != np.shape(want):
        return False
    if op in ("max", "argmax") or np.asarray(want).dtype.kind in "iub":
        return bool(np.array_equal(got.astype(np.int64), np.asarray(want).astype(np.int64)))
    tol = 1e-3 * cabs + 1e-3
    return bool(np.all(np.abs(got.astype(np.float64) - want) <= tol))


def reference(op, a):
    """NumPy's answer for op on a, in float64 for float sums, with the bound's scale."""
    if op == "cumsum":
        if a.dtype.kind == "f":
            return np.cumsum(a, dtype=np.float64), np.cumsum(np.abs(a), dtype=np.float64)
        return np.cumsum(a), None
    if op == "sum" and a.dtype.kind == "f":
        return np.sum(a, dtype=np.float64), float(np.sum(np.abs(a), dtype=np.float64))
    return getattr(np, op)(a), None


class ClreducePeer:
    """clreduce on a pyopencl array of its device (needs PyOpenCL), and staged from NumPy."""

    name = "clreduce"

    def __init__(self, dev, cl_peer):
        self.dev = dev
        self.cl = cl_peer

    def prepare(self, a):
        return self.cl.prepare(a) if self.cl else None

    def call(self, op, d):
        return getattr(clreduce, op)(d)

    def sync(self):
        self.cl.queue.finish()

    def host(self, op, r):
        return r.get()


class StagedPeer:
    name = "staged"

    def __init__(self, dev):
        self.dev = dev

    def prepare(self, a):
        return a

    def call(self, op, a):
        return getattr(clreduce, op)(a, device=self.dev)

    sync = staticmethod(no_sync)

    def host(self, op, r):
        return r


class PyOpenCLPeer:
    name = "pyopencl"

    def __init__(self, info):
        import pyopencl as cl
        import pyopencl.array  # noqa: F401
        try:
            import mako  # noqa: F401
        except ImportError:
            note("pyopencl: its reductions and scans need Mako (pip install mako): its column "
                 "is left empty; clreduce's on pyopencl arrays is measured")
        devs = [d for p in cl.get_platforms() for d in p.get_devices()
                if p.name == info.platform and d.name == info.name]
        if not devs:
            raise RuntimeError(f"no device {info.name!r} of platform {info.platform!r}")
        import pyopencl.tools
        self.cl = cl
        self.ctx = cl.Context([devs[0]])
        self.queue = cl.CommandQueue(self.ctx)
        self.pool = cl.tools.MemoryPool(cl.tools.ImmediateAllocator(self.queue))
        self.kernels = {}

    def prepare(self, a):
        return self.cl.array.to_device(self.queue, a, allocator=self.pool)

    def kernel(self, op, dtype):
        key = (op, dtype)
        if key in self.kernels:
            return self.kernels[key]
        from pyopencl.reduction import ReductionKernel
        from pyopencl.scan import GenericScanKernel
        from pyopencl.tools import dtype_to_ctype, get_or_register_dtype, match_dtype_to_c_struct
        ct = dtype_to_ctype(dtype)
        if op == "argmax":
            name = f"am_{ct}"
            st, decl = match_dtype_to_c_struct(
                self.ctx.devices[0], name, np.dtype([("v", dtype), ("i", np.int64)]))
            st = get_or_register_dtype(name, st)
            low = "-INFINITY" if dtype.kind == "f" else "INT_MIN"
            pre = decl + f"""
            {name} {name}_make({ct} v, long i) {{ {name} r; r.v = v; r.i = i; return r; }}
            {name} {name}_op({name} a, {name} b) {{
              return (a.v > b.v || (a.v == b.v && a.i < b.i)) ? a : b; }}
            """
            k = ReductionKernel(self.ctx, st, neutral=f"{name}_make({low}, LONG_MAX)",
                                reduce_expr=f"{name}_op(a, b)", map_expr=f"{name}_make(x[i], i)",
                                arguments=f"__global const {ct} *x", preamble=pre)
        else:  # cumsum
            out = "long" if dtype.kind == "i" else ct
            k = GenericScanKernel(self.ctx, np.dtype(np.int64) if dtype.kind == "i" else dtype,
                                  arguments=f"__global const {ct} *x, __global {out} *y",
                                  input_expr=f"({out})x[i]", scan_expr="a+b", neutral="0",
                                  output_statement="y[i] = item;")
        self.kernels[key] = k
        return k

    def call(self, op, d):
        cla = self.cl.array
        if op == "sum":
            r = cla.sum(d, dtype=np.int64 if d.dtype.kind == "i" else None, queue=self.queue)
        elif op == "max":
            r = cla.max(d, queue=self.queue)
        elif op == "argmax":
            r = self.kernel(op, d.dtype)(d, queue=self.queue)
        else:
            r = cla.empty(self.queue, d.shape, np.int64 if d.dtype.kind == "i" else d.dtype,
                          allocator=d.allocator)
            self.kernel(op, d.dtype)(d, r, queue=self.queue)
        return r

    def sync(self):
        self.queue.finish()

    def host(self, op, r):
        h = r.get()
        return h["i"] if op == "argmax" else h


class CuPyPeer:
    name = "cupy"

    def __init__(self, _info):
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        self.cp = cupy

    def prepare(self, a):
        return self.cp.asarray(a)

    def call(self, op, d):
        return getattr(self.cp, op)(d)

    def sync(self):
        self.cp.cuda.Device().synchronize()

    def host(self, op, r):
        return self.cp.asnumpy(r)


class TorchPeer:
    name = "torch"

    def __init__(self, _info):
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device")
        self.torch = torch

    def prepare(self, a):
        return self.torch.from_numpy(a).cuda()

    def call(self, op, d):
        t = self.torch
        return t.cumsum(d, 0) if op == "cumsum" else getattr(t, op)(d)

    def sync(self):
        self.torch.cuda.synchronize()

    def host(self, op, r):
        return r.cpu().numpy()


class NumPyPeer:
    name = "numpy"

    def prepare(self, a):
        return a

    def call(self, op, a):
        return getattr(np, op)(a)

    sync = staticmethod(no_sync)

    def host(self, op, r):
        return r


def data(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype.kind == "f":
        return rng.standard_normal(n, dtype=np.float32).astype(dtype, copy=False)
    return rng.integers(-1000, 1000, n, dtype=np.int32).astype(dtype, copy=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2^24,2^26,2^28",
                    help="element counts (N or B^E), comma-separated (default 2^24,2^26,2^28)")
    ap.add_argument("--dtypes", default="float32,int32", help="default float32,int32")
    ap.add_argument("--ops", default=",".join(OPS), help="of sum,max,argmax,cumsum (default all)")
    ap.add_argument("--device", default=None,
                    help="clreduce's device, as device= takes it (default: the first GPU, else "
                         "device 0)")
    ap.add_argument("--peers", default="clreduce,staged,pyopencl,cupy,torch,numpy",
                    help="which columns to run (default all; those not importable are skipped)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed calls first (default 2)")
    ap.add_argument("--repeat", type=int, default=10, help="timed calls (default 10)")
    ap.add_argument("--overhead-calls", type=int, default=2000,
                    help="calls timed on the 2^10-element array, after 50 untimed ones (default "
                         "2000; 0: no such rows)")
    ap.add_argument("--cpu-size", default="2^26",
                    help="elements of the CPU row, clreduce.sum(device='cpu') against numpy.sum "
                         "(default 2^26; 0: no CPU row)")
    ap.add_argument("--out", default=None, help="also write every row to this CSV file")
    args = ap.parse_args()
    if args.warmup < 1 or args.repeat < 1 or args.overhead_calls < 0:
        ap.error("--warmup and --repeat must be at least 1, --overhead-calls at least 0")
    try:
        sizes = [parse_size(s) for s in args.sizes.split(",")]
        cpu_n = parse_size(args.cpu_size)
    except ValueError as e:
        ap.error(f"a size is not a count: {e}")
    ops = [o.strip() for o in args.ops.split(",")]
    for op in ops:
        if op not in OPS:
            ap.error(f"unknown op {op!r} (sum, max, argmax, cumsum)")
    dtypes = [np.dtype(d.strip()) for d in args.dtypes.split(",")]
    wanted = [p.strip() for p in args.peers.split(",")]

    if args.device is not None:
        dev = clreduce.Device(args.device)
    else:
        gpus = [d for d in clreduce.devices() if d.type == "GPU"]
        dev = clreduce.Device(gpus[0].index if gpus else 0)
        if not gpus:
            note(f"no GPU: clreduce runs on device 0 ({dev.name})")

    peers = []
    cl_peer = None
    makers = [("pyopencl", PyOpenCLPeer), ("cupy", CuPyPeer), ("torch", TorchPeer)]
    for name, make in makers:
        if name not in wanted and not (name == "pyopencl" and "clreduce" in wanted):
            continue
        try:
            p = make(dev.info)
        except Exception as e:  # not installed, no device, no Mako
            note(f"{name}: not measured ({type(e).__name__}: {str(e).splitlines()[0]})")
            continue
        if name == "pyopencl":
            cl_peer = p
        if name in wanted:
            peers.append(p)
    cols = []
    if "clreduce" in wanted:
        if cl_peer is not None:
            cols.append(ClreducePeer(dev, cl_peer))
        else:
            note("clreduce on device arrays: not measured (it needs PyOpenCL)")
    if "staged" in wanted:
        cols.append(StagedPeer(dev))
    cols += peers
    if "numpy" in wanted:
        cols.append(NumPyPeer())
    names = [c.name for c in cols]
    base = "clreduce" if "clreduce" in names else "staged"

    rows = []

    def run_rows(n, dtype, ops_, repeat, warmup, unit):
        a = data(n, dtype)
        held = {}
        for c in cols:
            try:
                held[c.name] = c.prepare(a)
            except Exception as e:
                note(f"{c.name}: cannot hold {n} elements of {dtype} ({type(e).__name__}: {e})")
        for op in ops_:
            ref = reference(op, a)
            cells = {}
            for c in cols:
                d = held.get(c.name)
                for suffix in SUFFIXES:
                    cells[c.name + suffix] = "-"
                if c.name not in held:
                    continue
                try:
                    t, r = timed(lambda: c.call(op, d), c.sync, warmup, repeat)
                    ok = check(op, c.host(op, r), a, ref)
                    scale = 1e3 if unit == "ms" else 1e6
                    for suffix, (kind, k) in SUFFIXES.items():
                        cells[c.name + suffix] = f"{t[kind][k] * scale:.4f}" if ok else "wrong"
                except Exception as e:
                    note(f"{c.name} {op} {dtype} n={n}: {type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}")
            ratios = {}
            b = cells.get(base, "-")
            for c in cols:
                if c.name == base:
                    continue
                v = cells[c.name]
                ok = b not in ("-", "wrong") and v not in ("-", "wrong")
                ratios["x_" + c.name] = f"{float(v) / float(b):.3g}" if ok else "-"
            rows.append(dict(op=op, n=str(n), dtype=dtype.name, unit=unit, **cells, **ratios))
            del ref

    for dtype in dtypes:
        for n in sizes:
            run_rows(n, dtype, ops, args.repeat, args.warmup, "ms")
    if args.overhead_calls:
        for dtype in dtypes:
            run_rows(1024, dtype, ops, args.overhead_calls, 50, "us")

    cpu_row = None
    if cpu_n:
        cpus = [d for d in clreduce.devices() if d.type == "CPU"]
        if not cpus:
            note("cpu row: no CPU OpenCL device (PoCL) for clreduce.sum(device='cpu')")
        else:
            a = data(cpu_n, np.dtype(np.float32))
            cpu = clreduce.Device(cpus[0].index)
            t, got = timed(lambda: clreduce.sum(a, device=cpu), no_sync, args.warmup, args.repeat)
            t_cl = t["sync"][1]
            t, _ = timed(lambda: np.sum(a), no_sync, args.warmup, args.repeat)
            t_np = t["sync"][1]
            ok = check("sum", got, a, reference("sum", a))
            cpu_row = dict(op="sum (cpu)", n=str(cpu_n), dtype="float32", unit="ms",
                           clreduce=f"{t_cl * 1e3:.4f}" if ok else "wrong",
                           numpy=f"{t_np * 1e3:.4f}",
                           x_numpy=f"{t_np / t_cl:.3g}" if ok else "-")
            rows.append(cpu_row)
            note(f"cpu row: {cpus[0].name}")

    fields = (["op", "n", "dtype", "unit"] + [c + s for c in names for s in SUFFIXES] +
              ["x_" + c for c in names if c != base])
    print(f"# clreduce {clreduce.__version__} on {dev!r}; numpy {np.__version__}; of "
          f"{args.repeat} calls ({args.overhead_calls} for the 2^10 overhead rows, in us): "
          f"PEER the median with the device synced, PEER_call the median until the call "
          f"returned, _p10 their fastest tenth; x_PEER = PEER's time / {base}'s")
    table = [[r.get(f, "") for f in fields] for r in rows]
    widths = [max(len(f), *(len(t[i]) for t in table)) if table else len(f)
              for i, f in enumerate(fields)]
    print("  ".join(f.rjust(w) for f, w in zip(fields, widths)))
    for t in table:
        print("  ".join(x.rjust(w) for x, w in zip(t, widths)))
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            for r in rows:
                w.writerow({k: r.get(k, "") for k in fields})
    return 1 if any("wrong" in r.values() for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

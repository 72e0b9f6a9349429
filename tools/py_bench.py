#!/usr/bin/env python3
"""py_bench.py: the Python package against NumPy, and against PyOpenCL, CuPy and PyTorch where they
are importable, in one process on the same arrays, as one table.

usage: py_bench.py [--sizes 2^20,2^24] [--dtype float32] [--ops sum,max,argmax,cumsum]
                   [--device SPEC] [--repeat 7] [--format table|csv]

Each cell is the median wall time of --repeat calls after one untimed call (which builds
clreduce's and PyOpenCL's kernels), in ms, and what the call includes:
- clreduce: a NumPy (host) array in, the result out: on a GPU the upload is part of each call;
- numpy: the host array, on one core;
- pyopencl: an array already on the same OpenCL device as clreduce's (pyopencl.array), its
  reduction (pyopencl.array.sum/max/min) or InclusiveScanKernel (into a copy of the array), then
  the result read back; its argmax/argmin (a ReductionKernel over a struct) is not measured ("-");
- cupy, torch: an array already on the CUDA GPU, the call and a device synchronisation.
Every result is checked against NumPy's (integers exactly, floats within a relative 1e-3 of the
largest partial sum) before its time is printed; a mismatch prints "wrong" instead.
"""

import argparse
import statistics
import sys
import time

import numpy as np

try:
    import clreduce
except ImportError:
    sys.exit("py_bench.py: the clreduce package is not installed (pip install . from the "
             "repository root, docs/PYTHON.md)")


def parse_size(s):
    s = s.strip()
    if "^" in s:
        b, e = s.split("^")
        return int(b) ** int(e)
    return int(s)


def timed(fn, repeat):
    out = fn()  # untimed: builds kernels, warms caches
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), out


def close(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    if want.dtype.kind in "iub":
        return bool(np.array_equal(got.astype(want.dtype), want))
    scale = float(np.max(np.abs(np.cumsum(np.abs(want.astype(np.float64)))))) if want.size else 0
    return bool(np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= 1e-3 * scale + 1e-6))


def numpy_call(op, a):
    return {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax,
            "argmin": np.argmin, "prod": np.prod, "cumsum": np.cumsum}[op](a)


class PyOpenCLPeer:
    name = "pyopencl"

    def __init__(self, device_index):
        import pyopencl as cl
        import pyopencl.array  # noqa: F401
        from pyopencl.scan import InclusiveScanKernel  # noqa: F401  (needs Mako)
        devs = [d for p in cl.get_platforms() for d in p.get_devices()]
        self.cl = cl
        self.ctx = cl.Context([devs[device_index]])
        self.queue = cl.CommandQueue(self.ctx)
        self.kernels = {}

    def prepare(self, a):
        return self.cl.array.to_device(self.queue, a)

    def call(self, op, d):
        import pyopencl.array as cla
        from pyopencl.scan import InclusiveScanKernel
        if op in ("sum", "max", "min"):
            r = {"sum": cla.sum, "max": cla.max, "min": cla.min}[op](d, queue=self.queue)
            return r.get()
        if op == "cumsum":
            key = ("scan", d.dtype)
            if key not in self.kernels:
                self.kernels[key] = InclusiveScanKernel(self.ctx, d.dtype, "a+b", neutral="0")
            out = d.copy()
            self.kernels[key](out)
            self.queue.finish()
            return out.get()
        return None  # argmax, argmin, prod: not measured


class TorchPeer:
    name = "torch"

    def __init__(self):
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
        self.torch = torch

    def prepare(self, a):
        return self.torch.from_numpy(a).cuda()

    def call(self, op, d):
        t = self.torch
        r = {"sum": t.sum, "max": t.max, "min": t.min, "argmax": t.argmax, "argmin": t.argmin,
             "cumsum": lambda x: t.cumsum(x, 0)}[op](d)
        t.cuda.synchronize()
        return r.cpu().numpy()


class CuPyPeer:
    name = "cupy"

    def __init__(self):
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        self.cp = cupy

    def prepare(self, a):
        return self.cp.asarray(a)

    def call(self, op, d):
        cp = self.cp
        r = {"sum": cp.sum, "max": cp.max, "min": cp.min, "argmax": cp.argmax,
             "argmin": cp.argmin, "cumsum": cp.cumsum}[op](d)
        cp.cuda.Device().synchronize()
        return cp.asnumpy(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="2^20,2^24")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--ops", default="sum,max,argmax,cumsum")
    ap.add_argument("--device", default=None, help="clreduce's device (as device= takes it)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--format", choices=["table", "csv"], default="table")
    args = ap.parse_args()
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    ops = [o.strip() for o in args.ops.split(",")]
    for op in ops:
        if op not in ("sum", "max", "min", "argmax", "argmin", "prod", "cumsum"):
            ap.error(f"unknown op {op!r}")
    dtype = np.dtype(args.dtype)
    dev = clreduce.Device(args.device) if args.device is not None else clreduce.get_default_device()

    peers = []
    for name, make in (("pyopencl", lambda: PyOpenCLPeer(dev.index)), ("cupy", CuPyPeer),
                       ("torch", TorchPeer)):
        try:
            peers.append(make())
        except Exception as e:  # not installed, or no device for it
            print(f"# {name}: not measured ({type(e).__name__}: {e})", file=sys.stderr)

    cols = ["op", "n", "dtype", "clreduce_ms", "numpy_ms"] + [p.name + "_ms" for p in peers] + [
        "numpy/clreduce"]
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        if dtype.kind == "f":
            a = rng.standard_normal(n).astype(dtype)
        else:
            a = rng.integers(-1000, 1000, n).astype(dtype)
        dev_arrays = {}
        for p in peers:
            try:
                dev_arrays[p.name] = p.prepare(a)
            except Exception as e:
                print(f"# {p.name}: cannot hold {n} elements ({e})", file=sys.stderr)
        for op in ops:
            want = numpy_call(op, a)
            t_np, _ = timed(lambda: numpy_call(op, a), args.repeat)
            t_cl, got = timed(lambda: getattr(clreduce, op)(a, device=dev), args.repeat)
            cells = {"clreduce_ms": f"{t_cl:.4f}" if close(got, want) else "wrong",
                     "numpy_ms": f"{t_np:.4f}"}
            for p in peers:
                d = dev_arrays.get(p.name)
                cell = "-"
                if d is not None:
                    try:
                        t, r = timed(lambda: p.call(op, d), args.repeat)
                        if r is not None:
                            cell = f"{t:.4f}" if close(r, want) else "wrong"
                    except Exception as e:
                        print(f"# {p.name} {op}: {type(e).__name__}: {e}", file=sys.stderr)
                cells[p.name + "_ms"] = cell
            ratio = f"{t_np / t_cl:.2f}" if cells["clreduce_ms"] != "wrong" else "-"
            rows.append([op, str(n), dtype.name] + [cells[c] for c in cols[3:-1]] + [ratio])

    print(f"# clreduce on {dev!r}; numpy {np.__version__}; median of {args.repeat} calls")
    if args.format == "csv":
        print(",".join(cols))
        for r in rows:
            print(",".join(r))
        return
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(x.rjust(w) for x, w in zip(r, widths)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# test_segments.py: segmented reductions (--offsets) and reductions along axes (--axis,
# --keepdims) against NumPy, on the device under test ($CLREDUCE_TEST_DEVICE, else 0), through
# --output (NumPy's shape and dtype):
#   - every built-in op x int32, int64, float, double over segments of length 0, 1, 7, 1000, 200
#     short ones and a long one cut into pieces (groups of 16: pieces of 2^14 elements); NaN and
#     ties in the float arrays (the first NaN, the first of equal extremes); an empty segment
#     gives the identity (sum, prod) and is refused with exit 2 and no output for the others;
#   - axes 0, 1, -1 and (0, 2) of a (6, 7, 5) array, with and without keepdims (arg ops one
#     axis; several are refused), and one (3000, 2) array whose columns are cut into pieces;
#   - user reductions (--map) over segments and axes, with --post and two arrays;
#   - the engine's rows (mean, var, std, norm2, logsumexp, dot, count --where) along axes and
#     over segments (empty ones: nan for mean, var, std), and sum, max of int8, uint16, bool and
#     float16 along an axis.
# Ints must equal NumPy's; floats within a tolerance of the exact (long double) answer.
# Usage: test_segments.py CLREDUCE_BIN (a Python 3 with numpy)
import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np

clreduce = sys.argv[1]
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
failures = []
tmp = tempfile.mkdtemp()
LD = np.longdouble


def path(name):
    return os.path.join(tmp, name)


def save(name, a):
    np.save(path(name), a)
    return path(name)


def run(args, expect_rc=0):
    out = path("out.npy")
    if os.path.exists(out):
        os.remove(out)
    cmd = [clreduce, "--device", device, "--format", "json", "--warmup", "0", "--repeat", "1",
           "--local-size", "16", "--output", out] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect_rc:
        failures.append("%s: exit %d (want %d): %s" % (" ".join(args), p.returncode, expect_rc,
                                                       p.stderr.strip()))
        return None, p
    if expect_rc != 0:
        if os.path.exists(out):
            failures.append("%s: exit %d but wrote %s" % (" ".join(args), p.returncode, out))
        return None, p
    r = json.loads(p.stdout)
    if r["verified"] is not True:
        failures.append("%s: not verified: %s" % (" ".join(args), p.stdout.strip()))
    return np.load(out), p


def compare(what, got, want, exact_values, tol):
    """got vs NumPy's want (shape and dtype too); floats within tol[i] of exact_values[i]."""
    if got is None:
        return
    if got.shape != want.shape or got.dtype != want.dtype:
        failures.append("%s: shape %s dtype %s, NumPy %s %s" % (what, got.shape, got.dtype,
                                                                 want.shape, want.dtype))
        return
    if got.dtype.kind != "f":
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got.ravel() != want.ravel())[:3]
            failures.append("%s: differs from NumPy at %s: %s vs %s" % (
                what, bad, got.ravel()[bad], want.ravel()[bad]))
        return
    g, e, t = got.ravel().astype(LD), exact_values.ravel(), tol.ravel()
    same_special = (np.isnan(g) & np.isnan(e)) | (np.isinf(e) & (g == e))
    close = np.isfinite(e) & (np.abs(g - e) <= t)
    bad = np.flatnonzero(~(same_special | close))[:3]
    if len(bad):
        failures.append("%s: %s vs exact %s (NumPy %s), tolerance %s" % (
            what, g[bad], e[bad], want.ravel()[bad], t[bad]))


def reduce_np(op, seg, dtype):
    """NumPy's answer for one segment (1-D), its exact value and a tolerance."""
    u = np.finfo(dtype).eps if np.dtype(dtype).kind == "f" else 0
    if op == "sum":
        s = np.sum(seg)
        return s, np.sum(seg.astype(LD)), 2 * u * (len(seg) + 2) * np.sum(np.abs(seg.astype(LD)))
    if op == "prod":
        p = np.prod(seg)
        return p, np.prod(seg.astype(LD)), 2 * u * (len(seg) + 2) * np.abs(np.prod(seg.astype(LD)))
    v = getattr(np, op)(seg)
    return v, LD(v) if np.dtype(dtype).kind == "f" else v, 0


def data(dtype, n, rng, prod):
    if np.dtype(dtype).kind == "f":
        x = rng.uniform(0.9, 1.1, n) if prod else rng.standard_normal(n)
        return x.astype(dtype)
    return rng.integers(-3, 4 if prod else 1000, n).astype(dtype)


rng = np.random.default_rng(7)
# Lengths 0, 1, 7, 1000, 200 short ones (0 to 20), and a long one (40000: 3 pieces of 2^14).
lengths = [0, 1, 7, 1000] + list(rng.integers(0, 21, 200)) + [40000, 3]
offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
n = int(offsets[-1])
off_file = save("off.npy", offsets)
nonempty = [k for k, l in enumerate(lengths) if l > 0]
kept = offsets[nonempty]
# For the ops without identity: the nonempty segments, as offsets of their own over a compacted
# array.
ne_lengths = [lengths[k] for k in nonempty]
ne_offsets = np.concatenate([[0], np.cumsum(ne_lengths)]).astype(np.int64)
ne_file = save("off_nonempty.npy", ne_offsets)

for dtype in (np.int32, np.int64, np.float32, np.float64):
    for op in ("sum", "prod", "min", "max", "argmin", "argmax"):
        prod = op == "prod"
        x = data(dtype, n, rng, prod)
        if np.dtype(dtype).kind == "f" and not prod:
            # NaN in segment 3 (twice: the first counts), ties in segment 2.
            x[offsets[3] + 10] = np.nan
            x[offsets[3] + 20] = np.nan
            x[offsets[2]:offsets[3]] = np.array([1, -2, 5, -2, 5, 0, 1], dtype=dtype)
        elif not prod:
            x[offsets[2]:offsets[3]] = np.array([1, -2, 5, -2, 5, 0, 1], dtype=dtype)
        xf = save("x.npy", x)
        name = "%s %s --offsets" % (op, np.dtype(dtype).name)
        if op in ("sum", "prod"):
            segs = [x[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
            got, _ = run(["--input", xf, "--offsets", off_file, "--op", op])
        else:
            # An empty segment: exit 2, naming it, and no output file.
            _, p = run(["--input", xf, "--offsets", off_file, "--op", op], expect_rc=2)
            if "segment 0" not in p.stderr or "no identity" not in p.stderr:
                failures.append("%s: empty segment refused with %r" % (name, p.stderr.strip()))
            xc = np.concatenate([x[a:b] for a, b in zip(offsets[:-1], offsets[1:]) if b > a])
            xf = save("xc.npy", xc)
            segs = [xc[a:b] for a, b in zip(ne_offsets[:-1], ne_offsets[1:])]
            got, _ = run(["--input", xf, "--offsets", ne_file, "--op", op])
        res = [reduce_np(op, s, dtype) for s in segs]
        want = np.array([r[0] for r in res])
        if op in ("sum", "prod"):
            want = want.astype(np.result_type(getattr(np, op)(x[:1])))
        exact = np.array([r[1] for r in res], dtype=LD)
        tol = np.array([r[2] for r in res], dtype=LD)
        compare(name, got, want, exact, tol)

# Axes of a (6, 7, 5) array, keepdims or not; arg ops take one axis.
for dtype in (np.int32, np.int64, np.float32, np.float64):
    for op in ("sum", "prod", "min", "max", "argmin", "argmax"):
        m = data(dtype, 210, rng, op == "prod").reshape(6, 7, 5)
        if np.dtype(dtype).kind == "f" and op != "prod":
            m[2, 3, 1] = np.nan
        mf = save("m.npy", m)
        for axis in ((0,), (1,), (-1,), (0, 2)):
            for keepdims in (False, True):
                if (np.dtype(dtype).kind == "i" or op in ("min", "argmax")) and keepdims and \
                        axis != (0, 2):
                    continue  # keepdims: every op on floats, (0, 2) on all
                args = ["--input", mf, "--axis", ",".join(map(str, axis)), "--op", op] + \
                    (["--keepdims"] if keepdims else [])
                name = "%s %s --axis %s%s" % (op, np.dtype(dtype).name, axis,
                                              " --keepdims" if keepdims else "")
                if op.startswith("arg") and len(axis) > 1:
                    run(args, expect_rc=2)
                    continue
                got, _ = run(args)
                if op.startswith("arg"):
                    want = getattr(np, op)(m, axis=axis[0], keepdims=keepdims)
                    exact, tol = want.astype(LD), np.zeros(want.shape, dtype=LD)
                else:
                    want = getattr(np, op)(m, axis=axis, keepdims=keepdims)
                    ml = m.astype(LD)
                    exact = (np.sum(ml, axis=axis, keepdims=keepdims) if op == "sum" else
                             np.prod(ml, axis=axis, keepdims=keepdims) if op == "prod" else
                             want.astype(LD))
                    u = np.finfo(dtype).eps if np.dtype(dtype).kind == "f" else 0
                    tol = 2 * u * 50 * (np.sum(np.abs(ml), axis=axis, keepdims=keepdims)
                                        if op == "sum" else np.abs(exact))
                compare(name, got, want, exact, np.asarray(tol, dtype=LD))

# Long columns: (3000, 2) along axis 0, cut into pieces of rows; and along axis 1.
c = rng.standard_normal((3000, 2))
cf = save("c.npy", c)
for axis in (0, 1):
    for op in ("sum", "argmax"):
        got, _ = run(["--input", cf, "--axis", str(axis), "--op", op])
        want = getattr(np, op)(c, axis=axis)
        exact = np.sum(c.astype(LD), axis=axis) if op == "sum" else want.astype(LD)
        tol = (4 * np.finfo(np.float64).eps * 3000 * np.sum(np.abs(c), axis=axis)
               if op == "sum" else np.zeros(want.shape))
        compare("%s --axis %d of (3000, 2)" % (op, axis), got, want, exact, np.asarray(tol, LD))

# User reductions: the mean of squares per segment (post over n, the segment's length: NaN for
# an empty one, as NumPy's mean), and max(x*y) along axes 0 and 2 of two arrays.
x = rng.standard_normal(n)
xf = save("x.npy", x)
got, _ = run(["--input", xf, "--offsets", off_file, "--map", "x*x", "--reduce", "a+b",
              "--identity", "0", "--post", "a/n"])
with np.errstate(all="ignore"):
    want = np.array([np.mean(x[a:b] ** 2) if b > a else np.nan
                     for a, b in zip(offsets[:-1], offsets[1:])])
compare("--map x*x --post a/n --offsets", got, want, want.astype(LD),
        np.abs(want.astype(LD)) * 1e-12)
m1, m2 = rng.standard_normal((6, 7, 5)), rng.standard_normal((6, 7, 5))
got, _ = run(["--input", save("m1.npy", m1), "--input", save("m2.npy", m2), "--axis", "0,2",
              "--keepdims", "--map", "x*y", "--reduce", "max(a,b)", "--identity", "-INFINITY"])
want = np.max(m1 * m2, axis=(0, 2), keepdims=True)
compare("--map x*y max --axis 0,2", got, want, want.astype(LD), np.zeros(want.shape, LD))
mi = rng.integers(-100, 100, (6, 7, 5)).astype(np.int32)
got, _ = run(["--input", save("mi.npy", mi), "--axis", "1", "--map", "x", "--reduce", "a+b",
              "--identity", "0"])
compare("--map x --axis 1 int32", got, np.sum(mi, axis=1), None, None)

# The engine's rows along axes and segments (--op mean, var, std --ddof 1, norm2, logsumexp,
# dot of two arrays, count with --where), as NumPy's same calls: their dtypes (float64 for
# integers), shapes and values; mean, var and std of an empty segment are nan (with a warning).
def row_np(op, a, axis, keepdims, b=None):
    """NumPy's answer, and the exact (long double) one."""
    kw = dict(axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if op == "mean":
            return np.mean(a, **kw), np.mean(a.astype(LD), **kw)
        if op == "var":
            return np.var(a, ddof=1, **kw), np.var(a.astype(LD), ddof=1, **kw)
        if op == "std":
            return np.std(a, ddof=1, **kw), np.sqrt(np.var(a.astype(LD), ddof=1, **kw))
        if op == "norm2":
            af = a if a.dtype.kind == "f" else a.astype(np.float64)
            return np.sqrt(np.sum(af * af, **kw)), np.sqrt(np.sum(a.astype(LD) ** 2, **kw))
        if op == "logsumexp":
            af = a if a.dtype.kind == "f" else a.astype(np.float64)
            mx = np.max(a.astype(LD), axis=axis, keepdims=True, initial=-np.inf)
            e = np.log(np.sum(np.exp(a.astype(LD) - mx), **kw)) + (
                mx if keepdims else np.squeeze(mx, axis=axis))
            return e.astype(af.dtype), e
        if op == "dot":
            return np.sum(a * b, **kw), np.sum(a.astype(LD) * b.astype(LD), **kw)
        if op == "count":  # --where 'x > 0'
            return np.count_nonzero(a > 0, **kw), None


def row_args(op):
    return ["--op", op] + (["--ddof", "1"] if op in ("var", "std") else []) + \
        (["--where", "x > 0"] if op == "count" else [])


rm = {np.float32: rng.standard_normal((6, 7, 5)).astype(np.float32),
      np.int32: rng.integers(-50, 50, (6, 7, 5)).astype(np.int32)}
rm2 = rng.standard_normal((6, 7, 5)).astype(np.float32)
rm2f = save("rm2.npy", rm2)
for dtype, a in rm.items():
    af = save("rm.npy", a)
    for op in ("mean", "var", "std", "norm2", "logsumexp", "dot", "count"):
        if op in ("dot", "logsumexp") and dtype == np.int32:
            continue
        for axis, keepdims in (((0,), False), ((-1,), False), ((0, 2), True)):
            args = ["--input", af] + (["--input", rm2f] if op == "dot" else []) + \
                ["--axis", ",".join(map(str, axis))] + (["--keepdims"] if keepdims else []) + \
                row_args(op)
            got, _ = run(args)
            want, exact = row_np(op, a, axis, keepdims, rm2 if op == "dot" else None)
            want = np.asarray(want)
            eps = np.finfo(want.dtype).eps if want.dtype.kind == "f" else 0
            tol = None if exact is None else \
                np.asarray(8 * eps * (1 + np.abs(exact)) * (2 if op in ("var", "std") else 1), LD)
            if op == "dot":
                tol = np.asarray(8 * eps * np.sum(np.abs(a.astype(LD) * rm2), axis=axis,
                                                  keepdims=keepdims), LD)
            compare("%s %s --axis %s" % (op, np.dtype(dtype).name, axis), got, want, exact, tol)

# Rows over segments, empty ones included: mean, var, std of an empty one are nan, norm2 0,
# logsumexp -inf, count 0.
sx = rng.standard_normal(n)
sxf = save("sx.npy", sx)
sy = rng.standard_normal(n)
syf = save("sy.npy", sy)
segs = list(zip(offsets[:-1], offsets[1:]))
for op in ("mean", "var", "std", "norm2", "logsumexp", "dot", "count"):
    args = ["--input", sxf] + (["--input", syf] if op == "dot" else []) + \
        ["--offsets", off_file] + row_args(op)
    got, p = run(args)
    res = [row_np(op, sx[a:b], 0, False, sy[a:b]) for a, b in segs]
    want = np.array([r[0] for r in res])
    exact = None if op == "count" else np.array([r[1] for r in res], dtype=LD)
    if op == "logsumexp":
        want[[k for k, (a, b) in enumerate(segs) if a == b]] = -np.inf
        exact[[k for k, (a, b) in enumerate(segs) if a == b]] = -np.inf
    scale = np.array([np.sum(np.abs(sx[a:b] * (sy[a:b] if op == "dot" else 1))) for a, b in segs])
    tol = None if exact is None else np.asarray(1e-13 * (1 + np.abs(exact) + scale), LD)
    compare("%s --offsets" % op, got, want, exact, tol)
    if op in ("mean", "var", "std") and "nan" not in p.stderr:
        failures.append("%s --offsets: no warning of the empty segment's nan: %r" % (op, p.stderr))

# The built-in ops on the engine's input types along an axis: NumPy's dtypes (int8 sums int64,
# float16 sums float16, min keeps the type).
for dtype in (np.int8, np.uint16, np.bool_, np.float16):
    a = (rng.integers(0, 2, (6, 7, 5)) if dtype == np.bool_ else
         rng.integers(-100 if dtype == np.int8 else 0, 100, (6, 7, 5))).astype(dtype)
    af = save("t.npy", a)
    for op in ("sum", "max"):
        got, _ = run(["--input", af, "--axis", "1", "--op", op])
        want = getattr(np, op)(a, axis=1)
        exact = want.astype(LD) if op == "max" else np.sum(a.astype(LD), axis=1)
        tol = np.asarray(np.abs(exact) * 2e-3 + 1e-3, LD) if dtype == np.float16 else None
        compare("%s %s --axis 1" % (op, np.dtype(dtype).name), got, want, exact, tol)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("ok")

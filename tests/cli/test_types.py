#!/usr/bin/env python3
# test_types.py: the engine's input types and the variants' ops as its rows, against NumPy's same
# calls, on the device under test ($CLREDUCE_TEST_DEVICE, else 0):
#   - float16, bool, int8, uint8, int16, uint16 .npy files of 0, 1, 1000 and 2^16+3 elements
#     (ties; NaN and inf in float16) through --op sum, prod, min, max, argmin, argmax and minmax:
#     integer sums and products equal NumPy's in NumPy's accumulator type (int64, uint64), min,
#     max and the arg ops equal NumPy's value and first index (the first NaN), float16 sums
#     within the float accumulator's bound of the exact sum (NaN and inf as NumPy's);
#   - float32 (and float16) minmax in both shapes over 3 groups: the first of ties, NaN, inf and
#     -inf alone, through the GPU shape's vector loads and element fold and the CPU shape's lanes;
#   - --where on the variants' ops as NumPy's where= (sum, prod) and as the op over the selected
#     elements (min, max, argmin, argmax: an index into the whole array);
#   - --acc double for float and float16 sums (NumPy's dtype=np.float64), exit 5 where the device
#     has no fp64;
#   - --type float16, bool, int8, ... generated and written by --save-input with NumPy's dtype;
#   - refusals: exit 2 with one line for an empty array or selection under an op without an
#     identity, and an --acc the op does not take.
# Usage: test_types.py CLREDUCE_BIN (a Python 3 with numpy)
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
warnings.simplefilter("ignore")
LD = np.longdouble
tmp = tempfile.mkdtemp()


# The environment and extra flags of the runs: a forced shape of the engine, or the device's.
shape_env, shape_args = None, []


def call(args):
    cmd = [clreduce, "--device", device, "--format", "json", "--warmup", "0", "--repeat", "1"]
    return subprocess.run(cmd + args + shape_args, capture_output=True, text=True, env=shape_env)


def run(args):
    p = call(args)
    if p.returncode != 0:
        failures.append("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
        return None
    r = json.loads(p.stdout)
    if r["verified"] is not True:
        failures.append("%s: not verified: %s" % (" ".join(args), p.stdout.strip()))
    return r


def refused(args, code, words):
    p = call(args)
    lines = p.stderr.strip().splitlines()
    if p.returncode != code or len(lines) != 1 or words not in p.stderr or p.stdout:
        failures.append("%s: expected exit %d with one line naming %r, got exit %d: %s%s"
                        % (" ".join(args), code, words, p.returncode, p.stdout, p.stderr))


def number(v):
    if isinstance(v, str):
        return float(v)
    if isinstance(v, bool):
        return int(v)
    return v


def same(got, want):
    """A JSON value against NumPy's: equal numbers, or both NaN."""
    g = number(got)
    if np.issubdtype(type(want), np.floating):
        if np.isnan(want):
            return isinstance(g, float) and np.isnan(g)
        return type(want)(g) == want  # the JSON's digits round-trip in the element's type
    return g == int(want)


def save(name, x):
    path = os.path.join(tmp, name + ".npy")
    np.save(path, x)
    return path


def check_ops(name, x, where=None, where_text=None,
              ops=("sum", "prod", "min", "max", "argmin", "argmax", "minmax")):
    """Every op of x (and with --where) against NumPy."""
    path = save(name, x)
    w = np.ones(len(x), dtype=bool) if where is None else where
    xs = x[w]
    sel = np.flatnonzero(w)
    extra = ["--where", where_text] if where_text else []
    what = "%s (n = %d%s)" % (name, len(x), ", --where " + where_text if where_text else "")
    for op in ops:
        args = ["--input", path, "--op", op] + extra
        if len(xs) == 0 and op not in ("sum", "prod"):
            refused(args, 2, "no identity" if where is None else "holds for no element")
            continue
        r = run(args)
        if r is None:
            continue
        if r["type"] != x.dtype.name and not (x.dtype == np.float32 and r["type"] == "float"):
            failures.append("%s %s: type %s" % (what, op, r["type"]))
        if op in ("sum", "prod"):
            if x.dtype.kind == "f":
                exact = (np.sum(xs.astype(LD)) if op == "sum" else np.prod(xs.astype(LD)))
                npv = np.sum(xs, dtype=np.float32) if op == "sum" else np.prod(xs, dtype=np.float32)
                got = number(r["result"])
                if r.get("overflow"):  # verified as an overflow of some order: not finite
                    if np.isfinite(got):
                        failures.append("%s %s: overflow marked on %r" % (what, op, got))
                elif not np.isfinite(exact):
                    if not same(got, npv):
                        failures.append("%s %s: %r, NumPy (float32) %r" % (what, op, got, npv))
                else:
                    bound = 2.0 ** -22 * float(np.sum(np.abs(xs.astype(LD)))) + 1e-30
                    if op == "prod":
                        bound = 2.0 ** -24 * (len(xs) + 1) * abs(float(exact)) + 1e-37
                    if abs(got - float(exact)) > bound:
                        failures.append("%s %s: %r, exact %r (bound %g)" % (what, op, got, float(exact), bound))
                if r["acc"] != "float":
                    failures.append("%s %s: acc %s, not float" % (what, op, r["acc"]))
            else:
                npv = (np.sum if op == "sum" else np.prod)(xs)  # NumPy's accumulator: int64 or uint64
                if r["acc"] != npv.dtype.name or not same(r["result"], npv):
                    failures.append("%s %s: %r (acc %s), NumPy %r (%s)"
                                    % (what, op, r["result"], r["acc"], npv, npv.dtype.name))
        elif op in ("min", "max"):
            npv = np.min(xs) if op == "min" else np.max(xs)
            if not same(r["result"], npv):
                failures.append("%s %s: %r, NumPy %r" % (what, op, r["result"], npv))
        elif op in ("argmin", "argmax"):
            k = sel[np.argmin(xs) if op == "argmin" else np.argmax(xs)]
            if r["index"] != k or not same(r["result"], x[k]):
                failures.append("%s %s: %r @%d, NumPy %r @%d" % (what, op, r["result"], r["index"], x[k], k))
        else:
            lo, hi = sel[np.argmin(xs)], sel[np.argmax(xs)]
            if (r["index_min"] != lo or r["index_max"] != hi or not same(r["result_min"], x[lo])
                    or not same(r["result_max"], x[hi]) or "result" in r):
                failures.append("%s minmax: %s, NumPy %r @%d, %r @%d" % (what, json.dumps(r), x[lo], lo, x[hi], hi))


rng = np.random.default_rng(7)


def sample(t, n):
    if t == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if t == "float16":
        return (rng.integers(-64, 64, n) / 16).astype(np.float16)  # ties
    info = np.iinfo(t)
    return rng.integers(max(info.min, -50), min(info.max, 50) + 1, n).astype(t)


for t in ("float16", "bool", "int8", "uint8", "int16", "uint16"):
    for n in (0, 1, 1000, 2 ** 16 + 3):
        check_ops("%s_%d" % (t, n), sample(t, n))
# Integer products that wrap, sums past the element type, the extremes and the first of ties.
for t in ("int8", "uint8", "int16", "uint16"):
    info = np.iinfo(t)
    x = np.full(300, info.max, dtype=t)
    x[::7] = info.min
    check_ops(t + "_edges", x)
# float16: NaN (the first wins min, max and the arg ops), inf, -inf, overflow of float16 sums.
h = sample("float16", 1000)
h[[10, 500]] = np.nan
check_ops("float16_nan", h)
h = sample("float16", 1000)
h[3], h[900] = np.inf, -np.inf
check_ops("float16_inf", h)
check_ops("float16_big", np.full(1000, 60000, dtype=np.float16))  # NumPy's float16 sum: inf

# float32 minmax in both shapes of the engine over 3 groups: the GPU shape's element fold (no
# index compared), the CPU shape's lanes (16 elements at a time: in 3 work-items of 334, 320 in
# lanes and 14 one by one): the first of ties within a lane, across lanes and streams, NaN (the
# first wins), inf and -inf alone.
f = (rng.integers(-8, 8, 1000) / 4).astype(np.float32)  # many ties
nan_first = f.copy()
nan_first[[0, 400]] = np.nan
nan_late = f.copy()
nan_late[[333, 999, 5]] = np.nan
tied = np.full(1000, 2.0, dtype=np.float32)
tied[[17, 33, 700]] = -1.0
tied[[64, 999]] = 3.0
for shape, ls in (("cpu", "1"), ("gpu", "16")):
    shape_env = dict(os.environ, CLREDUCE_FAST_SHAPE=shape, CLREDUCE_FAST_GROUPS="3")
    shape_args = ["--local-size", ls]
    for name, x in (("ties", f), ("nan_first", nan_first), ("nan_late", nan_late),
                    ("tied", tied), ("inf", np.full(1000, np.inf, dtype=np.float32)),
                    ("ninf", np.full(1000, -np.inf, dtype=np.float32)),
                    ("h_ties", f.astype(np.float16))):
        check_ops("float32_%s_%s" % (name, shape), x, ops=("minmax",))
shape_env, shape_args = None, []

# --where on the variants' ops: NumPy's where= (sum, prod); min, max, argmin, argmax of the
# selected elements, indices into the whole array.
x = rng.integers(-1000, 1001, 2 ** 16 + 3).astype(np.int32)
x[[5, 77]] = 1000
check_ops("int32_where", x, x > 100, "x > 100")
f = rng.standard_normal(1000).astype(np.float32)
check_ops("float32_where", f, f < 0.5, "x < 0.5f")
check_ops("float32_where_none", f, f > 100, "x > 100")  # sum 0, prod 1, min refused
b = sample("int8", 1000)
check_ops("int8_where", b, b % 3 == 0, "x % 3 == 0")
check_ops("float16_where", sample("float16", 1000), None, None)

# --acc double: NumPy's dtype=np.float64.
fp64 = json.loads(call(["--list-devices"]).stdout.splitlines()[0]).get("fp64", True)
for t, x in (("float", rng.standard_normal(2 ** 16 + 3).astype(np.float32)),
             ("float16", sample("float16", 1000))):
    path = save("acc_" + t, x)
    if not fp64:
        refused(["--input", path, "--op", "sum", "--acc", "double"], 5, "double precision")
        continue
    r = run(["--input", path, "--op", "sum", "--acc", "double"])
    if r:
        exact = float(np.sum(x.astype(LD)))
        npv = np.sum(x, dtype=np.float64)
        if r["acc"] != "double" or abs(number(r["result"]) - exact) > max(abs(npv - exact), 2.0 ** -50 * abs(exact)):
            failures.append("%s --acc double: %r (acc %s), exact %r, NumPy %r" % (t, r["result"], r["acc"], exact, npv))

# Generated data of every new type, written with NumPy's dtype by --save-input.
for t in ("float16", "half", "bool", "int8", "uint8", "int16", "uint16"):
    path = os.path.join(tmp, "gen_%s.npy" % t)
    r = run(["--type", t, "--size", "1000", "--op", "sum", "--save-input", path])
    if r is None:
        continue
    x = np.load(path)
    want = "float16" if t == "half" else t
    if x.dtype.name != want or len(x) != 1000:
        failures.append("--type %s --save-input: %s of %d" % (t, x.dtype, len(x)))
        continue
    check_ops("gen_" + t, x)

# Refusals.
i8 = save("refuse_i8", sample("int8", 10))
refused(["--input", i8, "--op", "sum", "--acc", "int8"], 2, "--acc int8")
refused(["--input", i8, "--op", "min", "--acc", "double"], 2, "--acc")
refused(["--input", save("refuse_empty", np.zeros(0, np.int8)), "--op", "minmax"], 2, "no identity")
refused(["--input", i8, "--op", "argmax", "--where", "x > 1000"], 2, "holds for no element")
refused(["--input", i8, "--op", "sum", "--exclusive"], 2, "--exclusive")
off = save("refuse_off", np.array([0, 5, 10], dtype=np.int64))
refused(["--input", i8, "--op", "argmin", "--offsets", off], 2, "not int8")

if failures:
    print("\n".join(failures[:40]))
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok")

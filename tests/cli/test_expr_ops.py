#!/usr/bin/env python3
# test_expr_ops.py: the engine's rows (--op dot, norm2, mean, var, std, count, any, all,
# logsumexp, with --where and --ddof) against NumPy's same calls, in both shapes of the engine
# (over 3 groups), on the device under test ($CLREDUCE_TEST_DEVICE, else 0):
#   - random and ill-conditioned float32, float64 and int32 arrays: every row verifies (the host's
#     reference within the op's bound), integer results equal NumPy's, and each float result is at
#     least as close to the exact answer (long double) as NumPy's own, or within 4 units of
#     roundoff of it;
#   - NaN, inf, empty arrays, one element, values whose squares overflow or underflow (norm2) or
#     whose exp does (logsumexp), ddof >= n: NumPy's answers (nan, inf) where NumPy has them, and
#     finite answers where NumPy's scaled result is; float32 NaN, inf and -inf in the CPU shape's
#     lanes and after them, and in the GPU shape's element folds;
#   - the rows' older paths kept as tuning alternatives (expr-lanes, expr-fold, var-sums,
#     row-count off; the GPU shape's blocks, expr-blocks=on): still verified;
#   - logsumexp of float32 and float16 arrays with the fold's float exp (lse-exp auto) and the
#     double one: within the float exp's bound of the exact answer on data whose largest element
#     moves often, rarely, never or spreads past exp's range, with NaN, inf, -inf, --where and
#     small sizes; the reported bound that one (not vacuous);
#   - var and std of float32 as shifted sums: one launch where the first pass's condition allows
#     it, two (a second pass shifted by the mean) where the shift lies far from the mean (a
#     predicate that leaves it out; 2^22 values after an outlier), a NaN or inf in one pass.
# Usage: test_expr_ops.py CLREDUCE_BIN (a Python 3 with numpy)
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
warnings.simplefilter("ignore")  # NumPy's own warnings (empty means, ddof >= n, overflow)
LD = np.longdouble


def run(args, shape, tune=()):
    env = dict(os.environ, CLREDUCE_FAST_SHAPE=shape, CLREDUCE_FAST_GROUPS="3")
    args = list(args) + sum((["--tune", t] for t in tune), [])
    cmd = [clreduce, "--device", device, "--format", "json", "--warmup", "0", "--repeat", "1",
           "--local-size", "16" if shape == "gpu" else "1"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        failures.append("%s (%s): exit %d: %s" % (" ".join(args), shape, p.returncode, p.stderr.strip()))
        return None
    r = json.loads(p.stdout)
    if r["verified"] is not True:
        failures.append("%s (%s): not verified: %s" % (" ".join(args), shape, p.stdout.strip()))
    return r


def number(v):
    return float(v) if isinstance(v, str) else v


def numpy_and_exact(op, x, y, ddof, where):
    """NumPy's answer for op, and the exact one in long double (None: compare exactly)."""
    w = np.ones(len(x), dtype=bool) if where is None else where
    xs = x[w]
    xl = xs.astype(LD)
    if op == "dot":
        ys = y[w]
        return np.dot(xs, ys), (np.sum(xl * ys.astype(LD)) if x.dtype.kind == "f" else None)
    if op == "norm2":
        return np.linalg.norm(xs), np.sqrt(np.sum(xl * xl))
    if op == "mean":
        return np.mean(x, where=w), (np.sum(xl) / len(xl) if len(xl) else None)
    if op in ("var", "std"):
        npv = np.var(x, ddof=ddof, where=w) if op == "var" else np.std(x, ddof=ddof, where=w)
        if len(xl) == 0:
            return npv, None
        m = np.sum(xl) / len(xl)
        div = max(len(xl) - ddof, 0)
        ss = np.sum((xl - m) ** 2)
        v = ss / div if div else (LD("inf") if ss > 0 else LD("nan"))
        return npv, (v if op == "var" else np.sqrt(v))
    if op == "count":
        return np.count_nonzero(w), None
    if op == "any":
        return np.any(x, where=w), None
    if op == "all":
        return np.all(x, where=w), None
    if op == "logsumexp":
        # -inf adds nothing (exp(-inf) = 0): the exact answer of the rest.
        fin = xl[xl != -np.inf]
        return np.logaddexp.reduce(xs), ((np.max(fin) + np.log(np.sum(np.exp(fin - np.max(fin)))))
                                        if len(fin) and np.all(np.isfinite(fin)) else None)
    raise ValueError(op)


def check(op, files, x, y=None, ddof=0, where=None, where_text=None, shapes=("gpu", "cpu"),
          accuracy=True, label="", tune=(), launches=None):
    want, exact = numpy_and_exact(op, x, y, ddof, where)
    args = ["--op", op] + sum((["--input", f] for f in files), [])
    if op in ("var", "std"):
        args += ["--ddof", str(ddof)]
    if where_text:
        args += ["--where", where_text]
    for shape in shapes:
        r = run(args, shape, tune)
        if r is None:
            continue
        if launches is not None and r["launches"] != launches:
            failures.append("%s %s (%s, n %d): %d launches, not %d"
                            % (op, label, shape, len(x), r["launches"], launches))
        got = number(r["result"])
        what = "%s %s (%s, n %d): got %r, NumPy %r" % (op, label, shape, len(x), got, want)
        if op in ("count", "any", "all") or (op == "dot" and x.dtype.kind != "f"):
            if int(got) != int(want):
                failures.append(what)
            continue
        want = float(want)
        if np.isnan(want) or np.isinf(want) and exact is None:
            if not (np.isnan(got) and np.isnan(want) or got == want):
                failures.append(what)
            continue
        if exact is None:
            if not (got == want or abs(got - want) <= 1e-12 * abs(want)):
                failures.append(what)
            continue
        e = LD(exact)
        if not np.isfinite(e):
            if not (got == float(e) or np.isnan(got) and np.isnan(float(e))):
                failures.append(what + ", exact %r" % float(e))
            continue
        ours, theirs = abs(LD(got) - e), abs(LD(want) - e) if np.isfinite(want) else LD("inf")
        # Reported in double: within 4 units of roundoff of the exact answer is the best a
        # double can say; otherwise no farther from it than NumPy's.
        if accuracy and not (ours <= theirs or ours <= 4 * 2.0**-53 * abs(e)):
            failures.append(what + ", exact %r: error %.3g, NumPy's %.3g" % (float(e), ours, theirs))


rng = np.random.default_rng(25)
with tempfile.TemporaryDirectory() as tmp:
    def save(name, a):
        path = os.path.join(tmp, name + ".npy")
        np.save(path, a)
        return path

    n = 3001
    arrays = {
        "f32": rng.standard_normal(n).astype(np.float32),
        # Ill-conditioned: a large mean, a small spread, and terms that cancel.
        "f32off": (1000.0 + rng.standard_normal(n)).astype(np.float32),
        "f64": rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n),
        "f64off": 1e6 + rng.standard_normal(n),
        "i32": rng.integers(-1000, 1000, n).astype(np.int32),
    }
    files = {k: save(k, v) for k, v in arrays.items()}
    for k, x in arrays.items():
        # Both shapes on two arrays, the CPU shape on the rest (the builds take the time).
        shapes = ("gpu", "cpu") if k in ("f32", "f64off") else ("cpu",)
        for op in ("norm2", "mean", "var", "std", "logsumexp", "any", "all"):
            check(op, [files[k]], x, label=k, shapes=shapes)
        check("var", [files[k]], x, ddof=1, label=k + " ddof 1", shapes=shapes)
        y = arrays["f32"] if k != "i32" else arrays["i32"][::-1].copy()
        yf = files["f32"] if k != "i32" else save("i32r", y)
        if k not in ("i32",) and x.dtype != y.dtype:
            y = y.astype(x.dtype)
            yf = save(k + "y", y)
        check("dot", [files[k], yf], x, y, label=k, shapes=shapes)
        check("count", [files[k]], x, where=x > 0.5, where_text="x > 0.5", label=k, shapes=shapes)
        check("mean", [files[k]], x, where=x > 0.5, where_text="x > 0.5", label=k + " where",
              shapes=shapes)
        check("std", [files[k]], x, where=x < 0, where_text="x < 0", label=k + " where",
              shapes=shapes)
    # A predicate over a second array.
    x, y = arrays["f64"], arrays["f64off"]
    check("logsumexp", [files["f64"], files["f64off"]], x, where=y > 1e6, where_text="y > 1e6",
          label="where y")

    # Hard inputs: NumPy's NaN and inf; empty; one element.
    nan, inf = np.nan, np.inf
    hard = {
        "nan": np.array([1.0, nan, 2.0, -3.0]),
        "inf": np.array([1.0, inf, 2.0]),
        "ninf": np.array([1.0, -inf, 2.0]),
        "infs": np.array([inf, -inf]),
        "empty": np.array([], dtype=np.float64),
        "one": np.array([2.5]),
        "one32": np.array([-7.25], dtype=np.float32),
        "zeros": np.zeros(5),
    }
    for k, x in hard.items():
        f = save("h_" + k, x)
        for op in ("norm2", "mean", "var", "std", "logsumexp", "count", "any", "all"):
            check(op, [f], x, label=k, shapes=("cpu",))
        check("dot", [f, f], x, x, label=k, shapes=("cpu",))
    # var and std with ddof at and past n.
    x = np.array([1.0, 2.0, 4.0])
    f = save("ddof", x)
    for ddof in (2, 3, 5, 2.5):
        check("var", [f], x, ddof=ddof, label="ddof %s" % ddof, shapes=("cpu",))
        check("std", [f], x, ddof=ddof, label="ddof %s" % ddof, shapes=("cpu",))
    check("var", [save("h_one2", hard["one"])], hard["one"], ddof=1, label="one ddof 1",
          shapes=("cpu",))

    # norm2 where the squares overflow or underflow but the norm does not (NumPy's float32 norm
    # overflows at 1e20; its double one at 1e155): finite, within the bound of the exact norm.
    for k, x in {
        "huge64": rng.standard_normal(1000) * 1e300,
        "tiny64": rng.standard_normal(1000) * 1e-300,
        "sub64": rng.standard_normal(1000) * 1e-310,
        "huge32": (rng.standard_normal(1000) * 1e30).astype(np.float32),
        "tiny32": (rng.standard_normal(1000) * 1e-30).astype(np.float32),
    }.items():
        f = save(k, x)
        for shape in ("gpu", "cpu"):
            r = run(["--op", "norm2", "--input", f], shape)
            if r is None:
                continue
            xl = x.astype(LD)
            e = np.sqrt(np.sum(xl * xl))
            got = number(r["result"])
            if not (np.isfinite(got) and abs(LD(got) - e) <= 1e-12 * e):
                failures.append("norm2 %s (%s): got %r, exact %r" % (k, shape, got, float(e)))
    # logsumexp where exp overflows or underflows: NumPy's logaddexp.reduce is finite there too.
    for k, x in {"big": np.array([1000.0, 1000.0, 999.0]), "small": np.array([-1000.0, -1001.0]),
                 "big32": np.array([100.0, 100.0], dtype=np.float32)}.items():
        check("logsumexp", [save("l" + k, x)], x, label=k)

    # float32 in the CPU shape's lanes (16 elements at a time; over 3 work-items of 334, each
    # lane takes 5 or more, the last 14 of each work-item go one by one) and the rows' element
    # folds in the GPU shape: NaN, inf and -inf in a lane and in the remainder.
    base = rng.standard_normal(1000).astype(np.float32)
    for k, (pos, val) in {"nan": ([70], np.nan), "nan_tail": ([999], np.nan),
                          "inf": ([200], np.inf), "ninf": ([5, 300], -np.inf),
                          "infs": ([10, 600], [np.inf, -np.inf]),
                          "nan_inf": ([70, 600], [np.nan, np.inf]),
                          "all_ninf": (slice(None), -np.inf)}.items():
        x = base.copy()
        x[pos] = val
        f = save("lanes_" + k, x)
        for op in ("norm2", "mean", "var", "std", "logsumexp"):
            check(op, [f], x, label="float32 " + k, shapes=("cpu",))
        check("logsumexp", [f], x, label="float32 " + k, shapes=("gpu",))
        check("dot", [f, f], x, x, label="float32 " + k, shapes=("cpu",))
    # The rows' older paths, kept as tuning alternatives, still verify: one by one (no lanes),
    # the reduce per element (no folds), Chan's var, the count summed.
    for tune in ("expr-lanes=off", "expr-fold=off", "var-sums=off", "row-count=acc"):
        for op in ("mean", "var", "std", "logsumexp", "norm2"):
            check(op, [files["f32off"]], arrays["f32off"], label="f32off " + tune, shapes=("cpu",),
                  tune=(tune,))
    # The GPU shape's pairwise blocks (expr-blocks=on) for the rows it folds in one chain by
    # default.
    for op in ("mean", "var", "std", "logsumexp", "norm2"):
        check(op, [files["f32off"]], arrays["f32off"], label="f32off expr-blocks=on",
              shapes=("gpu",), tune=("expr-blocks=on",))
    check("dot", [files["f32off"], files["f32off"]], arrays["f32off"], arrays["f32off"],
          label="f32off expr-blocks=on", shapes=("gpu",), tune=("expr-blocks=on",))
    for tune, blocked in (((), False), (("expr-blocks=on",), True)):
        r = run(["--op", "mean", "--input", files["f32off"]], "gpu", tune)
        if r is not None and ("pairwise blocks" in r["policy"]) != blocked:
            failures.append("mean (gpu, %s): policy %s" % (tune, r["policy"]))

    # logsumexp of float32 and float16 arrays in double: the element fold's float exp (lse-exp
    # auto: m moves only past m + 8, each term a float exp) and the double one (lse-exp=double),
    # in the GPU shape and in the CPU shape's fold (with --where, or without lanes): data whose
    # largest element moves at almost every element of an accumulator (ascending by 0.05), moves
    # by less than the margin (ascending by 30 / n), never (random), spreads so far that most
    # terms underflow (-1e4..1e4), NaN, inf and -inf, and small odd sizes. Each result verifies
    # (the reference's bound, JSON `bound`), is within the float exp's own bound of the exact
    # answer (long double), and the bound is that one (not vacuous, and present only with the
    # float exp).
    def lse_check(label, x, shape, tune, where=None, where_text=None):
        f = save("lse_" + label, x)
        args = ["--op", "logsumexp", "--input", f] + (["--where", where_text] if where_text else [])
        r = run(args, shape, tune)
        if r is None:
            return None
        what = "logsumexp %s %s (%s, %s, n %d)" % (label, x.dtype, shape, " ".join(tune), len(x))
        want, exact = numpy_and_exact("logsumexp", x.astype(np.float64), None, 0, where)
        got = number(r["result"])
        if exact is None:
            if not (np.isnan(got) and np.isnan(want) or got == float(want)):
                failures.append("%s: got %r, NumPy %r" % (what, got, float(want)))
            return r
        count = len(x) if where is None else int(np.count_nonzero(where))
        lc = np.log(count + 1.0)
        fexp = 1.01 * (2.0**-24 * (lc + 8) + 4 * 2.0**-23) + count * 2.0**-126
        # The double part: gamma of the depth in double, whose work-items in the GPU shape fold
        # up to count / 48 elements in one chain (3 groups of 16, no blocks).
        plain = max(1e-11, 8e-16 * count) * (abs(float(exact)) + lc + 1)
        floatexp = "lse-exp=double" not in tune
        bound = number(r.get("bound", float("nan")))
        if abs(LD(got) - LD(exact)) > (fexp if floatexp else 0) + plain:
            failures.append("%s: got %r, exact %r" % (what, got, float(exact)))
        # (JSON gives the bound to 6 digits.)
        if not (fexp * (1 - 1e-5) <= bound <= (fexp + plain) * (1 + 1e-5) if floatexp
                else bound <= plain):
            failures.append("%s: bound %r, not the %s exp's" % (what, bound,
                                                                "float" if floatexp else "double"))
        return r

    n = 4001
    lse = {
        "asc": np.linspace(-100, 100, n),
        "asc_slow": np.linspace(0, 30, n),
        "rand": rng.standard_normal(n) * 3,
        "spread": rng.uniform(-1e4, 1e4, n),
    }
    for k, base in lse.items():
        x = base.astype(np.float32)
        for tune in (("lse-exp=auto",), ("lse-exp=double",)):
            lse_check(k, x, "gpu", tune)
        lse_check(k + "_lanes_off", x, "cpu", ("expr-lanes=off",))
        lse_check(k + "_where", x, "cpu", (), where=x > 0, where_text="x > 0")
        lse_check(k + "_where", x, "gpu", (), where=x > 0, where_text="x > 0")
        x = base.astype(np.float16)
        lse_check(k, x, "gpu", ())
        lse_check(k + "_where", x, "cpu", (), where=x > 0, where_text="x > 0")
    rand = lse["rand"].astype(np.float32)
    for k, (pos, val) in {"ninf_first": ([0, 5, 2000], -np.inf), "inf": ([77], np.inf),
                          "infs": ([3, 1000], [np.inf, -np.inf]), "inf2": ([9, 900], np.inf),
                          "nan": ([1500], np.nan), "nan_inf": ([40, 41], [np.inf, np.nan]),
                          "all_ninf": (slice(None), -np.inf)}.items():
        x = rand.copy()
        x[pos] = val
        for tune in (("lse-exp=auto",), ("lse-exp=double",)):
            lse_check(k, x, "gpu", tune)
        lse_check(k + "_where", x, "cpu", (), where=x < 1, where_text="x < 1")
        x = x.astype(np.float16)
        lse_check(k, x, "gpu", ())
    for size in (1, 2, 3, 17, 65):
        x = (rng.standard_normal(size) * 4).astype(np.float32)
        lse_check("size%d" % size, x, "gpu", ())
        lse_check("size%d_where" % size, x, "cpu", (), where=x > -1, where_text="x > -1")
    x = (rng.standard_normal(9) * 4).astype(np.float16)
    lse_check("size9", x, "gpu", ())
    # 2^20 float32 elements: the float exp's bound, about 1.8e-6 (checked as above), and plainly
    # small against the result's scale.
    x = rng.standard_normal(2 ** 20).astype(np.float32)
    r = lse_check("big", x, "gpu", ())
    if r is not None and not (number(r["bound"]) < 1e-7 * (abs(number(r["result"])) +
                                                           np.log(len(x)) + 1)):
        failures.append("logsumexp 2^20: bound %r" % number(r["bound"]))

    # var and std of float arrays as shifted sums (x - x0 in double, x0 the first element): one
    # pass where the sums' condition allows it, else a second shifted by the first's mean (two
    # launches), within the bound and at least as accurate as NumPy.
    check("var", [files["f32"]], arrays["f32"], label="f32 one pass", launches=1)
    # The predicate leaves out x0 = 10^6: the selected values lie 10^6 from the shift.
    x = rng.uniform(0, 1, 3001).astype(np.float32)
    x[0] = 1e6
    f = save("far", x)
    for op in ("var", "std"):
        check(op, [f], x, where=x < 1000, where_text="x < 1000", label="far shift", launches=2)
        check(op, [f], x, ddof=1, where=x < 1000, where_text="x < 1000",
              label="far shift ddof 1", shapes=("cpu",), launches=2)
        check(op, [f], x, where=x < 1000, where_text="x < 1000", label="far shift, Chan",
              shapes=("cpu",), tune=("var-sums=off",), launches=1)
    # No predicate: x0 = 3e4 among 2^22 standard normal values (its condition, about n, is past
    # the one-pass bound at this depth); a NaN or inf goes through one pass as NumPy's answer.
    x = rng.standard_normal(2 ** 22).astype(np.float32)
    x[0] = 3e4
    f = save("far_big", x)
    check("var", [f], x, label="far shift 2^22", shapes=("cpu",), launches=2)
    x[77] = np.inf
    check("var", [save("far_inf", x)], x, label="far shift 2^22 inf", shapes=("cpu",), launches=1)

for fail in failures:
    print("FAIL: " + fail)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
# test_expr_chunks.py: the reduction engine (user expressions and its rows) on arrays in chunks,
# forced with a small --max-chunk, against NumPy, on the device under test
# ($CLREDUCE_TEST_DEVICE, else 0):
#   - minmax, argmin and argmax whose least and greatest values tie across chunk edges (the first
#     index wins, counted from the array's start), and a NaN in a later chunk;
#   - mean, var and std (partial moments folded across chunks), a dot product of two arrays and
#     a user expression with post, resident, copied to the device and streamed;
#   - two devices (the device under test twice): the shares' accumulators folded in share
#     order (ties across the shares' edge), weighed shares, streamed, an empty share;
#   - with `mpi`: mpirun -n 2 and 3, the ranks' accumulators folded in rank order (ties across
#     the slices' edge, an empty slice, a law refused once for every rank, standard input
#     refused, var's second pass taken by every rank alike);
#   - with `large`: a user sum and argmin of 2^31 + 5 int8 elements in chunks (an index past
#     2^31).
# Every run must verify (the whole array's reference) and say it ran in chunks.
# Usage: test_expr_chunks.py CLREDUCE_BIN [large|mpi] (a Python 3 with numpy)
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

clreduce = sys.argv[1]
section = sys.argv[2] if len(sys.argv) > 2 else ""
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
failures = []


def run(args, env_extra=None, chunks_at_least=2, launch=None):
    env = dict(os.environ, **(env_extra or {}))
    on = [] if "--device" in args else ["--device", device]
    cmd = (launch or []) + [clreduce] + on + ["--format", "json", "--warmup", "0", "--repeat", "1"] + args
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    what = " ".join(args) + (" " + str(env_extra) if env_extra else "")
    if p.returncode != 0:
        failures.append("%s: exit %d: %s %s" % (what, p.returncode, p.stdout.strip(), p.stderr.strip()))
        return None
    r = json.loads(p.stdout.splitlines()[-1])
    if r["verified"] is not True:
        failures.append("%s: not verified: %s" % (what, p.stdout.strip()))
    if r.get("chunks", 1) < chunks_at_least:
        failures.append("%s: ran in %s chunks, not %d or more (%s)" % (what, r.get("chunks"), chunks_at_least, r.get("layout")))
    return r


def number(v):
    return float(v) if isinstance(v, str) else v


def expect(what, got, want, rel=0.0):
    got = number(got)
    if isinstance(want, float) and np.isnan(want):
        ok = isinstance(got, float) and np.isnan(got)
    elif rel:
        ok = abs(got - want) <= rel * max(abs(want), 1e-300)
    else:
        ok = got == want
    if not ok:
        failures.append("%s: %r, expected %r" % (what, got, want))


tmp = tempfile.mkdtemp()


def save(name, a):
    path = os.path.join(tmp, name + ".npy")
    np.save(path, a)
    return path


def small():
    # Chunks of 1024 float32 (4096 bytes): 10 chunks and a short last one.
    n = 10000
    chunk = ["--max-chunk", "4096"]
    rng = np.random.default_rng(25)
    x = rng.integers(-50, 50, n).astype(np.float32)
    # The least value at 1500 (chunk 1) and again at 2048 (chunk 2's first) and 9999 (the last
    # chunk); the greatest at 1023 (chunk 0's last), 1024 and 5000.
    x[[1500, 2048, 9999]] = -1000
    x[[1023, 1024, 5000]] = 1000
    fx = save("x", x)
    for shape in ("gpu", "cpu"):
        env = {"CLREDUCE_FAST_SHAPE": shape, "CLREDUCE_FAST_GROUPS": "3"}
        ls = ["--local-size", "16" if shape == "gpu" else "1"]
        r = run(["--op", "minmax", "--input", fx] + chunk + ls, env)
        if r:
            expect("minmax min (%s)" % shape, r["result_min"], -1000.0)
            expect("minmax index_min (%s)" % shape, r["index_min"], 1500)
            expect("minmax max (%s)" % shape, r["result_max"], 1000.0)
            expect("minmax index_max (%s)" % shape, r["index_max"], 1023)
        for op, want in (("argmin", 1500), ("argmax", 1023)):
            r = run(["--op", op, "--where", "x > -2000", "--input", fx] + chunk + ls, env)
            if r:
                expect("%s index (%s)" % (op, shape), r["index"], want)
        for op, fn in (("mean", np.mean), ("var", np.var), ("std", np.std)):
            r = run(["--op", op, "--input", fx] + chunk + ls, env)
            if r:
                expect("%s (%s)" % (op, shape), r["result"], float(fn(x.astype(np.float64))), 1e-5)

    # A NaN in chunk 7: argmin and minmax give its index, as NumPy does.
    xn = x.copy()
    xn[7300] = np.nan
    r = run(["--op", "argmin", "--where", "x > -2000 || isnan(x)", "--input", save("xn", xn)] + chunk)
    if r:
        expect("argmin with NaN index", r["index"], 7300)
    r = run(["--op", "minmax", "--input", save("xn", xn)] + chunk)
    if r:
        expect("minmax with NaN index_min", r["index_min"], int(np.argmin(xn)))

    # int8 (engine types): argmax whose greatest value ties in chunks 3 and 5 (chunks of 4096 bytes).
    xi = rng.integers(-100, 100, 30000).astype(np.int8)
    xi[[13000, 21000]] = 127
    r = run(["--op", "argmax", "--input", save("xi", xi)] + chunk)
    if r:
        expect("int8 argmax index", r["index"], int(np.argmax(xi)))
        expect("int8 argmax index is the first tie", int(np.argmax(xi)), 13000)

    # Two arrays, resident, copied (in-place off) and streamed through 2 slots: a dot product and a
    # user expression with post, of float64 and float32 arrays of one length (chunks of 512 doubles).
    y = rng.standard_normal(n)
    fy = save("y", y)
    want_dot = float(np.dot(x.astype(np.float64), y))
    for tune in ([], ["--tune", "in-place=off"], ["--tune", "stream=on", "--tune", "stream-slots=2"]):
        r = run(["--op", "dot", "--input", fx, "--input", fy] + chunk + tune)
        if r:
            expect("dot %s" % tune, r["result"], want_dot, 1e-9)
        r = run(["--map", "x*y", "--reduce", "a+b", "--identity", "0", "--post", "a/n",
                 "--input", fx, "--input", fy] + chunk + tune)
        if r:
            expect("map x*y post a/n %s" % tune, r["result"], want_dot / n, 1e-9)
        # An integer user reduction: exact across the chunks.
        r = run(["--map", "(long)x*3", "--reduce", "a+b", "--identity", "0", "--acc", "int64",
                 "--input", fx] + chunk + tune)
        if r:
            expect("map (long)x*3 %s" % tune, r["result"], int(x.astype(np.int64).sum() * 3))

    # Generated arrays, a max by expression, over 40 chunks of 256 ints.
    r = run(["--map", "x", "--reduce", "max(a,b)", "--identity", "INT_MIN", "--acc", "int32",
             "--type", "int32", "--size", "10240", "--max-chunk", "1024"], chunks_at_least=40)


def devices():
    # Two devices (the device under test listed twice): a share each, equal or weighed, each
    # share in chunks; the shares' accumulators folded in share order. Equal shares of 10000
    # elements are 4992 and 5008: the least value at 4992 (the second share's first) and 9999,
    # the greatest at 4991 (the first share's last) and 4992.
    two = device + "," + device
    n = 10000
    rng = np.random.default_rng(26)
    x = rng.integers(-50, 50, n).astype(np.float32)
    x[[4992, 9999]] = -1000
    x[[4991, 4992 + 1]] = 1000
    fx = save("dx", x)
    y = rng.standard_normal(n)
    fy = save("dy", y)
    for chunk in (["--max-chunk", "4096"], []):
        at_least = 2 if chunk else 1
        r = run(["--device", two, "--op", "minmax", "--input", fx] + chunk, chunks_at_least=at_least)
        if r:
            expect("devices minmax index_min %s" % chunk, r["index_min"], 4992)
            expect("devices minmax index_max %s" % chunk, r["index_max"], 4991)
        r = run(["--device", two, "--op", "argmin", "--where", "x != 0", "--input", fx] + chunk,
                chunks_at_least=at_least)
        if r:
            expect("devices argmin index %s" % chunk, r["index"], 4992)
        r = run(["--device", two, "--shares", "3,1", "--op", "var", "--input", fx] + chunk,
                chunks_at_least=at_least)
        if r:
            expect("devices var %s" % chunk, r["result"], float(np.var(x.astype(np.float64))), 1e-5)
        for tune in ([], ["--tune", "stream=on", "--tune", "stream-slots=2"]):
            r = run(["--device", two, "--shares", "1,2", "--map", "x*y", "--reduce", "a+b",
                     "--identity", "0", "--input", fx, "--input", fy] + chunk + tune,
                    chunks_at_least=at_least)
            if r:
                expect("devices x*y %s %s" % (chunk, tune), r["result"],
                       float(np.dot(x.astype(np.float64), y)), 1e-9)
    # A weight of 0: that device runs nothing; an empty array: the identity.
    r = run(["--device", two, "--shares", "0,1", "--op", "sum", "--type", "int8", "--size", "1000"],
            chunks_at_least=1)
    r = run(["--device", two, "--op", "count", "--type", "int8", "--size", "0"], chunks_at_least=0)
    if r:
        expect("devices count of nothing", r["result"], 0)
    p = subprocess.run([clreduce, "--device", two, "--shares", "rate", "--op", "dot", "--size", "10"],
                       capture_output=True, text=True)
    if p.returncode != 5 or "--shares rate does not apply" not in p.stderr or p.stderr.count("\n") != 1:
        failures.append("--shares rate with the engine: exit %d: %s" % (p.returncode, p.stderr))


def mpi():
    # mpirun -n 2 and 3: each rank reduces its slice (in chunks, or whole) to one accumulator,
    # the accumulators gathered and folded in rank order on every rank. 2 ranks' slices of 10000
    # are 5000 each: the least value at 5000 (rank 1's first) and 9999, the greatest at 4999
    # (rank 0's last) and 5000.
    mpirun = shutil.which("mpirun")
    env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
    launch = ["timeout", "-k", "10", "240", mpirun, "--allow-run-as-root", "--oversubscribe",
              "--bind-to", "none", "-n"]
    n = 10000
    rng = np.random.default_rng(27)
    x = rng.integers(-50, 50, n).astype(np.float32)
    x[[5000, 9999]] = -1000
    x[[4999, 5000 + 1]] = 1000
    fx = save("mx", x)
    y = rng.standard_normal(n)
    fy = save("my", y)
    for chunk in (["--max-chunk", "4096"], []):
        r = run(["--op", "minmax", "--input", fx] + chunk, env, 1, launch + ["2"])
        if r:
            expect("mpi minmax index_min %s" % chunk, r["index_min"], 5000)
            expect("mpi minmax index_max %s" % chunk, r["index_max"], 4999)
            expect("mpi layout %s" % chunk, r["layout"].startswith("2 ranks: "), True)
        r = run(["--op", "argmax", "--where", "x < 2000", "--input", fx] + chunk, env, 1,
                launch + ["3"])
        if r:
            expect("mpi argmax index %s" % chunk, r["index"], 4999)
        r = run(["--map", "x*y", "--reduce", "a+b", "--identity", "0", "--post", "a/n",
                 "--input", fx, "--input", fy] + chunk, env, 1, launch + ["3"])
        if r:
            expect("mpi x*y/n %s" % chunk, r["result"], float(np.dot(x.astype(np.float64), y)) / n,
                   1e-9)
        r = run(["--op", "std", "--ddof", "1", "--type", "double", "--size", "10001"] + chunk, env, 1,
                launch + ["2"])
    # var of float32 with its shift (the first element, 10^6) left out by the predicate: every
    # rank takes the second pass (the same decision from the same folded sums), twice the
    # launches of one pass (each rank's slice and the fold), verified.
    xf = rng.uniform(0, 1, n).astype(np.float32)
    xf[0] = 1e6
    ff = save("mfar", xf)
    for chunk in (["--max-chunk", "4096"], []):
        one = run(["--op", "var", "--where", "x < 1000", "--input", ff, "--tune", "var-sums=off"]
                  + chunk, env, 1, launch + ["2"])
        r = run(["--op", "var", "--where", "x < 1000", "--input", ff] + chunk, env, 1, launch + ["2"])
        if r and one:
            sel = xf[xf < 1000].astype(np.float64)
            expect("mpi var far shift %s" % chunk, r["result"], float(np.var(sel)), 1e-12)
            expect("mpi var far shift launches %s" % chunk, r["launches"], 2 * one["launches"])
    # A rank with an empty slice (2 elements, 3 ranks), an exact integer sum of generated int8.
    one = run(["--op", "sum", "--type", "int8", "--size", "2", "--seed", "5"], chunks_at_least=1)
    r = run(["--op", "sum", "--type", "int8", "--size", "2", "--seed", "5"], env, 1, launch + ["3"])
    if r and one:
        expect("mpi int8 sum with an empty rank", r["result"], one["result"])
    # A law that fails (on rank 0's sample) stops every rank with one line; standard input is
    # refused.
    p = subprocess.run(launch + ["2", clreduce, "--device", device, "--map", "x", "--reduce", "a-b",
                                 "--identity", "0", "--type", "int32", "--size", "100"],
                       capture_output=True, text=True, env=dict(os.environ, **env))
    if p.returncode != 2 or p.stderr.count("is not associative") != 1:
        failures.append("mpi law refusal: exit %d: %s" % (p.returncode, p.stderr))
    p = subprocess.run(launch + ["2", clreduce, "--device", device, "--op", "dot", "--input", "-",
                                 "--input", fx], capture_output=True, text=True,
                       env=dict(os.environ, **env), stdin=subprocess.DEVNULL)
    if p.returncode != 5 or "standard input under mpirun" not in p.stderr:
        failures.append("mpi stdin refusal: exit %d: %s" % (p.returncode, p.stderr))


def large_arrays():
    # 2^31 + 5 int8 elements (2 GiB, the smallest type: the host's references take most of the
    # time) in 3 chunks of 2^30 bytes: a user sum (every element widened to int64, the one
    # work-item's reference resumed chunk after chunk) and argmin, whose least value lies past
    # 2^31 (at 2^31 + 2, tied at 2^31 + 4): its index is the whole array's.
    big = 2**31 + 5
    xb = np.zeros(big, np.int8)
    xb[[2**31 + 2, 2**31 + 4]] = -128
    xb[[7, 2**30 + 1]] = 100
    fb = save("big", xb)
    want_sum = int(xb.sum(dtype=np.int64))
    del xb
    args = ["--input", fb, "--max-chunk", str(2**30)]
    r = run(["--map", "x", "--reduce", "a+b", "--identity", "0"] + args, chunks_at_least=3)
    if r:
        expect("big sum", r["result"], want_sum)
        expect("big n", r["n"], big)
    r = run(["--op", "argmin"] + args, chunks_at_least=3)
    if r:
        expect("big argmin index", r["index"], 2**31 + 2)
    os.remove(fb)


if section == "mpi" and not shutil.which("mpirun"):
    print("no mpirun: skipped")
    sys.exit(77)
try:
    if section == "large":
        large_arrays()
    elif section == "mpi":
        mpi()
    else:
        small()
        devices()
finally:
    shutil.rmtree(tmp, ignore_errors=True)
for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
"""test_mpi_cli.py CLREDUCE [MPIEXEC]: `mpirun -n R clreduce ...` gives the one-process answer.

For 2 and 3 ranks on the test device (CLREDUCE_TEST_DEVICE, else 0): every op and type of a
reduction (integers and arg indices exactly, floats verified), scans written with --output equal
to the one-process file byte for byte (exact ops) in inclusive, exclusive and segmented modes
with segments spanning ranks, an extreme tied on a slice boundary (the first index wins), a rank
with an empty slice, --input read as slices, and the refusals under mpirun. `exact` (the
correctly rounded sum): the one-process bits (result and expected, -0 and NaN included) on
generated data, chunked within ranks, an empty rank, and hard --input arrays whose slices'
rounded sums would fold to another value (ties broken in a later rank, overflow and back,
cancellation, inf and NaN in different ranks, signed zeros, every exponent). Exits 77 (skipped)
without mpirun.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

BIN = sys.argv[1]
MPIEXEC = sys.argv[2] if len(sys.argv) > 2 and os.access(sys.argv[2], os.X_OK) else None
MPIEXEC = MPIEXEC or shutil.which("mpirun") or shutil.which("mpiexec")
if not MPIEXEC:
    print("test_mpi_cli.py: no mpirun found: skipped")
    sys.exit(77)
DEV = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
failures = []


def run(args, ranks=0):
    cmd = [BIN, "--device", DEV] + args
    if ranks:
        cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
               "-n", str(ranks)] + cmd
    p = subprocess.run(["timeout", "240"] + cmd, capture_output=True, text=True, env=ENV)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, rows, p.stderr


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what, flush=True)


def same_value(a, b):
    """The same JSON value, -0.0 and 0.0 told apart (repr), NaN equal to NaN (a string)."""
    return repr(a) == repr(b)


def same_reduction(args, ranks, exact):
    rc1, one, err1 = run(args + ["--format", "json", "--repeat", "1", "--warmup", "0"])
    rcr, many, errr = run(args + ["--format", "json", "--repeat", "1", "--warmup", "0"], ranks)
    what = f"-n {ranks} {' '.join(args)}"
    check(rc1 == 0 and rcr == 0, f"{what}: exit {rc1}/{rcr}: {err1.strip()} {errr.strip()}")
    if rc1 or rcr:
        return
    check(len(many) == len(one), f"{what}: rank 0 printed {len(many)} rows, one process {len(one)}")
    for a, b in zip(one, many):
        check(b.get("verified") is True, f"{what} {b['variant']}: not verified: {b}")
        check(b.get("ranks") == ranks, f"{what} {b['variant']}: ranks {b.get('ranks')}")
        check(b["n"] == a["n"], f"{what}: n {b['n']} != {a['n']}")
        check(len(b.get("parts", [])) == ranks, f"{what}: {len(b.get('parts', []))} parts")
        if exact:
            check(same_value(b["result"], a["result"]),
                  f"{what} {b['variant']}: {b['result']} != {a['result']}")
        if "index" in a:
            check(b["index"] == a["index"], f"{what} {b['variant']}: index {b['index']} != {a['index']}")
        check(same_value(b["expected"], a["expected"]) or not exact,
              f"{what}: expected {b['expected']} != {a['expected']}")


tmp = tempfile.mkdtemp(prefix="clreduce_mpi_")
try:
    types = ["int32", "uint32", "int64", "uint64", "float", "double"]
    ops = ["sum", "prod", "min", "max", "argmin", "argmax"]
    for t in types:
        for op in ops:
            exact = "int" in t or op not in ("sum", "prod")
            same_reduction(["--variant", "fast,topdown", "--op", op, "--type", t,
                            "--size", "10007"], 2, exact)
    for op, t in [("sum", "int32"), ("argmin", "float"), ("max", "double"), ("prod", "uint64")]:
        same_reduction(["--variant", "fast", "--op", op, "--type", t, "--size", "10007"], 3, True)
    # A rank with an empty slice: 2 elements over 3 ranks.
    for op in ("sum", "min", "argmax"):
        same_reduction(["--variant", "fast", "--op", op, "--size", "2"], 3, True)

    # exact: the correctly rounded sum of the whole array, bit for bit the one-process run's.
    for ranks in (2, 3):
        for t in ("float", "double"):
            same_reduction(["--variant", "exact", "--type", t, "--size", "10007"], ranks, True)
            same_reduction(["--variant", "exact", "--type", t, "--size", "10007",
                            "--max-chunk", "4000"], ranks, True)
    for t in ("float", "double"):  # a rank with an empty slice
        same_reduction(["--variant", "exact", "--type", t, "--size", "2"], 3, True)
    # Hard arrays read as slices (10 or 11 elements: 2 ranks cut at 5 or 6, 3 at 4 and 8 or 4
    # and 7): each slice's own rounded sum, folded in floating point, would give another value.
    for dt in (np.float32, np.float64):
        fi = np.finfo(dt)
        mx, tiny, half = dt(fi.max), dt(fi.smallest_subnormal), dt(fi.eps) / dt(2)
        big = np.ldexp(dt(1), fi.maxexp - fi.nmant - 2)  # half an ulp of max
        z = dt(0)

        def arr(*xs):
            return np.array(xs, dtype=dt)

        cases = {
            "tie broken in a later rank": arr(1, 0, 0, 0, 0, 0, half, 0, 0, 0, tiny),
            "tie, downwards": arr(1, 0, 0, 0, 0, 0, half, 0, 0, 0, -tiny),
            "negative tie, odd": arr(-1 - 2 * half, 0, 0, 0, 0, 0, 0, 0, 0, -half),
            "overflow and back": arr(mx, 0, 0, 0, 0, mx, 0, 0, 0, -mx),
            "overflow by a tie": arr(mx, 0, 0, 0, 0, 0, 0, 0, 0, big),
            "cancellation": arr(1e30, 0, 0, 0, 0, 3.25, 0, 0, 0, -1e30),
            "+inf and -inf in two ranks": arr(np.inf, 0, 0, 0, 0, 0, 0, 0, 0, -np.inf),
            "-inf beats overflow": arr(mx, mx, 0, 0, 0, 0, 0, 0, 0, -np.inf),
            "NaN in the middle": arr(1, 0, 0, 0, 0, np.nan, 0, 0, 0, 2),
            "every slice -0": arr(*([-z] * 10)),
            "+0 in the last rank": arr(*([-z] * 9 + [z])),
            "exact zero": arr(1, 0, 0, 0, 0, 0, 0, 0, 0, -1),
        }
        rng = np.random.default_rng(7)
        bits = np.uint32 if dt == np.float32 else np.uint64
        raw = rng.integers(0, 2 ** 64, size=3001, dtype=np.uint64, endpoint=False).astype(bits)
        wide = raw.view(dt)
        wide = wide[np.isfinite(wide)]
        # Every exponent, then the same values negated in reverse order, and the smallest
        # subnormal: each rank's sum is huge, the whole's one unit.
        cases["every exponent, cancelling"] = np.concatenate([wide, [tiny], -wide[::-1]]).astype(dt)
        cases["every exponent"] = wide
        for name, x in cases.items():
            path = os.path.join(tmp, "exact.npy")
            np.save(path, x)
            for ranks in (2, 3):
                for extra in ([], ["--max-chunk", "8"]):  # chunks of 2 floats or 1 double
                    print(f"exact: {name}, {dt.__name__}, -n {ranks} {' '.join(extra)}", flush=True)
                    same_reduction(["--input", path, "--variant", "exact"] + extra, ranks, True)

    # Scans: the output file, byte for byte.
    modes = [["--op", "sum", "--type", "int32"],
             ["--op", "sum", "--type", "int32", "--exclusive"],
             ["--op", "sum", "--type", "int32", "--acc", "int32", "--segment-length", "6000"],
             ["--op", "max", "--type", "float", "--segment-length", "7", "--exclusive"],
             ["--op", "prod", "--type", "uint32", "--segment-length", "3"],
             ["--op", "sum", "--type", "double", "--segment-length", "5001"]]
    for ranks in (2, 3):
        for mode in modes:
            for n in ("10007", "2"):
                args = ["--variant", "scan-hierarchical,scan-fast", "--size", n, "--format", "json",
                        "--repeat", "1", "--warmup", "0"] + mode
                one_out, many_out = os.path.join(tmp, "one.npy"), os.path.join(tmp, "many.npy")
                rc1, one, e1 = run(args + ["--output", one_out])
                rcr, many, er = run(args + ["--output", many_out], ranks)
                what = f"-n {ranks} {' '.join(args)}"
                check(rc1 == 0 and rcr == 0, f"{what}: exit {rc1}/{rcr}: {e1.strip()} {er.strip()}")
                if rc1 or rcr:
                    continue
                for b in many:
                    check(b.get("verified") is True, f"{what} {b['variant']}: not verified: {b}")
                    check(b.get("ranks") == ranks, f"{what}: ranks {b.get('ranks')}")
                a, b = np.load(one_out), np.load(many_out)
                if mode[3] in ("double",):
                    check(a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-9),
                          f"{what}: outputs differ")
                else:
                    check(open(one_out, "rb").read() == open(many_out, "rb").read(),
                          f"{what}: the output files differ")

    # An extreme tied across the boundary of ranks 0 and 1 (10007 over 2: rank 1 starts at 5004),
    # read by each rank as its slice of the file.
    x = np.zeros(10007, dtype=np.int32)
    x[5003] = 7
    x[5004] = 7
    x[9000] = 7
    path = os.path.join(tmp, "ties.npy")
    np.save(path, x)
    for ranks in (2, 3):
        rc, rows, err = run(["--input", path, "--op", "argmax", "--variant", "fast,topdown",
                             "--format", "json"], ranks)
        check(rc == 0, f"ties -n {ranks}: exit {rc}: {err}")
        for r in rows:
            check(r["index"] == 5003 and r["verified"], f"ties -n {ranks}: {r}")

    # Refused under mpirun, one line, exit 2.
    for bad in (["--peers"], ["--measure-copy"]):
        rc, rows, err = run(["--size", "100"] + bad, 2)
        check(rc == 2, f"{bad} under mpirun: exit {rc}, {err}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
"""test_mpi_cli.py CLREDUCE [MPIEXEC [SECTION...]]: `mpirun -n R clreduce ...` gives the one-process
answer (sections: answers, agree, stdin, times; all by default).

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

BIN = os.path.abspath(sys.argv[1])  # absolute: some ranks start in other folders
MPIEXEC = sys.argv[2] if len(sys.argv) > 2 and os.access(sys.argv[2], os.X_OK) else None
MPIEXEC = MPIEXEC or shutil.which("mpirun") or shutil.which("mpiexec")
if not MPIEXEC:
    print("test_mpi_cli.py: no mpirun found: skipped")
    sys.exit(77)
DEV = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
# Every mpirun runs under `timeout` (then SIGKILL: a stuck mpirun may ignore SIGTERM), so a hang
# fails instead of stopping the test.
LAUNCH = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]
failures = []


def run(args, ranks=0):
    cmd = [BIN, "--device", DEV] + args
    if ranks:
        cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
               "-n", str(ranks)] + cmd
    p = subprocess.run(["timeout", "-k", "10", "240"] + cmd, capture_output=True, text=True,
                       env=ENV)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, rows, p.stderr


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAILED:", what, flush=True)


def same_value(a, b):
    """The same JSON value, -0.0 and 0.0 told apart (repr), NaN equal to NaN (a string)."""
    return repr(a) == repr(b)


def same_reduction(args, ranks, exact, alone=None):
    """mpirun -n ranks clreduce args against one process's run of args (or alone: that run's
    (exit status, rows, stderr), made once for several calls)."""
    rc1, one, err1 = alone or run(args + ["--format", "json", "--repeat", "1", "--warmup", "0"])
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


def answers():
    """Every op and type, scans, ties, exact: the one-process answers."""
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
        # The correctly rounded sum is one value however the array is cut: one process's run is
        # the answer for every cut. Each array over 2 and 3 ranks, and over 3 ranks in chunks of
        # 8 bytes (2 floats or 1 double) within each rank, where every boundary is one.
        for name, x in cases.items():
            path = os.path.join(tmp, "exact.npy")
            np.save(path, x)
            args = ["--input", path, "--variant", "exact"]
            alone = run(args + ["--format", "json", "--repeat", "1", "--warmup", "0"])
            for ranks, extra in ((2, []), (3, []), (3, ["--max-chunk", "8"])):
                print(f"exact: {name}, {dt.__name__}, -n {ranks} {' '.join(extra)}", flush=True)
                same_reduction(args + extra, ranks, True, alone)

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
                    # Unsegmented: the last rank scans the first piece, rank 0 gets its output.
                    split = "the first piece scanned on the last rank" in b.get("policy", "")
                    want = n != "2" and not any(m.startswith("--segment") for m in mode)
                    check(split == want, f"{what} {b['variant']}: split {split}: {b.get('policy')}")
                    if want:
                        check(b["parts"][0]["n"] > b["parts"][1]["n"],
                              f"{what}: rank 0's slice holds no first piece: {b['parts']}")
                a, b = np.load(one_out), np.load(many_out)
                if mode[3] in ("double",):
                    check(a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-9),
                          f"{what}: outputs differ")
                else:
                    check(open(one_out, "rb").read() == open(many_out, "rb").read(),
                          f"{what}: the output files differ")

    # A split scan of a file (each rank reads its slice; rank 0's begins with the first piece,
    # which the last rank scans): the output file byte for byte the one-process one.
    x = np.random.default_rng(5).integers(-1000, 1000, 30011).astype(np.int32)
    path = os.path.join(tmp, "scan_in.npy")
    np.save(path, x)
    for ranks in (2, 3):
        for extra in ([], ["--exclusive"], ["--op", "max"]):
            args = ["--input", path, "--variant", "scan-fast", "--format", "json", "--repeat",
                    "2", "--warmup", "1"] + extra
            out = os.path.join(tmp, "scan_out.npy")
            rc, rows, err = run(args + ["--output", out], ranks)
            what = f"-n {ranks} {' '.join(args)}"
            check(rc == 0 and rows, f"{what}: exit {rc}: {err.strip()}")
            if rc:
                continue
            r = rows[0]
            check(r["verified"] and "the first piece scanned on the last rank" in r["policy"],
                  f"{what}: {r.get('verified')} {r.get('policy')}")
            y = np.load(out)
            if "--op" in extra:
                want = np.maximum.accumulate(x)
            else:
                want = np.cumsum(x, dtype=np.int64)
                if "--exclusive" in extra:
                    want = np.concatenate([[0], want[:-1]])
            check(y.dtype == want.dtype and np.array_equal(y, want), f"{what}: the output differs")

    # The last rank holds the first piece beside its slice: where the two would pass 0.85 of the
    # memory its device plans for (device-memory; copied, in-place=off), every rank runs unsplit
    # and says why. 700000 int32 -> int64 over 2: the piece 99328 and rank 1's 300336 elements
    # of 12 bytes, 4795968 bytes; planned 5200000 (0.85: 4420000) crowds it, 6400000 does not.
    for memory, want in (("5200000", False), ("6400000", True)):
        args = ["--variant", "scan-fast", "--size", "700000", "--type", "int32", "--format", "json",
                "--repeat", "1", "--warmup", "0", "--tune=in-place=off", "--tune=device-memory=" + memory]
        rc, rows, err = run(args, 2)
        what = f"-n 2 {' '.join(args)}"
        check(rc == 0 and rows and rows[0]["verified"], f"{what}: exit {rc}: {err.strip()} {rows}")
        if rc == 0 and rows:
            policy = rows[0].get("policy", "")
            check(("the first piece scanned on the last rank" in policy) == want
                  and ("unsplit: the first piece beside the last rank's slice would pass 0.85 of its "
                       "device's memory" in policy) == (not want), f"{what}: {policy}")

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


def mpmd(args0, args1, env1=None, wdir1=None):
    """`mpirun -n 1 clreduce ARGS0 : -n 1 [env ENV1] clreduce ARGS1`: two ranks started with
    different arguments (rank 1 in wdir1). A hang is a failure (exit 124), not a stuck test."""
    def device(args):
        return [] if "--device" in args else ["--device", DEV]
    cmd = LAUNCH + ["-n", "1", BIN] + device(args0) + args0 + [":", "-n", "1"]
    cmd += (["-wdir", wdir1] if wdir1 else []) + (["env"] + env1 if env1 else [])
    cmd += [BIN] + device(args1) + args1
    p = subprocess.run(["timeout", "-k", "10", "90"] + cmd, capture_output=True, text=True, env=ENV)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return p.returncode, rows, p.stdout, p.stderr


def our_lines(err):
    """clreduce's own lines on stderr (mpirun adds its banners)."""
    return [l for l in err.splitlines() if l.startswith("clreduce:")]


def flags(d):
    """{"--size": "1000", "--exclusive": True} -> ["--size", "1000", "--exclusive"]."""
    return [x for k, v in d.items() if v is not None for x in ([k] if v is True else [k, v])]


def agree():
    """Ranks that stop before the run, or were started with different options, stop together:
    one line, printed once, the same exit code everywhere; never a hang, never a wrong answer."""
    a, b = os.path.join(tmp, "a.npy"), os.path.join(tmp, "b.npy")
    np.save(a, np.arange(1000, dtype=np.int32))
    np.save(b, np.arange(2000, dtype=np.int32))
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere, exist_ok=True)
    out = os.path.join(tmp, "out.npy")
    red = {"--size": "1000", "--variant": "fast", "--format": "json", "--repeat": "1"}
    scan = dict(red, **{"--variant": "scan-fast"})
    # (rank 0's options, rank 1's, rank 1's folder, exit code, words of the one line)
    cases = [
        # An error on one rank before the run: parsing, checks, files, devices, kernels.
        (red, dict(red, **{"--size": "foo"}), None, 2, "clreduce: rank 1: --size must be a count from 0 to 2^64-1"),
        (dict(red, **{"--bogus": True}), red, None, 2,
         "clreduce: rank 0: The following argument was not expected: --bogus"),
        (red, dict(red, **{"--repeat": "0"}), None, 2, "clreduce: rank 1: --repeat"),
        (red, dict(red, **{"--device": "99"}), None, 2, "clreduce: rank 1: "),
        (red, dict(red, **{"--kernel-dir": os.path.join(tmp, "no-such-dir")}), None, 4,
         "clreduce: rank 1: "),
        (dict(scan, **{"--output": out}),
         dict(scan, **{"--output": os.path.join(tmp, "no-dir", "x.npy")}), None, 2,
         "clreduce: rank 1: "),
        # a.npy is in tmp, not in rank 1's folder
        ({"--input": a, "--variant": "fast"}, {"--input": "a.npy", "--variant": "fast"},
         elsewhere, 2, "clreduce: rank 1: "),
        # Options that shape the run, different on the two ranks.
        (red, dict(red, **{"--size": "2000"}), None, 2, "--size is 1000 on rank 0, 2000 on rank 1"),
        (red, dict(red, **{"--seed": "2"}), None, 2, "--seed is 1 on rank 0, 2 on rank 1"),
        (red, dict(red, **{"--type": "float"}), None, 2,
         "--type is int32 on rank 0, float on rank 1"),
        (red, dict(red, **{"--op": "max"}), None, 2, "--op is sum on rank 0, max on rank 1"),
        (red, dict(red, **{"--acc": "int32"}), None, 2,
         "--acc is the default on rank 0, int32 on rank 1"),
        (red, dict(red, **{"--variant": "fast,topdown"}), None, 2,
         "--variant is fast on rank 0, fast,topdown on rank 1"),
        (red, dict(red, **{"--variant": "scan-fast"}), None, 2,
         "--variant is fast on rank 0, scan-fast on rank 1"),
        (red, dict(red, **{"--repeat": "2"}), None, 2, "--repeat is 1 on rank 0, 2 on rank 1"),
        (red, dict(red, **{"--warmup": "0"}), None, 2, "--warmup is 1 on rank 0, 0 on rank 1"),
        (red, dict(red, **{"--local-size": "4"}), None, 2, "--local-size is "),
        (red, dict(red, **{"--max-chunk": "1024"}), None, 2,
         "--max-chunk is 0 on rank 0, 1024 on rank 1"),
        (red, dict(red, **{"--timeout": "30"}), None, 2, "--timeout is 0 on rank 0, 30 on rank 1"),
        (red, dict(red, **{"--tune": "fast-shape=topdown"}), None, 2,
         "--tune fast-shape is auto on rank 0, topdown on rank 1"),
        (scan, dict(scan, **{"--exclusive": True}), None, 2,
         "--exclusive is off on rank 0, on on rank 1"),
        (scan, dict(scan, **{"--segment-length": "7"}), None, 2,
         "--segment-length is none on rank 0, 7 on rank 1"),
        (scan, dict(scan, **{"--output": out}), None, 2, "--output is none on rank 0"),
        ({"--input": a, "--variant": "fast"}, {"--input": b, "--variant": "fast"}, None, 2,
         "--input is "),
        ({"--version": True}, red, None, 2, "the task is --version on rank 0, a run on rank 1"),
        (red, {"--list-devices": True}, None, 2,
         "the task is a run on rank 0, --list-devices on rank 1"),
    ]
    for opts0, opts1, wdir1, code, words in cases:
        args0, args1 = flags(opts0), flags(opts1)
        what = f"-n 1 {' '.join(args0)} : -n 1 {' '.join(args1)}"
        print("agree:", what, flush=True)
        rc, rows, _, err = mpmd(args0, args1, wdir1=wdir1)
        mine = our_lines(err)
        check(rc == code, f"{what}: exit {rc}, not {code}: {err.strip()[-600:]}")
        check(len(mine) == 1 and words in mine[0], f"{what}: {mine}, not one line with '{words}'")
        check(not rows, f"{what}: printed rows {rows}")
        check(not os.path.exists(out), f"{what}: wrote {out}")
    # The same error on every rank: one line, no rank named, the usual code.
    for bad, code in ((["--size", "foo"], 2), (["--input", os.path.join(tmp, "missing.npy")], 2),
                      (["--kernel-dir", os.path.join(tmp, "none")], 4)):
        rc, rows, err = run(["--variant", "fast"] + bad, 2)
        mine = our_lines(err)
        check(rc == code and len(mine) == 1 and "rank" not in mine[0],
              f"-n 2 {bad}: exit {rc}, lines {mine}")
    # What may differ, and the same value spelled otherwise: the run goes on.
    same = [
        (red, dict(red, **{"--size": "1e3"})),
        (red, dict(red, **{"--format": "table", "--accuracy": True, "--verbose": True})),
        (red, dict(red, **{"--device": "cpu"})),
        ({"--input": a, "--variant": "fast", "--format": "json"},
         {"--input": os.path.relpath(a), "--variant": "fast"}),
        (dict(red, **{"--timeout": "30"}), dict(red, **{"--timeout": "3e1"})),
    ]
    rc, one, err = run(flags(red))
    check(rc == 0 and len(one) == 1, f"{flags(red)}: exit {rc}: {err}")
    sums = {"generated": one[0]["result"] if one else None, "a.npy": 499500}
    for opts0, opts1 in same:
        args0, args1 = flags(opts0), flags(opts1)
        want = sums["a.npy" if "--input" in opts0 else "generated"]
        what = f"-n 1 {' '.join(args0)} : -n 1 {' '.join(args1)}"
        print("agree:", what, flush=True)
        rc, rows, _, err = mpmd(args0, args1)
        check(rc == 0 and len(rows) == 1 and rows[0]["verified"] and rows[0]["ranks"] == 2 and
              rows[0]["result"] == want, f"{what}: exit {rc}, rows {rows}: {err.strip()[-600:]}")
    # --help and --version: printed once, exit 0.
    for flag, words in (("--help", "Exit codes:"), ("--version", "kernels: ")):
        p = subprocess.run(["timeout", "-k", "10", "90"] + LAUNCH + ["-n", "2", BIN, flag],
                           capture_output=True, text=True, env=ENV)
        check(p.returncode == 0 and p.stdout.count(words) == 1,
              f"-n 2 {flag}: exit {p.returncode}, '{words}' {p.stdout.count(words)} times")


def stdin():
    """--input - under mpirun: rank 0 reads standard input and sends each rank its slice."""
    rng = np.random.default_rng(3)
    x = rng.integers(-1000, 1000, size=10007, dtype=np.int64)
    path = os.path.join(tmp, "stdin.npy")
    np.save(path, x)
    for ranks in (2, 3):
        for args in (["--op", "sum"], ["--op", "argmin"],
                     ["--op", "max", "--variant", "fast,topdown"]):
            args = args + ["--format", "json", "--repeat", "1"]
            with open(path, "rb") as f:
                cmd = ["timeout", "-k", "10", "90"] + LAUNCH + ["-n", str(ranks), BIN, "--device",
                                                               DEV, "--input", "-"]
                p = subprocess.run(cmd + args, stdin=f, capture_output=True, text=True, env=ENV)
            rows = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
            rc1, one, _ = run(["--input", path] + args)
            what = f"-n {ranks} --input - {' '.join(args)}"
            check(p.returncode == 0 and rc1 == 0 and len(rows) == len(one) > 0,
                  f"{what}: exit {p.returncode}/{rc1}: {p.stderr.strip()[-600:]}")
            for a, b in zip(one, rows):
                check(b["verified"] and b["ranks"] == ranks and b["n"] == x.size and
                      b["input"] == "-" and b["result"] == a["result"] and
                      b.get("index") == a.get("index"), f"{what}: {b} against {a}")
    # A scan's --output from standard input, byte for byte the one-process file.
    one_out, many_out = os.path.join(tmp, "one.npy"), os.path.join(tmp, "many.npy")
    args = ["--variant", "scan-fast", "--repeat", "1", "--segment-length", "333"]
    rc1, _, e1 = run(["--input", path, "--output", one_out] + args)
    with open(path, "rb") as f:
        p = subprocess.run(["timeout", "-k", "10", "90"] + LAUNCH +
                           ["-n", "2", BIN, "--device", DEV, "--input", "-", "--output",
                            many_out] + args,
                           stdin=f, capture_output=True, text=True, env=ENV)
    check(rc1 == 0 and p.returncode == 0 and os.path.exists(many_out) and
          open(one_out, "rb").read() == open(many_out, "rb").read(),
          f"-n 2 --input - --output: exit {rc1}/{p.returncode}: {e1} {p.stderr.strip()[-600:]}")
    # Bad standard input: one line naming it, exit 2, on every rank.
    for data, words in ((b"not a .npy file", "standard input"), (b"", "standard input")):
        p = subprocess.run(["timeout", "-k", "10", "90"] + LAUNCH +
                           ["-n", "2", BIN, "--device", DEV, "--input", "-"],
                           input=data, capture_output=True, env=ENV)
        err = p.stderr.decode(errors="replace")
        mine = our_lines(err)
        check(p.returncode == 2 and len(mine) == 1 and words in mine[0],
              f"-n 2 --input - < {data!r}: exit {p.returncode}, {mine}")


def times():
    """The combined row of ranks: wall ms is the slowest rank's, never below the kernel ms (the
    slowest rank's; a scan's, each run's slowest first pass plus its slowest second pass, so never
    below the slowest rank's); upload_ms is the largest rank's, e2e_gbps the whole input over the
    largest of the ranks' upload + wall ms."""
    runs = [(["--variant", "fast,topdown", "--size", "2^20"], 2, None),
            (["--variant", "scan-fast", "--size", "2^20"], 3, None),
            # Rank 1 on one PoCL thread: slower than rank 0 in every column.
            (["--variant", "fast,scan-fast", "--size", "2^21"], 2,
             ["POCL_MAX_PTHREAD_COUNT=1", "POCL_CPU_MAX_CU_COUNT=1"])]
    for args, ranks, env1 in runs:
        args = args + ["--format", "json", "--repeat", "3"]
        if env1:
            rc, rows, _, err = mpmd(args, args, env1)
        else:
            rc, rows, err = run(args, ranks)
        what = f"-n {ranks} {' '.join(args)} {env1 or ''}"
        check(rc == 0 and rows, f"{what}: exit {rc}: {err.strip()[-600:]}")
        for r in rows:
            parts = r["parts"]
            check(len(parts) == ranks, f"{what}: {len(parts)} parts")
            slowest_wall = max(p["wall_ms"] for p in parts)
            slowest_kernel = max(p["kernel_ms"] for p in parts)
            check(r["wall_ms"] == slowest_wall, f"{what} {r['variant']}: wall_ms {r['wall_ms']}, "
                  f"the ranks' {[p['wall_ms'] for p in parts]}")
            if r.get("kind") == "peer" or "scan" not in r.get("mode", ""):
                check(r["kernel_ms"] == slowest_kernel, f"{what} {r['variant']}: kernel_ms "
                      f"{r['kernel_ms']}, the ranks' {[p['kernel_ms'] for p in parts]}")
            else:  # a scan's: each run's slowest first pass plus its slowest second pass
                check(r["kernel_ms"] >= slowest_kernel * (1 - 1e-9), f"{what} {r['variant']}: "
                      f"kernel_ms {r['kernel_ms']} under the ranks' "
                      f"{[p['kernel_ms'] for p in parts]}")
            check(r["kernel_ms_min"] <= r["kernel_ms"] <= r["kernel_ms_max"],
                  f"{what} {r['variant']}: kernel_ms {r['kernel_ms']} outside its spread "
                  f"[{r['kernel_ms_min']}, {r['kernel_ms_max']}]")
            check(r["wall_ms"] >= r["kernel_ms"],
                  f"{what} {r['variant']}: wall_ms {r['wall_ms']} < kernel_ms {r['kernel_ms']}")
            # The whole input over the largest of the ranks' upload + wall ms: between what the
            # slowest wall alone gives and what the largest upload and largest wall added give.
            size = r["n"] * (8 if "64" in r["type"] or r["type"] == "double" else 4)
            low, high = size / ((r["upload_ms"] + r["wall_ms"]) * 1e6), size / (r["wall_ms"] * 1e6)
            check(low * 0.9999 <= r["e2e_gbps"] <= high * 1.0001,
                  f"{what} {r['variant']}: e2e_gbps {r['e2e_gbps']} outside [{low}, {high}]")


SECTIONS = {"answers": answers, "agree": agree, "stdin": stdin, "times": times}
ONLY = [a for a in sys.argv[3:] if a]
unknown = [a for a in ONLY if a not in SECTIONS]
if unknown:
    print(f"test_mpi_cli.py: unknown sections {unknown} (sections: {', '.join(SECTIONS)})")
    sys.exit(2)
tmp = tempfile.mkdtemp(prefix="clreduce_mpi_")
try:
    for name, section in SECTIONS.items():
        if not ONLY or name in ONLY:
            section()
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)

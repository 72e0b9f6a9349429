#!/usr/bin/env python3
# accuracy.py: how far each float sum is from the correctly rounded one, on three float32 arrays:
# uniform in [-1, 1), uniform in [0, 1) (all positive), and an ill-conditioned one (pairs x, -x over
# 41 binades plus 1024 small values: a sum near zero against a huge sum of magnitudes).
# Writes them as .npy, runs clreduce on each (--format json: its err_ulp and err_rel, measured by
# the library against its own exact sum), adds the seeds' sequential loop (numpy.cumsum in
# float32: one addition after another, in index order), and recomputes the correctly rounded sum
# here independently (exponent bins summed in Python integers, rounded half to even), requiring
# clreduce's reference and its `exact` variant to have its bits. Prints a Markdown table.
# Needs numpy. Usage:
#   accuracy.py --clreduce build/clreduce [--device 0] [--size 2^24] [--seed 1] [--keep DIR]
import argparse
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("accuracy.py needs numpy (apt-get install python3-numpy)")

VARIANTS = ["bottomup", "topdown", "multi-element", "fast", "exact"]
LABELS = {"seq": "sequential loop (host, float32)", "omp": "OpenMP peer (`omp`, 2 threads)",
          "bottomup": "`bottomup`", "topdown": "`topdown`", "multi-element": "`multi-element` (ladder kernel 7)",
          "fast": "`fast`", "exact": "`exact`"}


def parse_size(s):
    return 2 ** int(s[2:]) if s.startswith("2^") else int(float(s))


def arrays(n, seed):
    """The three arrays, float32, n elements each (n >= 2050 for the ill-conditioned one)."""
    rng = np.random.default_rng(seed)
    uniform = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    positive = rng.uniform(0.0, 1.0, n).astype(np.float32)
    small = 1024
    half = (n - small) // 2
    a = (rng.uniform(-1.0, 1.0, half) * np.exp2(rng.integers(-20, 21, half))).astype(np.float32)
    c = (rng.uniform(-1.0, 1.0, n - 2 * half) * 2.0 ** -10).astype(np.float32)
    ill = np.concatenate([a, -a, c])[rng.permutation(n)]
    return {"uniform [-1, 1)": uniform, "all positive [0, 1)": positive, "ill-conditioned": ill}


def exact_units(x):
    """The exact sum of finite float32 x, as an integer count of 2^-149."""
    b = x.view(np.uint32)
    e = ((b >> 23) & 0xFF).astype(np.int64)
    if np.any(e == 255):
        raise ValueError("only finite arrays")
    m = (b & 0x7FFFFF).astype(np.int64)
    sig = np.where(e > 0, m | (1 << 23), m)
    sig = np.where(b >> 31 != 0, -sig, sig)
    shift = np.maximum(e - 1, 0)
    order = np.argsort(shift, kind="stable")
    shift, sig = shift[order], sig[order]
    starts = np.flatnonzero(np.r_[True, shift[1:] != shift[:-1]])
    sums = np.add.reduceat(sig, starts)  # |sum| < 2^24 * 2^24 per bin: exact in int64
    return sum(int(s) << int(k) for s, k in zip(sums, shift[starts]))


def round_float32(units):
    """units * 2^-149 rounded to float32, to nearest, ties to even (+0 for 0)."""
    neg, mag = units < 0, abs(units)
    if mag >> 24 == 0:
        v = np.float64(mag) * 2.0 ** -149  # below 2^-125: exact, subnormal or the first binade
    else:
        drop = mag.bit_length() - 24
        q, rem = mag >> drop, mag & ((1 << drop) - 1)
        half = 1 << (drop - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
        v = np.float64(q) * 2.0 ** (drop - 149)
    with np.errstate(over="ignore"):
        f = np.float32(v)
    return -f if neg else f


def ordinal(f):
    b = int(np.float32(f).view(np.uint32))
    return -(b & 0x7FFFFFFF) if b >> 31 else b


def ulps(got, ref):
    return abs(ordinal(got) - ordinal(ref))


def run_clreduce(args, path):
    cmd = [args.clreduce, "--device", args.device, "--input", path, "--variant", ",".join(VARIANTS),
           "--format", "json", "--repeat", "1", "--warmup", "0", "--peers"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("clreduce failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return {r["variant"]: r for r in map(json.loads, p.stdout.splitlines())}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clreduce", required=True)
    ap.add_argument("--device", default="0")
    ap.add_argument("--size", default="2^24")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write the .npy files here (default: a temporary directory)")
    args = ap.parse_args()
    n = parse_size(args.size)
    if n < 4096:
        sys.exit("--size must be at least 4096")
    failures, cols = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or tmp
        os.makedirs(out, exist_ok=True)
        for name, x in arrays(n, args.seed).items():
            path = os.path.join(out, name.split()[0].replace("-", "_") + ".npy")
            np.save(path, x)
            ref = round_float32(exact_units(x))
            rows = run_clreduce(args, path)
            for v, r in rows.items():
                if not r.get("verified"):
                    failures.append("%s on %s: not verified: %s" % (v, name, r.get("error", r.get("reason"))))
            if np.float32(rows["exact"]["expected"]) != ref:
                failures.append("%s: clreduce's exact sum %r, here %r" % (name, rows["exact"]["expected"], ref))
            if ulps(rows["exact"]["result"], ref) != 0:
                failures.append("%s: exact gave %r, the correctly rounded sum is %r" % (name, rows["exact"]["result"], ref))
            seq = np.cumsum(x, dtype=np.float32)[-1]
            abs_sum = float(np.sum(np.abs(x.astype(np.float64))))
            errs = {"seq": (ulps(seq, ref), abs(float(seq) - float(ref)) / abs(float(ref)) if ref else float("inf"))}
            for v, r in rows.items():
                errs[v] = (r["err_ulp"], r["err_rel"])
            cols.append((name, ref, abs_sum, errs))
    print("n = %d float32 elements, seed %d; each cell: ulps from the correctly rounded sum (relative error)\n" % (n, args.seed))
    print("| method | " + " | ".join(c[0] for c in cols) + " |")
    print("|---|" + "---|" * len(cols))
    print("| correctly rounded sum | " + " | ".join("%.9g" % c[1] for c in cols) + " |")
    print("| sum of \\|x\\| | " + " | ".join("%.4g" % c[2] for c in cols) + " |")
    for key in ["seq", "omp"] + VARIANTS:
        cells = []
        for _, _, _, errs in cols:
            u, rel = errs[key]
            rel_s = "inf" if rel == "inf" or rel == float("inf") else "%.2g" % rel
            cells.append("%s (%s)" % ("%.4g" % u if not isinstance(u, str) else u, rel_s))
        print("| %s | %s |" % (LABELS[key], " | ".join(cells)))
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

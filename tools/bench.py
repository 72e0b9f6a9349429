#!/usr/bin/env python3
# bench.py: clreduce's benchmark: sweeps sizes 2^k or given sizes (bounded by device memory),
# ops, types and variants with the peers (OpenMP, sequential loop, CUB) on the same data in the
# same run; writes results.json/csv with device, driver and the commit clreduce was built from;
# `plot` draws GB/s against n. Standard library only, except matplotlib, imported by `plot` alone.
"""clreduce's benchmark: run a sweep, or plot one.

  bench.py run --clreduce BIN [--device D] [--cub-peer BIN] [--variants fast,topdown]
               [--ops sum,min,argmin] [--types int32,float] [--min-log 10] [--max-log 30]
               [--repeat R] [--warmup W] [--seed S] [--acc int32|int64]
               [--segment-length L] [--logs 10,16,20 | --sizes 1000,2^20+7,1e6]
               [--no-peers] [--rounds R]
               [--segment-lengths 1,8,100,powerlaw] [--matrix R,C]
               [--tune KEY=VALUE]... [--tune-set NAME KEY=VALUE...]... [--time-limit S]
               --out DIR
  bench.py plot DIR

Ops: sum, prod, min, max, argmin, argmax (reductions), scan-inclusive and scan-exclusive (prefix
sums), scan-inclusive-segmented and scan-exclusive-segmented (prefix sums restarting every
--segment-length elements, default 1000). Types: int32, uint32, int64, uint64, float, double.
One clreduce process per (size, op, type) runs all the variants, the OpenMP peer (--peers) and,
once per (size, type), the device's copy (--measure-copy) on one generated array. cub_peer, when
given, runs the same op on the same data (same --seed and --size) and the device-to-device copy:
every op and type but uint32 and uint64, which it does not have (those rows say so, and the
sweep goes on). Variants named scan-* run only for the scan ops, and the others only for the
reductions, so reduce and scan variants can share one --variants list. Ops, types and variants
are checked before the sweep starts. A ratio against a noisy timing (clreduce's JSON "noisy") is
not quoted.

A sweep cut short keeps what it measured: --time-limit S starts no process pair after S seconds
of the sweep, and SIGTERM (as `timeout` sends) or Ctrl-C stops the one running; either way the
finished rows are written with their ratios and summary (results.json's meta "stopped" says why
and where), and the exit status is 3. rows.partial.jsonl holds every row as it comes. Exit
status: 0 every row verified, 1 a row unverified or a run failed, 2 a bad request (nothing run),
3 cut short (what finished written).

--rounds R (default 1) runs every (size, op, type) R times as interleaved process pairs (clreduce,
then cub_peer, then clreduce again ...): each round's ratios are its own, and a summary gives each
variant's median ratio over the rounds with its range (results.json's "summary", summary.csv).
Cells below 2^24 move by tens of percent between processes; judge them by the median of at least
three rounds, never by one process.

The reduction engine's ops: dot, mean, var, std, norm2, minmax, logsumexp, count (clreduce's --op
of that name) and expr-sum (--map x --reduce 'a+b' --identity 0, a user expression that spells
sum); segsum (clreduce's --op sum --offsets FILE, one segmented sum per --segment-lengths entry:
a fixed length L, the offsets 0, L, 2L, ..., n (the last segment shorter), or powerlaw, lengths
drawn with P(length >= l) = l^-1.1 from --seed and cut to sum to n; each offsets file is written
once per (n, lengths) under --out and deleted at the end); axis0 and axis1 (clreduce's --op sum
--axis K on an R x C C-order .npy of clreduce's generated data, --matrix, default 16384,16384,
at its one size). Each round of each (n, type) first runs `fast` sum on the same generated data
(the baseline, with the copy ceilings in the first round), then these ops: vs_fast is the
baseline's time / the op's, of_copy its GB/s (bytes read) / the best copy GB/s. cub_peer runs
dot, minmax, segsum (on the same offsets file) and axis1 (segsum with offsets k*C); CUB has no
call for axis0. These ops need numpy (segsum; axis1 with --cub-peer) to write the offsets.

--tune KEY=VALUE (repeatable) passes clreduce's --tune to every clreduce run. --tune-set NAME
KEY=VALUE... (repeatable) times alternatives side by side: every clreduce run (its variants, the
engine's, segment and axis ops) runs once more per set, right after the default run of the same
round and data, with those --tune settings added (without host peers); their rows are the variant's with @NAME appended (segments@NAME), held
against the same peers, copy ceiling and baseline, and summarised on their own. Keys and values
are checked by clreduce before the sweep starts. The setting local-size=N is clreduce's
--local-size N (the work-group size), so sets may compare group sizes too.
"""

import argparse
import ast
import csv
import datetime
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ELEM_BYTES = {"int32": 4, "uint32": 4, "float": 4, "int64": 8, "uint64": 8, "double": 8}
# The sweep's ops: clreduce's reductions as they are, and the prefix sums as clreduce's --op sum,
# named as cub_peer names them: (exclusive, segmented) for each; exclusive adds --exclusive and
# segmented --segment-length L (bench.py's --segment-length), for clreduce and cub_peer alike.
REDUCE_OPS = ["sum", "prod", "min", "max", "argmin", "argmax"]
SCAN_OPS = {"scan-inclusive": (False, False), "scan-exclusive": (True, False),
            "scan-inclusive-segmented": (False, True), "scan-exclusive-segmented": (True, True)}
# What cub_peer can run (tools/cub_peer.cu): its --op for each of the sweep's ops, and the element
# types. Other pairs (uint32, uint64) get a skipped cub row with the reason.
CUB_OPS = {"sum": "sum", "prod": "prod", "min": "min", "max": "max", "argmin": "argmin", "argmax": "argmax",
           "scan-inclusive": "scan-inclusive", "scan-exclusive": "scan-exclusive",
           "scan-inclusive-segmented": "scan-inclusive", "scan-exclusive-segmented": "scan-exclusive"}
CUB_TYPES = ["int32", "int64", "float", "double"]
# The reduction engine's ops (clreduce's row `expr`): clreduce's flags for each. The engine takes
# neither --peers nor --measure-copy: each round's `fast` sum of the same n and type (the
# baseline) gives vs_fast and, in the first round, the copy ceilings.
ENGINE_OPS = {"dot": ["--op", "dot"], "mean": ["--op", "mean"], "var": ["--op", "var"],
              "std": ["--op", "std"], "norm2": ["--op", "norm2"], "minmax": ["--op", "minmax"],
              "logsumexp": ["--op", "logsumexp"], "count": ["--op", "count"],
              "expr-sum": ["--map", "x", "--reduce", "a+b", "--identity", "0"]}
# Segmented sums over an offsets file, one per --segment-lengths entry; sums along an axis of an
# R x C matrix (--matrix). powerlaw lengths: P(length >= l) = l^-POWERLAW_EXPONENT, l = 1, 2, ...
SEGMENT_OPS = ["segsum"]
AXIS_OPS = {"axis0": 0, "axis1": 1}
NEW_OPS = list(ENGINE_OPS) + SEGMENT_OPS + list(AXIS_OPS)
POWERLAW_EXPONENT = 1.1
CUB_OPS.update({"minmax": "minmax", "dot": "dot", "segsum": "segsum", "axis1": "segsum"})
CUB_MISSING = {"axis0": "CUB has no call for a reduction along axis 0 of a row-major matrix"}
CSV_COLUMNS = ["device", "driver", "commit", "round", "op", "type", "acc", "n", "log2n", "variant", "kind",
               "tool", "verified", "skipped", "kernel_ms", "kernel_ms_min", "kernel_ms_max", "noisy",
               "wall_ms", "gbps", "gbps_min", "gbps_max", "launches", "vs_omp", "vs_cub",
               "vs_seq", "vs_omp_best", "vs_cub_best", "of_copy", "policy", "note",
               "shape", "segments", "vs_fast", "tune"]


class Stopped(Exception):
    """The sweep cut short: a signal, or --time-limit passed."""


def stop_on_term(signum, frame):
    raise Stopped("stopped by signal %d" % signum)


def fail(msg, code=2):
    print("bench.py: " + msg, file=sys.stderr)
    sys.exit(code)


def run_json_lines(cmd, timeout):
    """Runs cmd; returns (exit code, list of JSON objects from stdout, last stderr line)."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, [], "timed out after %d s" % timeout
    except OSError as e:
        return -1, [], str(e)
    rows = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    err = [l for l in p.stderr.splitlines() if l.strip()]
    return p.returncode, rows, err[-1] if err else ""


def git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=30)
        if rev.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=30)
        return rev.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def clreduce_build(clreduce):
    """The clreduce binary's version and the commit it was built from (--version), or None for
    what it does not say ("unknown": not built from git)."""
    try:
        p = subprocess.run([clreduce, "--version"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None, None
    version = commit = None
    for line in p.stdout.splitlines():
        if line.startswith("clreduce "):
            version = line[len("clreduce "):].strip()
        elif line.startswith("commit: ") and line[len("commit: "):].strip() != "unknown":
            commit = line[len("commit: "):].strip()
    return version, commit


def host_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def describe_device(clreduce, device):
    code, rows, err = run_json_lines([clreduce, "--device", device, "--list-devices",
                                      "--format", "json"], 120)
    if code != 0 or len(rows) != 1:
        fail("cannot describe device %s with %s: %s" % (device, clreduce, err or "no JSON"))
    return rows[0]


def size_limit(dev, type_name):
    """Largest n of type_name the sweep runs, and why it stops there."""
    b = ELEM_BYTES[type_name]
    limits = [(dev["max_alloc"] // b, "the device's largest allocation"),
              # input, the copy's destination and scratch
              (dev["global_mem"] // (3 * b), "a third of the device's global memory")]
    mem = host_memory()
    if mem:  # the host array, its device copy where the device is the host, and slack
        limits.append((mem // (4 * b), "a quarter of host memory"))
    return min(limits)


def variants_for(op, variants):
    scan = op.startswith("scan")
    return [v for v in variants if v.startswith("scan") == scan]


def segment_args(op, segment_length):
    """--segment-length L for the sweep's segmented scans (the same flag in clreduce and cub_peer)."""
    return ["--segment-length", str(segment_length)] if SCAN_OPS.get(op, (False, False))[1] else []


def clreduce_op_args(op, segment_length=1000):
    """clreduce's flags for one of the sweep's ops."""
    if op in SCAN_OPS:
        return ["--op", "sum"] + (["--exclusive"] if SCAN_OPS[op][0] else []) + segment_args(op, segment_length)
    return ["--op", op]


def cub_op_args(op, segment_length=1000):
    """cub_peer's flags for one of the sweep's ops (cub_unsupported(op, t) empty)."""
    return ["--op", CUB_OPS[op]] + segment_args(op, segment_length)


def cub_unsupported(op, t):
    """Why cub_peer cannot run op on t, or "" when it can."""
    if op in CUB_MISSING:
        return CUB_MISSING[op]
    if op not in CUB_OPS:
        return "cub_peer has no %s (it has %s)" % (op, ", ".join(CUB_OPS))
    if t not in CUB_TYPES:
        return "cub_peer has no %s elements (it has %s)" % (t, ", ".join(CUB_TYPES))
    return ""


def known_variants(clreduce):
    """Every variant name clreduce has (--list-variants --format json)."""
    code, rows, err = run_json_lines([clreduce, "--list-variants", "--format", "json"], 120)
    if code != 0 or not rows:
        fail("cannot list the variants of %s: %s" % (clreduce, err or "no JSON"))
    return [r["name"] for r in rows]


def parse_count(text):
    """A count written N, NeK or 2^K (as clreduce's --size), or None."""
    try:
        if text.startswith("2^"):
            return 1 << int(text[2:])
        if "e" in text:
            base, exp = text.split("e")
            return int(base) * 10 ** int(exp)
        return int(text)
    except ValueError:
        return None


def segment_lengths(text):
    """--segment-lengths: fixed lengths (N, NeK, 2^K; >= 1) and `powerlaw`, in the order given."""
    out = []
    for x in (x.strip() for x in text.split(",")):
        if x == "powerlaw":
            out.append(x)
            continue
        v = parse_count(x)
        if v is None or v < 1:
            fail("--segment-lengths takes lengths >= 1 (N, NeK or 2^K) and powerlaw, not '%s'" % x)
        out.append(v)
    if not out:
        fail("--segment-lengths needs at least one length")
    return out


def matrix_shape(text):
    """--matrix R,C: two counts >= 1."""
    parts = [parse_count(x.strip()) for x in text.split(",")]
    if len(parts) != 2 or any(v is None or v < 1 for v in parts):
        fail("--matrix takes R,C (two counts >= 1, e.g. 16384,16384 or 2^14,2^14), not '%s'" % text)
    return parts


def check_sweep(a, ops, types, variants):
    """Everything the sweep is asked for, checked before it starts (exit 2 with the reason)."""
    for t in types:
        if t not in ELEM_BYTES:
            fail("unknown type '%s' (valid: %s)" % (t, ", ".join(ELEM_BYTES)))
    valid_ops = REDUCE_OPS + list(SCAN_OPS) + NEW_OPS
    for op in ops:
        if op not in valid_ops:
            fail("unknown op '%s' (valid: %s)" % (op, ", ".join(valid_ops)))
    if not ops or not types or not variants:
        fail("--ops, --types and --variants each need at least one name")
    names = known_variants(a.clreduce)
    for v in variants:
        if v not in names:
            fail("unknown variant '%s' (valid: %s)" % (v, ", ".join(names)))
    for op in ops:
        if op not in NEW_OPS and not variants_for(op, variants):
            fail("--ops %s needs a %s variant in --variants" % (op, "scan-*" if op in SCAN_OPS else "reduction"))
    if a.acc and a.acc not in ("int32", "int64"):
        fail("--acc must be int32 or int64, not '%s'" % a.acc)
    if a.repeat < 1 or a.warmup < 0 or a.rounds < 1:
        fail("need --repeat >= 1, --warmup >= 0 and --rounds >= 1")
    if a.segment_length < 1:
        fail("need --segment-length >= 1")
    if "segsum" in ops or ("axis1" in ops and a.cub_peer):
        if importlib.util.find_spec("numpy") is None:  # it writes the offsets files
            fail("--ops %s needs numpy, which this Python (%s) cannot import: install it for this interpreter "
                 "(%s -m pip install numpy) or run bench.py with a Python that has it"
                 % ("segsum" if "segsum" in ops else "axis1 with --cub-peer", sys.executable, sys.executable))
    names = set()
    for ts in a.tune_set:
        name, kvs = ts[0], ts[1:]
        if not name or not all(c.isalnum() or c in "_.-" for c in name) or "=" in name:
            fail("--tune-set takes a NAME (letters, digits, '_', '.', '-') and then KEY=VALUE settings, not '%s'"
                 % name)
        if name in names:
            fail("--tune-set %s is given twice" % name)
        names.add(name)
        if not kvs:
            fail("--tune-set %s needs at least one KEY=VALUE" % name)
    for kv in list(a.tune) + [kv for ts in a.tune_set for kv in ts[1:]]:
        if "=" not in kv or kv.startswith("="):
            fail("--tune takes KEY=VALUE, not '%s'" % kv)
    # clreduce checks every key and value before it touches a device: --tune's settings alone and
    # with each set's, as each run takes them (two sets may each give a work-group size).
    runs = ([list(a.tune)] if a.tune else []) + [list(a.tune) + ts[1:] for ts in a.tune_set]
    for settings in runs:
        code, _, err = run_json_lines([a.clreduce, "--list-variants", "--format", "json"] +
                                      tune_args(settings), 120)
        if code != 0:
            fail("clreduce refuses the tuning: %s" % err)
    if a.cub_peer and not shutil.which(a.cub_peer):
        fail("--cub-peer %s: not found or not executable. The build makes build/tools/cub_peer only where nvcc and an "
             "NVIDIA GPU are found; configure with -DCLREDUCE_CUB_PEER=ON to build it wherever nvcc is"
             % a.cub_peer)


def add_derived(row):
    """gbps spread from the kernel-time spread (bytes per run are fixed)."""
    g, ms = row.get("gbps"), row.get("kernel_ms")
    lo, hi = row.get("kernel_ms_min"), row.get("kernel_ms_max")
    if g and ms and hi:
        row["gbps_min"] = g * ms / hi
    if g and ms and lo:
        row["gbps_max"] = g * ms / lo


def parse_size(text):
    """One --sizes entry: N, 2^K or NeK, optionally + or - a count (2^20+7, 1e6-1), from 1 to 2^40."""
    m = re.fullmatch(r"\s*(?:(\d+)|2\^(\d+)|(\d+)[eE](\d+))\s*(?:([+-])\s*(\d+))?\s*", text)
    if not m:
        fail("--sizes takes N, 2^K or NeK, each optionally +C or -C (e.g. 1000,2^20+7,1e6), not '%s'" % text)
    plain, power, mant, exp, sign, delta = m.groups()
    if power is not None and int(power) > 40 or exp is not None and int(exp) > 12:
        fail("--sizes: '%s' is past 2^40" % text.strip())
    n = int(plain) if plain is not None else 1 << int(power) if power is not None else int(mant) * 10 ** int(exp)
    if sign:
        n = n + int(delta) if sign == "+" else n - int(delta)
    if n < 1 or n > 1 << 40:
        fail("--sizes: '%s' is %d, outside 1 to 2^40" % (text.strip(), n))
    return n


def size_label(n):
    """2^K for a power of two, else the count itself."""
    return "2^%d" % (n.bit_length() - 1) if n & (n - 1) == 0 else str(n)


def cmd_run(a):
    out_dir = a.out
    variants = [v for v in a.variants.split(",") if v]
    ops = [o for o in a.ops.split(",") if o]
    types = [t for t in a.types.split(",") if t]
    if a.min_log < 0 or a.max_log < a.min_log or a.max_log > 40:
        fail("need 0 <= --min-log <= --max-log <= 40")
    logs = list(range(a.min_log, a.max_log + 1))
    if a.logs and a.sizes:
        fail("--logs and --sizes both choose the sizes: give one")
    if a.logs:
        try:
            logs = sorted({int(x) for x in a.logs.split(",") if x})
        except ValueError:
            fail("--logs takes comma-separated powers of two, e.g. 10,16,20, not '%s'" % a.logs)
        if not logs or logs[0] < 0 or logs[-1] > 40:
            fail("--logs takes powers from 0 to 40")
    sizes = [1 << k for k in logs]
    if a.sizes:
        sizes = sorted({parse_size(x) for x in a.sizes.split(",") if x.strip()})
        if not sizes:
            fail("--sizes takes comma-separated sizes, e.g. 1000,2^20+7,1e6")
    check_sweep(a, ops, types, variants)
    lengths = segment_lengths(a.segment_lengths) if "segsum" in ops else []
    shape = matrix_shape(a.matrix)
    dev = describe_device(a.clreduce, a.device)
    version, commit = clreduce_build(a.clreduce)
    meta = {
        "device": dev["name"], "platform": dev["platform"], "driver": dev["driver"],
        "platform_version": dev.get("platform_version"),
        "device_type": dev["type"], "compute_units": dev["compute_units"],
        "global_mem": dev["global_mem"], "max_alloc": dev["max_alloc"],
        # The commit the binary was built from (as its every JSON row says), else this checkout's.
        "clreduce_version": version, "commit": commit or git_commit(),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]),
        "repeat": a.repeat, "warmup": a.warmup, "seed": a.seed, "rounds": a.rounds,
        "tune": list(a.tune), "tune_sets": {ts[0]: ts[1:] for ts in a.tune_set},
    }
    if any(SCAN_OPS.get(op, (False, False))[1] for op in ops):
        meta["segment_length"] = a.segment_length
    if "segsum" in ops:
        meta["segment_lengths"] = lengths
        meta["powerlaw_exponent"] = POWERLAW_EXPONENT
    if any(op in AXIS_OPS for op in ops):
        meta["matrix"] = shape
    os.makedirs(out_dir, exist_ok=True)
    open(os.path.join(out_dir, "rows.partial.jsonl"), "w").close()
    print("device %s (%s), driver %s, commit %s" % (meta["device"], meta["platform"],
                                                     meta["driver"], meta["commit"]), flush=True)
    rows, notes = [], []
    if a.cub_peer:  # said once here, and in a skipped row at every size
        for t in types:
            for op in ops:
                why = cub_unsupported(op, t)
                if why:
                    notes.append("cub_peer skipped for %s %s: %s" % (op, t, why))
                    print(notes[-1], flush=True)
    classic = [op for op in ops if op not in NEW_OPS]
    flat = [op for op in ops if op in ENGINE_OPS or op in SEGMENT_OPS]
    axes = [op for op in ops if op in AXIS_OPS]
    offsets = {}  # (n, length) -> (path, S): each written once, all deleted at the end

    def keep(got):
        rows.extend(got)
        with open(os.path.join(out_dir, "rows.partial.jsonl"), "a") as f:
            # as they come: a sweep cut short keeps what it measured
            f.writelines(json.dumps(r) + "\n" for r in got)

    def offsets_file(n, length):
        if (n, length) not in offsets:
            path = os.path.join(out_dir, "offsets_%d_%s.npy" % (n, length))
            print("writing %s (%s over %d elements)" % (os.path.basename(path), "power-law lengths"
                  if length == "powerlaw" else "length %d" % length, n), flush=True)
            offsets[(n, length)] = (path, write_offsets(path, n, length, a.seed))
        return offsets[(n, length)]

    def new_ops_round(t, n, k, rnd, run_ops, matrix=None):
        """One round at (t, n): the baseline, then each op (segsum once per length)."""
        label = " (round %d of %d)" % (rnd + 1, a.rounds) if a.rounds > 1 else ""
        print("n = %s fast sum %s, the baseline%s" % (size_label(n), t, label), flush=True)
        got = bench_baseline(a, meta, t, n, k, copy=(rnd == 0))
        for op in run_ops:
            if op in SEGMENT_OPS:
                for length in lengths:
                    path, segs = offsets_file(n, length)
                    got += bench_new(a, meta, op, t, n, k, "powerlaw" if length == "powerlaw"
                                     else "len=%d" % length, segs, offsets=path, label=label)
            elif op in AXIS_OPS:
                r, c = shape
                path = offsets_file(n, c)[0] if op == "axis1" and a.cub_peer else None
                got += bench_new(a, meta, op, t, n, k, "%dx%d" % (r, c), c if op == "axis0" else r,
                                 offsets=path, matrix=matrix, label=label)
            else:
                got += bench_new(a, meta, op, t, n, k, label=label)
        for r in got:  # each op's vs_fast is against this baseline
            r["round"] = rnd
            r["baseline_id"] = "%s %d %d %s" % (t, n, rnd, "axes" if matrix else "flat")
        keep(got)

    started = time.monotonic()
    where = [""]  # the cell about to run (or running), for a sweep cut short

    def check_time():
        if a.time_limit and time.monotonic() - started > a.time_limit:
            raise Stopped("--time-limit %g s passed" % a.time_limit)

    stopped = None
    previous_term = signal.signal(signal.SIGTERM, stop_on_term)
    try:
        for t in types:
            limit, why = size_limit(dev, t)
            for n in sizes:
                k = n.bit_length() - 1
                if n > limit:
                    notes.append("%s from %s up skipped: more than %s" % (t, size_label(n), why))
                    break
                for i, op in enumerate(classic):
                    got = []
                    for rnd in range(a.rounds):  # interleaved process pairs
                        where[0] = "%s %s %s, round %d" % (op, t, size_label(n), rnd + 1)
                        check_time()
                        one = bench_one(a, meta, op, t, n, k, variants, copy=(i == 0 and rnd == 0),
                                        label=" (round %d of %d)" % (rnd + 1, a.rounds) if a.rounds > 1 else "")
                        for r in one:
                            r["round"] = rnd
                        got += one
                    keep(got)
                for rnd in range(a.rounds if flat else 0):
                    where[0] = "%s %s %s, round %d" % (",".join(flat), t, size_label(n), rnd + 1)
                    check_time()
                    new_ops_round(t, n, k, rnd, flat)
            if axes:
                n = shape[0] * shape[1]
                if n > limit:
                    notes.append("%s %s skipped: a %dx%d matrix is more than %s" % (
                        ",".join(axes), t, shape[0], shape[1], why))
                    continue
                path = os.path.join(out_dir, "matrix_%dx%d_%s.npy" % (shape[0], shape[1], t))
                print("writing the %dx%d %s matrix" % (shape[0], shape[1], t), flush=True)
                matrix = write_matrix(a, path, t, shape[0], shape[1])
                try:
                    for rnd in range(a.rounds if matrix else 0):
                        where[0] = "%s %s, round %d" % (",".join(axes), t, rnd + 1)
                        check_time()
                        new_ops_round(t, n, n.bit_length() - 1, rnd, axes, matrix)
                    if not matrix:
                        keep([dict(device=meta["device"], driver=meta["driver"], commit=meta["commit"],
                                   op=op, type=t, n=n, log2n=n.bit_length() - 1, shape="%dx%d" % tuple(shape),
                                   tool="clreduce", variant="segments",
                                   kind="error", verified=False, note="the matrix could not be written")
                              for op in axes])
                finally:
                    if os.path.exists(path):
                        os.remove(path)
    except (Stopped, KeyboardInterrupt) as e:
        stopped = "%s at %s" % (str(e) or "interrupted (Ctrl-C)", where[0])
        print("bench.py: sweep cut short: %s; writing the %d rows that finished" % (stopped, len(rows)),
              file=sys.stderr, flush=True)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        for path, _ in offsets.values():
            if os.path.exists(path):
                os.remove(path)
    for note in notes:
        print(note)
    meta["notes"] = notes
    if stopped:
        meta["stopped"] = stopped
    add_ratios(rows)
    summary = summarise(rows) if a.rounds > 1 else []
    write_results(out_dir, meta, rows, summary)
    print_table(rows)
    if summary:
        print_summary(summary)
    bad = [r for r in rows if r["kind"] != "error" and not r.get("skipped") and not r.get("verified")]
    errors = [r for r in rows if r["kind"] == "error"]
    if bad or errors:
        print("bench.py: %d unverified rows, %d failed runs (see results.csv)" % (len(bad), len(errors)),
              file=sys.stderr)
        return 1
    if stopped:
        print("bench.py: cut short (%s): the rows above are what finished" % stopped, file=sys.stderr)
        return 3
    return 0


def bench_one(a, meta, op, t, n, k, variants, copy, label=""):
    """Every row for one (op, type, n): clreduce's variants and peers, then cub_peer's."""
    rows = []
    base = {"device": meta["device"], "driver": meta["driver"], "commit": meta["commit"],
            "op": op, "type": t, "n": n, "log2n": k}
    common = common_args(a, n)
    # --acc applies to int32 sums, products and scans, as in every tool
    acc = (["--acc", a.acc] if a.acc and t == "int32" and (op in ("sum", "prod") or op in SCAN_OPS)
           else [])
    vs = variants_for(op, variants)
    print("n = %s %s %s%s" % (size_label(n), op, t, label), flush=True)
    if vs:
        cmd = ([a.clreduce, "--device", a.device, "--variant", ",".join(vs)] +
               clreduce_op_args(op, a.segment_length) +
               ["--type", t, "--format", "json"] + ([] if a.no_peers else ["--peers"]) + common + acc +
               (["--measure-copy"] if copy else []) + tune_args(a.tune))
        rows += clreduce_rows(a, base, cmd, op)
        alt = ([a.clreduce, "--device", a.device, "--variant", ",".join(vs)] +
               clreduce_op_args(op, a.segment_length) + ["--type", t, "--format", "json"] + common + acc +
               tune_args(a.tune))
        for ts in a.tune_set:  # each alternative right after the default, on the same data
            name, kvs = ts[0], ts[1:]
            print("n = %s %s %s @%s (%s)%s" % (size_label(n), op, t, name, " ".join(kvs), label), flush=True)
            got = clreduce_rows(a, base, alt + tune_args(kvs), op)
            for r in got:
                r["variant"] = r["variant"] + "@" + name
                r["tune"] = " ".join(kvs)
            rows += got
        seq = next((r for r in rows if r.get("seq_ms") and r.get("kernel_ms") and r.get("gbps")
                    and r.get("kind") == "clreduce"), None)
        if seq:  # the sequential loop, with the bytes the variants count, its spread and noise
            rows.append(dict(base, tool="clreduce", variant="seq", kind="peer", acc=seq.get("acc"),
                             verified=True, kernel_ms=seq["seq_ms"], wall_ms=seq["seq_ms"],
                             kernel_ms_min=seq.get("seq_ms_min") or seq["seq_ms"],
                             kernel_ms_max=seq.get("seq_ms_max") or seq["seq_ms"],
                             noisy=bool(seq.get("seq_noisy")),
                             gbps=seq["gbps"] * seq["kernel_ms"] / seq["seq_ms"],
                             policy="host loop, one thread"))
    if a.cub_peer:
        why = cub_unsupported(op, t)
        jobs = ([] if why else [("cub", cub_op_args(op, a.segment_length) + acc)])
        if copy and t in CUB_TYPES:  # the copy ceiling needs only the type
            jobs.append(("cub-copy", ["--op", "copy"]))
        if why:
            rows.append(dict(base, tool="cub_peer", variant="cub", kind="peer", skipped=True,
                             verified=False, reason=why))
        rows += cub_rows(a, base, jobs, t, common)
    for r in rows:
        add_derived(r)
    return rows


def cub_rows(a, base, jobs, t, common):
    """cub_peer's rows for (name, its flags) jobs: `cub` a peer, `cub-copy` the copy ceiling."""
    rows = []
    for name, op_args in jobs:
        cmd = [a.cub_peer] + op_args + ["--type", t] + common
        code, got, err = run_json_lines(cmd, a.timeout)
        if got:
            r = got[0]
            r["variant"] = name
            if "driver" in r:  # CUDA's driver version; "driver" stays the OpenCL device's
                r["cuda_driver"] = r.pop("driver")
            rows.append(dict(base, tool="cub_peer", kind="ceiling" if name == "cub-copy" else "peer",
                             **{key: v for key, v in r.items() if key not in ("op", "type", "n")}))
        else:
            rows.append(dict(base, tool="cub_peer", variant=name, kind="error", verified=False,
                             note="exit %d: %s" % (code, err)))
            print("  cub_peer failed: exit %d: %s" % (code, err), flush=True)
    return rows


def clreduce_rows(a, base, cmd, op):
    """clreduce's rows from one process (`cmd`), named by the sweep's op, or an error row."""
    code, got, err = run_json_lines(cmd, a.timeout)
    rows = []
    for r in got:
        if not r.get("driver"):  # the engine's rows leave it empty: the meta's (OpenCL) driver
            r.pop("driver", None)
        rows.append(dict(dict(base, tool="clreduce", **r), op=op))  # the sweep's op name
    if code not in (0, 1) or not got:
        rows.append(dict(base, tool="clreduce", variant=cmd[cmd.index("--variant") + 1]
                         if "--variant" in cmd else "expr", kind="error",
                         note="exit %d: %s" % (code, err), verified=False))
        print("  clreduce failed: exit %d: %s" % (code, err), flush=True)
    return rows


def tune_args(settings):
    """clreduce's flags for KEY=VALUE settings: --tune KEY=VALUE, but local-size=N is clreduce's
    --local-size N (the work-group size, which is not a tuning key)."""
    out = []
    for kv in settings:
        key, value = kv.split("=", 1)
        out += ["--local-size", value] if key == "local-size" else ["--tune", kv]
    return out


def common_args(a, n):
    return ["--size", str(n), "--seed", str(a.seed), "--warmup", str(a.warmup), "--repeat", str(a.repeat)]


def bench_baseline(a, meta, t, n, k, copy):
    """One round's `fast` sum of (t, n) on the generated data (kind `baseline`, op sum): the time
    the engine's ops are held against (vs_fast); with copy, clreduce's and cub_peer's copy
    ceilings too."""
    base = {"device": meta["device"], "driver": meta["driver"], "commit": meta["commit"],
            "op": "sum", "type": t, "n": n, "log2n": k}
    acc = ["--acc", a.acc] if a.acc and t == "int32" else []
    cmd = ([a.clreduce, "--device", a.device, "--variant", "fast", "--op", "sum", "--type", t,
            "--format", "json"] + common_args(a, n) + acc + (["--measure-copy"] if copy else []) +
           tune_args(a.tune))
    rows = clreduce_rows(a, base, cmd, "sum")
    for r in rows:
        if r.get("kind") == "clreduce":
            r["kind"] = "baseline"
    if a.cub_peer and copy and t in CUB_TYPES:
        rows += cub_rows(a, base, [("cub-copy", ["--op", "copy"])], t, common_args(a, n))
    for r in rows:
        add_derived(r)
    return rows


def bench_new(a, meta, op, t, n, k, shape="", segments=None, offsets=None, matrix=None, label=""):
    """Every row for one of the engine's, segment or axis ops at (t, n): clreduce's, then
    cub_peer's where it has the op."""
    base = {"device": meta["device"], "driver": meta["driver"], "commit": meta["commit"],
            "op": op, "type": t, "n": n, "log2n": k, "shape": shape}
    if segments is not None:
        base["segments"] = segments
    cmd = [a.clreduce, "--device", a.device, "--format", "json"]
    if op in ENGINE_OPS:
        cmd += ENGINE_OPS[op] + ["--type", t] + common_args(a, n)
    elif op in SEGMENT_OPS:
        cmd += ["--op", "sum", "--offsets", offsets, "--type", t] + common_args(a, n)
    else:  # an axis of the matrix file
        cmd += ["--op", "sum", "--input", matrix, "--axis", str(AXIS_OPS[op]), "--warmup", str(a.warmup),
                "--repeat", str(a.repeat)]
    cmd += tune_args(a.tune)
    print("n = %s %s %s%s%s" % (size_label(n), op, t, " " + shape if shape else "", label), flush=True)
    rows = clreduce_rows(a, base, cmd, op)
    for ts in a.tune_set:  # each alternative right after the default, on the same data
        name, kvs = ts[0], ts[1:]
        print("n = %s %s %s%s @%s (%s)%s" % (size_label(n), op, t, " " + shape if shape else "", name, " ".join(kvs), label),
              flush=True)
        got = clreduce_rows(a, base, cmd + tune_args(kvs), op)
        for r in got:
            r["variant"] = r["variant"] + "@" + name
            r["tune"] = " ".join(kvs)
        rows += got
    if a.cub_peer:
        why = cub_unsupported(op, t)
        if why:
            rows.append(dict(base, tool="cub_peer", variant="cub", kind="peer", skipped=True,
                             verified=False, reason=why))
        else:
            cub = ["--op", CUB_OPS[op]] + (["--offsets", offsets] if offsets else [])
            rows += cub_rows(a, base, [("cub", cub)], t, common_args(a, n))
    for r in rows:
        add_derived(r)
    return rows


def powerlaw_lengths(n, seed):
    """Segment lengths L >= 1 with P(L >= l) = l^-POWERLAW_EXPONENT (floor of a Pareto with
    x_min 1), drawn from numpy's default_rng(seed) until they reach n, the last one cut so they sum
    to n."""
    import numpy as np
    rng = np.random.default_rng(seed)
    parts, left = [], n
    while left > 0:
        u = 1.0 - rng.random(max(1024, left // 8))  # (0, 1]
        lengths = np.minimum(np.floor(u ** (-1.0 / POWERLAW_EXPONENT)), n).astype(np.int64)
        ends = np.cumsum(lengths)
        stop = int(np.searchsorted(ends, left))  # the first whose end reaches what is left
        if stop < len(lengths):
            lengths = lengths[:stop + 1]
            lengths[-1] -= int(ends[stop]) - left
            parts.append(lengths)
            break
        parts.append(lengths)
        left -= int(ends[-1])
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def write_offsets(path, n, length, seed):
    """Writes S + 1 int64 offsets of n elements to path (.npy): a fixed length (0, L, 2L, ..., n;
    the last segment shorter) or `powerlaw`; returns S. Big files go through a memmap in chunks."""
    import numpy as np
    if length == "powerlaw":
        lengths = powerlaw_lengths(n, seed)
        off = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=off[1:])
        np.save(path, off)
        return len(lengths)
    segs = -(-n // length)
    m = np.lib.format.open_memmap(path, mode="w+", dtype="<i8", shape=(segs + 1,))
    step = 1 << 24
    for s0 in range(0, segs, step):
        s1 = min(segs, s0 + step)
        m[s0:s1] = np.arange(s0, s1, dtype=np.int64) * length
    m[segs] = n
    m.flush()
    del m
    return segs


def reshape_npy(path, shape):
    """Rewrites a 1-D .npy's header in place to the C-order shape (its data unchanged)."""
    with open(path, "r+b") as f:
        magic = f.read(8)
        if magic[:6] != b"\x93NUMPY":
            fail("%s is not a .npy file" % path, 1)
        size = 2 if magic[6] == 1 else 4
        length = int.from_bytes(f.read(size), "little")
        header = ast.literal_eval(f.read(length).decode("latin1"))
        new = "{'descr': %r, 'fortran_order': False, 'shape': (%s), }" % (
            header["descr"], ", ".join(str(d) for d in shape))
        if len(new) + 1 > length:
            fail("cannot reshape %s: its header has no room" % path, 1)
        f.seek(8 + size)
        f.write((new + " " * (length - len(new) - 1) + "\n").encode("latin1"))


def write_matrix(a, path, t, rows, cols):
    """An R x C .npy of clreduce's generated data (--seed, element i of the flat array as --size
    R*C gives it, so cub_peer's generated array is the same), by clreduce's --save-input. None on
    failure, with the reason printed."""
    cmd = [a.clreduce, "--device", a.device, "--variant", "fast", "--op", "sum", "--type", t,
           "--size", str(rows * cols), "--seed", str(a.seed), "--repeat", "1", "--warmup", "0",
           "--format", "json", "--save-input", path]
    code, _, err = run_json_lines(cmd, a.timeout)
    if code != 0 or not os.path.exists(path):
        print("  writing the matrix failed: exit %d: %s" % (code, err), flush=True)
        return None
    reshape_npy(path, (rows, cols))
    return path


def add_ratios(rows):
    """Each clreduce row: peer time / its time (vs_omp, vs_cub, vs_seq: medians; vs_omp_best,
    vs_cub_best: fastest runs), and its GB/s as a fraction of the best copy ceiling at that
    (type, n); the engine's, segment and axis ops also the round's `fast` sum time / theirs
    (vs_fast)."""
    groups = {}
    for r in rows:  # one round's rows are compared with that round's peers
        groups.setdefault((r["op"], r["type"], r["n"], r.get("shape", ""), r.get("round", 0)), []).append(r)
    baselines = {r.get("baseline_id"): r for r in rows
                 if r.get("kind") == "baseline" and r.get("verified") and r.get("kernel_ms")}
    copies = {}
    for r in rows:
        if r.get("kind") == "ceiling" and r.get("gbps") and r.get("verified"):
            key = (r["type"], r["n"])
            copies[key] = max(copies.get(key, 0), r["gbps"])
    for key, rs in groups.items():
        peers = {r["variant"]: r for r in rs if r.get("kind") == "peer" and r.get("verified")
                 and r.get("kernel_ms")}
        for r in rs:
            if r.get("kind") != "clreduce" or not r.get("kernel_ms") or r.get("skipped"):
                continue
            r.pop("vs_omp", None)  # clreduce's own ratio; recomputed here with every peer's
            noisy = []
            for name, col in (("omp", "vs_omp"), ("cub", "vs_cub"), ("seq", "vs_seq")):
                if name in peers:
                    # A ratio with a noisy timing on either side is not quoted.
                    if r.get("noisy") or peers[name].get("noisy"):
                        noisy.append(col)
                        continue
                    r[col] = peers[name]["kernel_ms"] / r["kernel_ms"]
                    # Fastest against fastest: steadier than medians on a shared machine.
                    if peers[name].get("kernel_ms_min") and r.get("kernel_ms_min"):
                        r[col + "_best"] = peers[name]["kernel_ms_min"] / r["kernel_ms_min"]
            fast = baselines.get(r.get("baseline_id")) if r["op"] in NEW_OPS else None
            if fast:
                if r.get("noisy") or fast.get("noisy"):
                    noisy.append("vs_fast")
                else:
                    r["vs_fast"] = fast["kernel_ms"] / r["kernel_ms"]
            if noisy:
                r["note"] = "noisy timing: %s not quoted" % ", ".join(noisy)
            c = copies.get((key[1], key[2]))
            if c and r.get("gbps"):
                r["of_copy"] = r["gbps"] / c


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


SUMMARY_COLUMNS = ["op", "type", "n", "log2n", "variant", "rounds", "kernel_ms_median",
                   "vs_cub_median", "vs_cub_min", "vs_cub_max", "vs_cub_rounds",
                   "vs_omp_median", "vs_omp_min", "vs_omp_max", "vs_omp_rounds",
                   "of_copy_median", "unverified", "shape",
                   "vs_fast_median", "vs_fast_min", "vs_fast_max", "vs_fast_rounds"]


def summarise(rows):
    """Per (op, type, n, variant) of clreduce: the median over rounds of its kernel time and of each
    ratio, with the ratio's range and the number of rounds that quoted it (noisy ones do not)."""
    cells = {}
    for r in rows:
        if r.get("kind") == "clreduce" and r.get("kernel_ms") and not r.get("skipped"):
            cells.setdefault((r["op"], r["type"], r["n"], r.get("shape", ""), r["variant"]), []).append(r)
    out = []
    for (op, t, n, shape, v), rs in cells.items():
        s = {"op": op, "type": t, "n": n, "log2n": rs[0]["log2n"], "variant": v, "rounds": len(rs),
             "kernel_ms_median": median([r["kernel_ms"] for r in rs]),
             "unverified": sum(1 for r in rs if not r.get("verified")), "shape": shape}
        for col in ("vs_cub", "vs_omp", "vs_fast", "of_copy"):
            xs = [r[col] for r in rs if isinstance(r.get(col), (int, float))]
            if xs:
                s[col + "_median"] = median(xs)
                if col != "of_copy":
                    s[col + "_min"], s[col + "_max"], s[col + "_rounds"] = min(xs), max(xs), len(xs)
        out.append(s)
    return out


def print_summary(summary):
    print("\nmedian over rounds (range; rounds quoted): ratio = peer time / clreduce time")
    print("%-24s %-7s %-10s %-14s %11s %-24s %-24s %-24s %7s" % ("op", "type", "n", "variant", "ms", "vs cub",
                                                               "vs omp", "vs fast", "of copy"))
    for s in summary:
        def ratio(col):
            if col + "_median" not in s:
                return "-"
            return "%.2f (%.2f-%.2f; %d)" % (s[col + "_median"], s[col + "_min"], s[col + "_max"],
                                             s[col + "_rounds"])
        print("%-24s %-7s %-10s %-14s %11.4f %-24s %-24s %-24s %7s%s" % (
            s["op"] + (" " + s["shape"] if s.get("shape") else ""), s["type"], size_label(s["n"]), s["variant"],
            s["kernel_ms_median"], ratio("vs_cub"), ratio("vs_omp"), ratio("vs_fast"),
            fmt(s.get("of_copy_median"), "%.2f"),
            "  UNVERIFIED in %d" % s["unverified"] if s["unverified"] else ""))


def write_results(out_dir, meta, rows, summary=()):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows, "summary": list(summary)}, f, indent=1)
    if summary:
        with open(os.path.join(out_dir, "summary.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS, extrasaction="ignore")
            w.writeheader()
            for s in summary:
                w.writerow({c: ("%.6g" % s[c] if isinstance(s.get(c), float) else s.get(c, ""))
                            for c in SUMMARY_COLUMNS})
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            out = {c: r.get(c, "") for c in CSV_COLUMNS}
            if r.get("skipped"):
                out["note"] = r.get("reason", "")
            elif r.get("error"):
                out["note"] = r["error"]
            for c in ("kernel_ms", "kernel_ms_min", "kernel_ms_max", "wall_ms", "gbps", "gbps_min",
                      "gbps_max", "vs_omp", "vs_cub", "vs_seq", "vs_omp_best", "vs_cub_best", "of_copy",
                      "vs_fast"):
                if isinstance(out[c], float):
                    out[c] = "%.6g" % out[c]
            w.writerow(out)
    print("wrote %s and %s" % (os.path.join(out_dir, "results.json"),
                               os.path.join(out_dir, "results.csv")))


def fmt(x, spec):
    return spec % x if isinstance(x, (int, float)) else "-"


def print_table(rows):
    """Per (op, type): one line per (n, variant); clreduce/peer ratios in the last columns."""
    keys = []
    for r in rows:
        if (r["op"], r["type"], r.get("shape", "")) not in keys:
            keys.append((r["op"], r["type"], r.get("shape", "")))
    for op, t, shape in keys:
        print("\n%s %s%s" % (op, t, " " + shape if shape else ""))
        print("%-10s %-20s %-8s %11s %10s %10s %8s %8s %8s %8s %8s" % (
            "n", "variant", "verified", "ms", "GB/s", "GB/s max", "of copy", "vs omp", "vs cub", "vs seq",
            "vs fast"))
        for r in rows:
            if (r["op"], r["type"], r.get("shape", "")) != (op, t, shape):
                continue
            if r.get("skipped") or r["kind"] == "error":
                print("%-10s %-20s %s" % (size_label(r["n"]), r["variant"],
                                           "skipped: " + r.get("reason", "") if r.get("skipped")
                                           else "FAILED: " + r.get("note", "")))
                continue
            noisy = r.get("note", "").startswith("noisy")
            ratio = lambda col: "noisy" if noisy and col in r["note"] else fmt(r.get(col), "%.2f")
            print("%-10s %-20s %-8s %11s %10s %10s %8s %8s %8s %8s %8s" % (
                size_label(r["n"]), r["variant"] + (" (baseline)" if r.get("kind") == "baseline" else ""),
                "yes" if r.get("verified") else "NO",
                fmt(r.get("kernel_ms"), "%.4f") + ("~" if r.get("noisy") else ""), fmt(r.get("gbps"), "%.2f"),
                fmt(r.get("gbps_max"), "%.2f"), fmt(r.get("of_copy"), "%.2f"),
                ratio("vs_omp"), ratio("vs_cub"), ratio("vs_seq"), ratio("vs_fast")))


def matplotlib_missing(error, python=None):
    """What `plot` says when matplotlib does not import: the interpreter running bench.py (which
    may not be the one tools/setup.sh installed python3-matplotlib for) and how to install it there."""
    python = python or sys.executable or "python3"
    return ("plotting needs matplotlib, which this Python (%s) cannot import (%s): install it for this "
            "interpreter (%s -m pip install matplotlib), or run bench.py with a Python that has it "
            "(tools/setup.sh installs python3-matplotlib for the system's /usr/bin/python3)" % (python, error, python))


def cmd_plot(a):
    path = os.path.join(a.dir, "results.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail("cannot read %s: %s" % (path, e))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        fail(matplotlib_missing(e), 3)
    meta, rows = data["meta"], data["rows"]
    # The baselines (`fast` sum beside the engine's ops) are left out: a sum sweep plots its own.
    ok = [r for r in rows if r.get("kind") not in ("error", "baseline") and not r.get("skipped")
          and r.get("verified") and r.get("gbps")]
    written = []
    for op, t, shape in sorted({(r["op"], r["type"], r.get("shape", "")) for r in ok}):
        fig, ax = plt.subplots(figsize=(8, 5))
        sel = [r for r in ok if r["op"] == op and r["type"] == t and r.get("shape", "") == shape]
        names = []
        for r in sel:
            if r["variant"] not in names:
                names.append(r["variant"])
        for name in names:
            pts = sorted((r["n"], r["gbps"], r.get("gbps_min", r["gbps"]), r.get("gbps_max", r["gbps"]),
                          r["kind"]) for r in sel if r["variant"] == name)
            kind = pts[0][4]
            style = {"clreduce": dict(linestyle="-", marker="o"),
                     "peer": dict(linestyle="--", marker="s"),
                     "ceiling": dict(linestyle=":", color="black", marker="")}[kind]
            xs = [p[0] for p in pts]
            line, = ax.plot(xs, [p[1] for p in pts], label=name + ("" if kind == "clreduce" else
                                                                   " (%s)" % kind), **style)
            if kind != "ceiling":
                ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], alpha=0.15,
                                color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("n (elements)")
        ax.set_ylabel("GB/s (input bytes; copy: read + written)")
        ax.set_title("%s %s%s on %s\n%s, commit %s" % (op, t, " " + shape if shape else "", meta["device"],
                                                       meta["driver"], meta["commit"][:12]), fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        out = os.path.join(a.dir, "gbps_%s_%s%s.png" % (op, t, "_" + shape.replace("=", "") if shape else ""))
        fig.tight_layout()
        fig.savefig(out, dpi=110)
        plt.close(fig)
        written.append(out)
    for w in written:
        print("wrote " + w)
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a sweep and write results.json / results.csv")
    r.add_argument("--clreduce", required=True, help="the clreduce binary")
    r.add_argument("--device", default="0", help="clreduce's --device (index or name substring)")
    r.add_argument("--cub-peer", help="the cub_peer binary (NVIDIA peers and copy ceiling; built where nvcc "
                                      "and an NVIDIA GPU are found, or with -DCLREDUCE_CUB_PEER=ON)")
    r.add_argument("--logs", help="the sizes' powers of two, comma-separated (instead of --min-log..--max-log)")
    r.add_argument("--sizes", help="exact sizes, comma-separated: N, 2^K or NeK, each optionally +C or -C "
                                   "(1000,2^20+7,1e6; instead of --logs or --min-log..--max-log)")
    r.add_argument("--no-peers", action="store_true", help="leave out clreduce's host peers (OpenMP)")
    r.add_argument("--variants", default="fast,topdown", help="comma-separated variant names")
    r.add_argument("--ops", default="sum", help="comma-separated ops: %s" % ", ".join(
        REDUCE_OPS + list(SCAN_OPS) + NEW_OPS))
    r.add_argument("--types", default="int32", help="comma-separated types: %s" % ", ".join(ELEM_BYTES))
    r.add_argument("--min-log", type=int, default=10, help="smallest size, log2")
    r.add_argument("--max-log", type=int, default=30, help="largest size, log2 (memory permitting)")
    r.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (median)")
    r.add_argument("--warmup", type=int, default=1, help="untimed runs first")
    r.add_argument("--seed", type=int, default=1, help="data seed, shared by every tool")
    r.add_argument("--acc", help="accumulator of int32 sums and scans (int32 or int64), for all tools")
    r.add_argument("--segment-length", type=int, default=1000,
                   help="the *-segmented scans: a segment starts every L elements (clreduce's and "
                        "cub_peer's --segment-length; default 1000)")
    r.add_argument("--segment-lengths", default="1,8,100,1000,10000,100000,1000000,10000000,powerlaw",
                   help="segsum: fixed segment lengths (N, NeK or 2^K) and powerlaw, comma-separated "
                        "(default: 1,8,100,...,10^7,powerlaw)")
    r.add_argument("--matrix", default="16384,16384",
                   help="axis0, axis1: the matrix's R,C (default 16384,16384)")
    r.add_argument("--tune", action="append", default=[], metavar="KEY=VALUE",
                   help="clreduce's --tune KEY=VALUE for every clreduce run (repeatable)")
    r.add_argument("--tune-set", action="append", nargs="+", default=[], metavar="NAME KEY=VALUE",
                   help="every clreduce run (variants, the engine's, segment and axis ops) once more "
                        "with these --tune settings, as variant@NAME beside the default (repeatable)")
    r.add_argument("--rounds", type=int, default=1,
                   help="interleaved process pairs per cell; above 1, a summary of each ratio's median and range")
    r.add_argument("--timeout", type=int, default=600, help="seconds allowed per process")
    r.add_argument("--time-limit", type=float, default=0,
                   help="seconds for the whole sweep: no process pair starts after them; what "
                        "finished is written and summarised, exit 3 (default 0: none)")
    r.add_argument("--out", required=True, help="directory for results.json and results.csv")
    q = sub.add_parser("plot", help="draw GB/s against n from a results directory")
    q.add_argument("dir", help="a directory written by bench.py run")
    a = p.parse_args(argv)
    return cmd_run(a) if a.command == "run" else cmd_plot(a)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

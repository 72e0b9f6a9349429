#!/usr/bin/env python3
# test_bench_ops.py: smoke test of tools/bench.py's reduction-engine, segment and axis ops on a
# tiny sweep (CUB played by fake_cub_peer.py): every op's row verified, with its ratio to the
# round's `fast` sum (vs_fast) and to the copy ceiling; segsum once per segment length, on offsets
# files that are gone afterwards; axis0 and axis1 on a generated matrix; the offsets and the
# matrix as they are written; vs_fast dropped for a noisy baseline; bad lengths and matrices refused
# before the sweep. Needs numpy (the offsets files).
# Usage: test_bench_ops.py CLREDUCE_BIN BENCH_PY
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile

import numpy as np

clreduce, bench_py = sys.argv[1], sys.argv[2]
fake_cub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cub_peer.py")
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def bench(*args):
    p = subprocess.run([sys.executable, bench_py] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


spec = importlib.util.spec_from_file_location("bench", bench_py)
bench_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_mod)

# The offsets and the matrix, as written.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "o.npy")
    check(bench_mod.write_offsets(path, 10, 4, 1) == 3 and np.load(path).tolist() == [0, 4, 8, 10],
          "fixed length 4 over 10 elements: offsets 0, 4, 8, 10 (the last segment shorter)")
    check(bench_mod.write_offsets(path, 10, 100, 1) == 1 and np.load(path).tolist() == [0, 10],
          "a length past n: one segment")
    check(bench_mod.write_offsets(path, 0, 8, 1) == 0 and np.load(path).tolist() == [0], "n = 0: no segment")
    segs = bench_mod.write_offsets(path, 100000, "powerlaw", 7)
    off = np.load(path)
    lengths = np.diff(off)
    check(off.dtype == np.int64 and off[0] == 0 and off[-1] == 100000 and len(off) == segs + 1
          and lengths.min() >= 1, "powerlaw: int64 offsets from 0 to n, every length >= 1")
    check(lengths.max() > 1000 and np.mean(lengths == 1) > 0.4,
          "powerlaw: mostly short segments and a long tail (%d segments, longest %d, %.2f of length 1)"
          % (segs, lengths.max(), np.mean(lengths == 1)))
    check(np.array_equal(bench_mod.powerlaw_lengths(100000, 7), lengths)
          and not np.array_equal(bench_mod.powerlaw_lengths(100000, 8), lengths), "powerlaw: seeded")
    np.save(path, np.arange(12, dtype=np.float32))
    bench_mod.reshape_npy(path, (3, 4))
    check(np.array_equal(np.load(path), np.arange(12, dtype=np.float32).reshape(3, 4)),
          "reshape_npy gives the C-order matrix of the same data")

with tempfile.TemporaryDirectory() as out:
    ops = "dot,mean,var,std,norm2,minmax,logsumexp,expr-sum,segsum,axis0,axis1"
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--cub-peer", fake_cub,
                      "--ops", ops, "--types", "float", "--logs", "12", "--segment-lengths", "1,8,powerlaw",
                      "--matrix", "64,64", "--repeat", "2", "--warmup", "0", "--out", out)
    print(log)
    check(code == 0, "bench.py run with the engine's ops exits 0 (got %d)" % code)
    check(sorted(os.listdir(out)) == ["results.csv", "results.json", "rows.partial.jsonl"],
          "the offsets files and the matrix are deleted (left: %s)" % sorted(os.listdir(out)))
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    check(list(rows[0].keys()) == bench_mod.CSV_COLUMNS, "results.csv has the documented columns")
    base = [r for r in rows if r["kind"] == "baseline"]
    check(len(base) == 2 and all(r["op"] == "sum" and r["variant"] == "fast" and r["verified"] == "True"
                                 for r in base), "a verified fast sum baseline per (n, type) and round")
    check({r["variant"] for r in rows if r["kind"] == "ceiling"} == {"copy", "cub-copy"}, "the copy ceilings")
    want = [(op, "") for op in ops.split(",")[:8]] + [("segsum", s) for s in ("len=1", "len=8", "powerlaw")] + \
        [("axis0", "64x64"), ("axis1", "64x64")]
    for op, shape in want:
        mine = [r for r in rows if (r["op"], r["shape"], r["tool"]) == (op, shape, "clreduce")]
        check(len(mine) == 1 and mine[0]["verified"] == "True" and mine[0]["n"] == "4096",
              "%s %s: one verified clreduce row (%r)" % (op, shape, [(r["variant"], r["verified"]) for r in mine]))
        if not mine:
            continue
        r = mine[0]
        dropped = r["note"][len("noisy timing: "):].split(" not quoted")[0].split(", ") \
            if r["note"].startswith("noisy timing: ") else []
        for col in ("vs_fast", "vs_cub") if op in ("dot", "minmax", "segsum", "axis1") else ("vs_fast",):
            check(bool(r[col]) != (col in dropped), "%s %s: %s quoted unless noisy (%r)" % (op, shape, col, r))
        check(float(r["of_copy"]) > 0, "%s %s: of_copy" % (op, shape))
        cub = [c for c in rows if (c["op"], c["shape"], c["tool"]) == (op, shape, "cub_peer")]
        if op in ("dot", "minmax", "segsum", "axis1"):
            check(len(cub) == 1 and cub[0]["verified"] == "True", "%s %s: cub_peer runs it" % (op, shape))
        else:
            check(len(cub) == 1 and cub[0]["skipped"] == "True" and cub[0]["note"],
                  "%s %s: cub_peer's row says why it is absent (%r)" % (op, shape, cub))
    segs = {r["shape"]: r["segments"] for r in rows if r["op"] == "segsum" and r["tool"] == "clreduce"}
    check(segs.get("len=1") == "4096" and segs.get("len=8") == "512" and 1 < int(segs.get("powerlaw", 0)) < 4096,
          "segsum rows count their segments (%r)" % segs)
    check("segsum float len=8" in log and "vs fast" in log and "axis1 float 64x64" in log,
          "the table names each segment length and the matrix")

# --tune goes to every clreduce run; each --tune-set adds a variant@NAME row of the segment and axis
# ops, run with its settings beside the default one.
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--ops", "segsum,axis0", "--types",
                      "int32", "--logs", "12", "--segment-lengths", "1000", "--matrix", "64,64", "--repeat", "1",
                      "--warmup", "0", "--tune", "segments-shape=gpu", "--tune-set", "p100", "segments-piece=100",
                      "--tune-set", "c2", "axis-cols=2", "axis-unroll=4", "--out", out)
    print(log)
    check(code == 0, "bench.py run with --tune and --tune-set exits 0 (got %d)" % code)
    with open(os.path.join(out, "results.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["tool"] == "clreduce" and r["kind"] == "clreduce"]
    got = {(r["op"], r["variant"]): r for r in rows}
    check(sorted(got) == [("axis0", "segments"), ("axis0", "segments@c2"), ("axis0", "segments@p100"),
                          ("segsum", "segments"), ("segsum", "segments@c2"), ("segsum", "segments@p100")]
          and all(r["verified"] == "True" for r in rows), "a verified row per op and tune set (%r)" % sorted(got))
    check(all("GPU shape" in r["policy"] for r in rows), "--tune reaches every run (%r)" %
          [r["policy"] for r in rows])
    seg = got.get(("segsum", "segments@p100"), {})
    check("pieces of 100" in seg.get("policy", "") and seg.get("tune") == "segments-piece=100"
          and "pieces of 100" not in got.get(("segsum", "segments"), {}).get("policy", "x"),
          "the set's settings reach its own run alone (%r)" % seg)
    col = got.get(("axis0", "segments@c2"), {})
    check("2 results a work-item, " in col.get("policy", "") and "4 rows in flight" in col.get("policy", ""),
          "axis-cols and axis-unroll reach the axis run (%r)" % col)

# A --tune-set reaches the variants' runs too (scans, fast): a row of its own per set, with its settings.
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "scan-fast", "--ops",
                      "scan-inclusive", "--types", "int32", "--logs", "12", "--repeat", "1", "--warmup", "0",
                      "--no-peers", "--tune-set", "h", "scan-fast-path=hierarchical", "--tune-set", "w32",
                      "local-size=32", "--tune-set", "w64r2", "local-size=64", "lookback-rows=2", "--out", out)
    check(code == 0, "bench.py run with --tune-set on a scan exits 0 (got %d)" % code)
    with open(os.path.join(out, "results.csv")) as f:
        rows = [r for r in csv.DictReader(f) if r["tool"] == "clreduce" and r["kind"] == "clreduce"]
    got = {r["variant"]: r for r in rows}
    check(sorted(got) == ["scan-fast", "scan-fast@h", "scan-fast@w32", "scan-fast@w64r2"] and all(r["verified"] == "True" for r in rows),
          "a verified scan row per tune set (%r)" % sorted(got))
    check("hierarchical" in got.get("scan-fast@h", {}).get("policy", "")
          and "hierarchical" not in got.get("scan-fast", {}).get("policy", "hierarchical")
          and got.get("scan-fast@h", {}).get("tune") == "scan-fast-path=hierarchical",
          "the set's path reaches its own scan run alone (%r)" % [r.get("policy") for r in rows])
    # local-size=N is clreduce's --local-size N, not a --tune key.
    check("wg=32 " in got.get("scan-fast@w32", {}).get("policy", "")
          and "wg=32 " not in got.get("scan-fast", {}).get("policy", "wg=32 "),
          "a set's local-size reaches its own run as the work-group size (%r)" % [r.get("policy") for r in rows])
    # Two sets that each give a group size: each is checked and run with its own alone.
    check("wg=64 " in got.get("scan-fast@w64r2", {}).get("policy", ""),
          "the second set's local-size reaches its own run (%r)" % [r.get("policy") for r in rows])

# vs_fast: the baseline's time / the op's, from the same round; a noisy baseline is not quoted.
rows = [dict(op="sum", type="float", n=4096, log2n=12, variant="fast", kind="baseline", verified=True, kernel_ms=1.0,
             baseline_id="a"),
        dict(op="mean", type="float", n=4096, log2n=12, variant="expr", kind="clreduce", verified=True, kernel_ms=2.0,
             baseline_id="a"),
        dict(op="sum", type="float", n=4096, log2n=12, variant="fast", kind="baseline", verified=True, kernel_ms=3.0,
             noisy=True, round=1, baseline_id="b"),
        dict(op="mean", type="float", n=4096, log2n=12, variant="expr", kind="clreduce", verified=True, kernel_ms=2.0,
             round=1, baseline_id="b")]
bench_mod.add_ratios(rows)
check(rows[1].get("vs_fast") == 0.5, "vs_fast is the baseline's time / the op's (%r)" % rows[1])
check("vs_fast" not in rows[3] and "vs_fast" in rows[3].get("note", ""), "a noisy baseline's vs_fast is dropped")
summary = bench_mod.summarise(rows)
check(len(summary) == 1 and summary[0]["vs_fast_median"] == 0.5 and summary[0]["vs_fast_rounds"] == 1,
      "the summary has vs_fast's median and the rounds that quoted it (%r)" % summary)

# Bad lengths and matrices are refused before the sweep.
for args, says in ((["--ops", "segsum", "--segment-lengths", "0,8"], "--segment-lengths takes lengths >= 1"),
                   (["--ops", "segsum", "--segment-lengths", "zipf"], "not 'zipf'"),
                   (["--ops", "axis0", "--matrix", "64"], "--matrix takes R,C"),
                   (["--ops", "segsum", "--tune", "segments-vec=3"], "clreduce refuses the tuning"),
                   (["--ops", "segsum", "--tune-set", "v3", "segments-vec=3"], "must be one of"),
                   (["--ops", "segsum", "--tune-set", "v3"], "--tune-set v3 needs at least one KEY=VALUE"),
                   (["--ops", "segsum", "--tune-set", "w0", "local-size=0"], "--local-size must be a whole number"),
                   (["--ops", "segsum", "--tune-set", "a=b", "x=1"], "takes a NAME")):
    with tempfile.TemporaryDirectory() as out:
        code, log = bench("run", "--clreduce", clreduce, "--device", device, "--logs", "10", "--repeat", "1",
                          "--warmup", "0", "--out", os.path.join(out, "o"), *args)
        check(code == 2 and says in log and not os.path.exists(os.path.join(out, "o")),
              "%s: exit 2 before the sweep, saying '%s' (got %d: %r)" % (args, says, code, log[-300:]))

print("bench ops smoke test: %s" % ("FAILED" if failures else "passed"))
sys.exit(1 if failures else 0)

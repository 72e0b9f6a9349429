#!/usr/bin/env python3
# test_bench.py: smoke test of tools/bench.py on a tiny sweep: every variant, peer (CUB played by
# fake_cub_peer.py) and copy ceiling verified, with ratios, for reductions and scans; the build's
# version and commit, and the sequential loop's spread; bad ops,
# types and variants refused before the sweep; noisy timings not quoted; a failing run reported,
# not fatal; PNG plots where matplotlib is installed, and without it a message naming the
# interpreter; a missing --cub-peer refused with the CMake option that builds it; a sweep cut
# short by --time-limit or SIGTERM writing what finished; scan_side_by_side's --help and errors.
# Usage: test_bench.py CLREDUCE_BIN BENCH_PY [SCAN_SIDE_BY_SIDE_BIN]
import csv
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

clreduce, bench_py = sys.argv[1], sys.argv[2]
fake_cub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_cub_peer.py")
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def bench(*args, env=None):
    p = subprocess.run([sys.executable, bench_py] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout + p.stderr


spec = importlib.util.spec_from_file_location("bench", bench_py)
bench_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench_mod)
check(bench_mod.variants_for("sum", ["fast", "scan-fast", "topdown"]) == ["fast", "topdown"],
      "reduce ops get the reduce variants")
check(bench_mod.variants_for("scan-inclusive", ["fast", "scan-fast"]) == ["scan-fast"],
      "scan ops get the scan variants")

with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "fast,topdown",
                      "--cub-peer", fake_cub, "--ops", "sum,argmin", "--types", "int32", "--min-log", "10",
                      "--max-log", "11", "--repeat", "2", "--warmup", "0", "--out", out)
    print(log)
    check(code == 0, "bench.py run exits 0 (got %d)" % code)
    with open(os.path.join(out, "results.json")) as f:
        data = json.load(f)
    for key in ("device", "driver", "commit", "command", "clreduce_version", "platform_version"):
        check(data["meta"].get(key), "results.json meta has " + key)
    # The commit is the binary's own (each clreduce row says it; "unknown" outside git).
    for r in data["rows"]:
        if r.get("tool") == "clreduce" and r["variant"] != "seq":
            check(r.get("commit") in (data["meta"]["commit"], "unknown") and r.get("clreduce_version"),
                  "clreduce row %s has the meta's commit and a version" % r["variant"])
    seqs = [r for r in data["rows"] if r["variant"] == "seq"]
    check(seqs and all(isinstance(r.get("noisy"), bool) and
                       r["kernel_ms_min"] <= r["kernel_ms"] <= r["kernel_ms_max"] for r in seqs),
          "the seq rows carry the sequential loop's spread and whether it is noisy")
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    check(list(rows[0].keys()) == bench_mod.CSV_COLUMNS, "results.csv has the documented columns")
    for n in ("1024", "2048"):
        for op in ("sum", "argmin"):
            for t in ("int32",):
                got = {r["variant"]: r for r in rows if (r["n"], r["op"], r["type"]) == (n, op, t)}
                want = {"fast", "topdown", "omp", "seq", "cub"} | ({"copy", "cub-copy"} if op == "sum" else set())
                check(set(got) == want, "%s %s n=%s: rows %s, want %s" % (op, t, n, sorted(got), sorted(want)))
                for name, r in got.items():
                    check(r["verified"] == "True", "%s %s n=%s %s verified" % (op, t, n, name))
                    check(float(r["kernel_ms"]) > 0 and float(r["gbps"]) > 0, "%s has a time" % name)
                for name in ("fast", "topdown"):
                    if name in got:
                        r = got[name]
                        # On a busy machine a timing may be noisy: then its ratios are not quoted.
                        dropped = r["note"][len("noisy timing: "):].split(" not quoted")[0].split(", ") \
                            if r["note"].startswith("noisy timing: ") else []
                        # Each dropped ratio (vs_omp, vs_cub, vs_seq) names a noisy timing: the
                        # row's own or that peer's (the sequential loop is timed and judged too).
                        check(all(r["noisy"] == "True" or got.get(col[len("vs_"):], {}).get("noisy") == "True"
                                  for col in dropped),
                              "%s %s n=%s %s: ratios dropped only for a noisy timing" % (op, t, n, name))
                        for col in ("vs_omp", "vs_seq", "vs_cub"):
                            check(bool(r[col]) != (col in dropped), "%s %s n=%s %s: %s quoted unless noisy (%r)"
                                  % (op, t, n, name, col, r["note"]))
                        if "vs_cub" not in dropped:
                            check(r["vs_cub_best"], "%s %s n=%s %s has vs_cub_best" % (op, t, n, name))
                            check(abs(float(r["vs_cub"]) * float(r["kernel_ms"]) - float(got["cub"]["kernel_ms"]))
                                  <= 1e-3 * float(got["cub"]["kernel_ms"]), "vs_cub is cub's time / this time")
                        if op == "sum":
                            best = max(float(got["copy"]["gbps"]), float(got["cub-copy"]["gbps"]))
                            check(abs(float(r["of_copy"]) * best - float(r["gbps"])) <= 1e-3 * float(r["gbps"]),
                                  "of_copy is GB/s over the best copy")
                        check(float(r["kernel_ms_min"]) <= float(r["kernel_ms"]) <= float(r["kernel_ms_max"]),
                              "%s: min <= median <= max" % name)
    check("vs omp" in log and "vs cub" in log and "\nsum int32" in log, "the table is printed with ratio columns")
    check(all(r["driver"] == data["meta"]["driver"] for r in rows), "driver is the OpenCL device's in every row")

    if importlib.util.find_spec("matplotlib"):
        code, log = bench("plot", out)
        print(log)
        check(code == 0, "bench.py plot exits 0")
        for name in ("gbps_sum_int32.png", "gbps_argmin_int32.png"):
            path = os.path.join(out, name)
            ok = os.path.exists(path)
            if ok:
                with open(path, "rb") as f:
                    ok = f.read(8) == b"\x89PNG\r\n\x1a\n"
            check(ok, name + " is a PNG")
    else:
        print("matplotlib not installed: plot not tested")

# Scans: scan-inclusive and scan-exclusive run clreduce's sum scans beside the OpenMP scan peer
# (inclusive only), the sequential loop and CUB; one --variants list serves reductions and scans.
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "fast,scan-fast,scan-blelloch",
                      "--cub-peer", fake_cub, "--ops", "scan-inclusive,scan-exclusive,sum", "--types", "int32,float",
                      "--min-log", "12", "--max-log", "12", "--repeat", "2", "--warmup", "0", "--out", out)
    print(log)
    check(code == 0, "bench.py run with scan ops exits 0 (got %d)" % code)
    check("unknown op" not in log, "scan ops are known")
    with open(os.path.join(out, "results.csv")) as f:
        rows = list(csv.DictReader(f))
    for t in ("int32", "float"):
        inc = {r["variant"]: r for r in rows if (r["op"], r["type"]) == ("scan-inclusive", t)}
        check(set(inc) == {"scan-fast", "scan-blelloch", "omp", "seq", "cub", "copy", "cub-copy"},
              "scan-inclusive %s rows: %s" % (t, sorted(inc)))
        for name in ("scan-fast", "scan-blelloch", "omp", "seq", "cub"):
            check(name in inc and inc[name]["verified"] == "True", "scan-inclusive %s %s verified" % (t, name))
        for name in ("scan-fast", "scan-blelloch"):
            if name in inc:
                for col in ("vs_omp", "vs_cub", "vs_seq"):  # quoted, or dropped for a noisy timing
                    check(inc[name][col] or col in inc[name]["note"], "%s %s has %s (%r)" % (name, t, col, inc[name]["note"]))
        exc = {r["variant"]: r for r in rows if (r["op"], r["type"]) == ("scan-exclusive", t)}
        check(exc.get("omp", {}).get("skipped") == "True", "scan-exclusive %s: the omp row says why it is absent" % t)
        check(all(exc.get(v, {}).get("verified") == "True" for v in ("scan-fast", "scan-blelloch")),
              "scan-exclusive %s verified" % t)
        s = {r["variant"] for r in rows if (r["op"], r["type"]) == ("sum", t)}
        check(s == {"fast", "omp", "seq", "cub"}, "sum %s rows: %s" % (t, sorted(s)))
    if importlib.util.find_spec("matplotlib"):
        code, log = bench("plot", out)
        check(code == 0 and os.path.exists(os.path.join(out, "gbps_scan-inclusive_float.png")),
              "scan sweeps plot too (%s)" % log[-200:])

# Everything the sweep is asked for is checked before it starts: nothing is run, nothing written.
for args, says in ((["--ops", "sum,nosuch"], "unknown op 'nosuch'"), (["--types", "int8"], "unknown type 'int8'"),
                   (["--variants", "fast,nosuch"], "unknown variant 'nosuch'"),
                   (["--variants", "fast", "--ops", "scan-inclusive"], "needs a scan-* variant"),
                   (["--variants", "scan-fast", "--ops", "sum"], "needs a reduction variant"),
                   (["--acc", "int8"], "--acc must be int32 or int64"),
                   (["--rounds", "0"], "--rounds >= 1"),
                   (["--cub-peer", "/nonexistent/cub_peer"], "configure with -DCLREDUCE_CUB_PEER=ON")):
    with tempfile.TemporaryDirectory() as out:
        code, log = bench("run", "--clreduce", clreduce, "--device", device, "--min-log", "10", "--max-log", "10",
                          "--repeat", "1", "--warmup", "0", "--out", os.path.join(out, "o"), *args)
        check(code == 2, "%s: exit 2 (got %d)" % (args, code))
        check(says in log, "%s: says '%s' (got %r)" % (args, says, log[-300:]))
        check("n = 2^" not in log and not os.path.exists(os.path.join(out, "o")), "%s: refused before the sweep" % args)

# A ratio with a noisy timing on either side is not quoted; the fastest-against-fastest one is.
rows = [dict(op="sum", type="int32", n=1024, variant="omp", kind="peer", verified=True, kernel_ms=1.0,
             kernel_ms_min=0.5, noisy=True),
        dict(op="sum", type="int32", n=1024, variant="seq", kind="peer", verified=True, kernel_ms=4.0),
        dict(op="sum", type="int32", n=1024, variant="fast", kind="clreduce", verified=True, kernel_ms=2.0,
             kernel_ms_min=1.0, noisy=False, vs_omp=0.5)]
bench_mod.add_ratios(rows)
check("vs_omp" not in rows[2] and rows[2].get("vs_seq") == 2.0, "a noisy peer's ratio is dropped, others kept")
check("noisy" in rows[2].get("note", "") and rows[2].get("vs_omp_best") is None, "and the row says why")

# --rounds: each round's ratios come from that round's peers alone, and the summary gives each
# variant's median over the rounds with its range; a noisy round is left out of the ratio's count.
rows = []
for rnd, (omp_ms, fast_ms, noisy) in enumerate(((1.0, 0.5, False), (3.0, 1.0, False), (9.0, 1.0, True),
                                                (2.0, 2.0, False))):
    rows += [dict(op="sum", type="int32", n=1024, log2n=10, round=rnd, variant="omp", kind="peer",
                  verified=True, kernel_ms=omp_ms),
             dict(op="sum", type="int32", n=1024, log2n=10, round=rnd, variant="fast", kind="clreduce",
                  verified=True, kernel_ms=fast_ms, noisy=noisy)]
bench_mod.add_ratios(rows)
check([r.get("vs_omp") for r in rows if r["variant"] == "fast"] == [2.0, 3.0, None, 1.0],
      "each round is compared with its own peer (%r)" % [r.get("vs_omp") for r in rows])
summary = bench_mod.summarise(rows)
check(len(summary) == 1 and summary[0]["rounds"] == 4 and summary[0]["vs_omp_rounds"] == 3
      and summary[0]["vs_omp_median"] == 2.0 and summary[0]["vs_omp_min"] == 1.0
      and summary[0]["vs_omp_max"] == 3.0 and summary[0]["kernel_ms_median"] == 1.0,
      "the summary: median 2.0, range 1.0-3.0 over the 3 quoted rounds of 4 (%r)" % summary)
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "fast",
                      "--logs", "10", "--repeat", "2", "--warmup", "0", "--rounds", "2", "--out", out)
    check(code == 0 and "(round 2 of 2)" in log and "median over rounds" in log,
          "a sweep with --rounds 2 runs each cell twice and prints the summary (%s)" % log[-300:])
    with open(os.path.join(out, "summary.csv")) as f:
        got = list(csv.DictReader(f))
    check(len(got) == 1 and got[0]["rounds"] == "2" and got[0]["variant"] == "fast",
          "summary.csv has the cell with its 2 rounds (%r)" % got)

# --sizes: exact sizes (N, 2^K, NeK, each +C or -C), labelled as given where not a power of two.
check([bench_mod.parse_size(x) for x in ("1000", "2^20+7", "1e6", "1e6-1", " 2^10 ", "3e0")] ==
      [1000, (1 << 20) + 7, 10 ** 6, 10 ** 6 - 1, 1024, 3], "--sizes' forms parse")
check(bench_mod.size_label(1 << 20) == "2^20" and bench_mod.size_label(1000003) == "1000003"
      and bench_mod.size_label(1) == "2^0", "sizes are labelled 2^K or as counts")
for bad in ("abc", "2^", "2^41", "0", "5-6", "1e13", "2^3*2"):
    try:
        bench_mod.parse_size(bad)
        check(False, "--sizes refuses '%s'" % bad)
    except SystemExit as e:
        check(e.code == 2, "--sizes refuses '%s' with exit 2 (got %r)" % (bad, e.code))
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--ops", "sum,scan-inclusive",
                      "--variants", "fast,scan-fast", "--sizes",
                      "1000,2^10+3,1e3", "--repeat", "1", "--warmup", "0", "--out", out)
    with open(os.path.join(out, "results.csv")) as f:
        got = [r for r in csv.DictReader(f) if r["kind"] == "clreduce"]
    check(code == 0 and sorted({int(r["n"]) for r in got}) == [1000, 1027]
          and all(r["verified"] == "True" for r in got) and "n = 1027 scan-inclusive" in log,
          "a sweep over --sizes 1000,2^10+3,1e3 runs 1000 and 1027 once each, verified (%s)" % log[-300:])
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--logs", "10",
                      "--sizes", "1000", "--out", out)
    check(code == 2 and "--logs and --sizes" in log, "--logs with --sizes is refused (%s)" % log)

# Without matplotlib, `plot` names the interpreter that ran it (not always the python3 that
# tools/setup.sh installed matplotlib for) and how to install it for that one: exit 3, one line.
# A module named matplotlib that fails to import stands in for a Python without it.
with tempfile.TemporaryDirectory() as out:
    shim = os.path.join(out, "shim")
    os.mkdir(shim)
    with open(os.path.join(shim, "matplotlib.py"), "w") as f:
        f.write("raise ImportError(\"No module named 'matplotlib'\")\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"meta": {}, "rows": []}, f)
    code, log = bench("plot", out, env={"PYTHONPATH": shim})
    check(code == 3, "plot without matplotlib exits 3 (got %d)" % code)
    check(sys.executable in log and (sys.executable + " -m pip install matplotlib") in log
          and log.count("\n") == 1, "plot without matplotlib names this interpreter (%r)" % log)
msg = bench_mod.matplotlib_missing(ImportError("gone"), "/opt/py/bin/python3.12")
check("/opt/py/bin/python3.12 -m pip install matplotlib" in msg and "(gone)" in msg,
      "the message names the interpreter it is given and the import error (%r)" % msg)

# A run that fails (here: no kernel directory) is reported and makes bench.py exit 1.
with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "fast",
                      "--min-log", "10", "--max-log", "10", "--repeat", "1", "--warmup", "0",
                      "--out", out, env={"CLREDUCE_KERNEL_DIR": "/nonexistent/cl"})
    check(code == 1, "a failing clreduce run makes bench.py exit 1 (got %d)" % code)
    check("/nonexistent/cl" in log, "and says why")
    with open(os.path.join(out, "results.csv")) as f:
        check(any(r["kind"] == "error" for r in csv.DictReader(f)), "an error row is written")

# A sweep cut short keeps what finished: --time-limit, and SIGTERM (what `timeout` sends), each
# write results.json with the rows measured, their ratios, and meta "stopped"; exit 3.
sweep = ["run", "--clreduce", clreduce, "--device", device, "--variants", "fast",
         "--cub-peer", fake_cub, "--ops", "sum", "--types", "int32", "--logs", "10,11,12,13,14,15",
         "--rounds", "2", "--repeat", "2", "--warmup", "0"]
with tempfile.TemporaryDirectory() as out:
    code, log = bench(*(sweep + ["--time-limit", "1e-9", "--out", out]))
    check(code == 3, "--time-limit: exit 3 (got %d)" % code)
    with open(os.path.join(out, "results.json")) as f:
        data = json.load(f)
    check("--time-limit" in data["meta"].get("stopped", ""),
          "--time-limit: meta says why it stopped (%r)" % data["meta"].get("stopped"))
    check(len({r["n"] for r in data["rows"]}) < 6, "--time-limit: not every size ran")
    check("cut short" in log, "--time-limit: it says so")
with tempfile.TemporaryDirectory() as out:
    p = subprocess.Popen([sys.executable, bench_py] + sweep + ["--out", out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    partial = os.path.join(out, "rows.partial.jsonl")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(partial) and sum(1 for _ in open(partial)) >= 4:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    log, _ = p.communicate(timeout=300)
    check(p.returncode == 3, "SIGTERM: exit 3 (got %d): %s" % (p.returncode, log[-500:]))
    with open(os.path.join(out, "results.json")) as f:
        data = json.load(f)
    check("signal %d" % signal.SIGTERM in data["meta"].get("stopped", ""),
          "SIGTERM: meta says why it stopped (%r)" % data["meta"].get("stopped"))
    done = [r for r in data["rows"] if r["tool"] == "clreduce" and r["variant"] == "fast"]
    check(done and all(r.get("verified") for r in done), "SIGTERM: the finished rows are written")
    # Each finished row has its ratio to CUB, or (a noisy timing on this loaded machine) says why not.
    check(done and all(isinstance(r.get("vs_cub"), float) or "vs_cub" in r.get("note", "") for r in done),
          "SIGTERM: with their ratios (%r)" % [(r.get("vs_cub"), r.get("note")) for r in done])

# tools/scan_side_by_side: --help answers without running anything; bad arguments are one line.
if len(sys.argv) > 3:
    sbs = sys.argv[3]
    p = subprocess.run([sbs, "--help"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and p.stdout.startswith("usage: scan_side_by_side") and "GB/s (median)" not in p.stdout,
          "scan_side_by_side --help prints the usage (got %d: %r)" % (p.returncode, p.stdout[:200]))
    for args, says in ((["--bogus"], "unknown argument '--bogus'"), (["--size"], "--size needs a value"),
                       (["--rounds", "0"], "--rounds must be a whole number")):
        p = subprocess.run([sbs] + args, capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and says in p.stderr and p.stderr.count("\n") == 1,
              "scan_side_by_side %s: exit 2, one line (got %d: %r)" % (args, p.returncode, p.stderr))
    p = subprocess.run([sbs, "--variants", "omp", "--size", "2^12", "--rounds", "2"], capture_output=True,
                       text=True, timeout=120)
    check(p.returncode == 0 and "omp two-pass" in p.stdout, "scan_side_by_side runs the OpenMP peer")

print("bench smoke test: %s" % ("FAILED" if failures else "passed"))
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
# test_bench.py: smoke test of tools/bench.py on a tiny sweep: every variant, peer (CUB played by
# fake_cub_peer.py) and copy ceiling verified, with ratios; a failing run reported, not fatal;
# PNG plots where matplotlib is installed. Usage: test_bench.py CLREDUCE_BIN BENCH_PY
import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

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
    for key in ("device", "driver", "commit", "command"):
        check(data["meta"].get(key), "results.json meta has " + key)
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
                        check(r["vs_omp"] and r["vs_seq"] and r["vs_cub"] and r["vs_omp_best"] and r["vs_cub_best"],
                              "%s %s n=%s %s has vs_omp, vs_seq, vs_cub" % (op, t, n, name))
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

with tempfile.TemporaryDirectory() as out:
    code, log = bench("run", "--clreduce", clreduce, "--device", device, "--variants", "nosuch",
                      "--min-log", "10", "--max-log", "10", "--repeat", "1", "--warmup", "0",
                      "--out", out)
    check(code == 1, "a failing clreduce run makes bench.py exit 1 (got %d)" % code)
    check("unknown variant" in log, "and says why")
    with open(os.path.join(out, "results.csv")) as f:
        check(any(r["kind"] == "error" for r in csv.DictReader(f)), "an error row is written")

print("bench smoke test: %s" % ("FAILED" if failures else "passed"))
sys.exit(1 if failures else 0)

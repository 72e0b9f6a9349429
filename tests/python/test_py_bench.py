"""tools/py_bench.py runs (small sizes, the peers that need no kernels of their own), checks
every result against NumPy's and writes its CSV: one row per op, size and dtype with each
peer's call and synced times (medians and fastest tenths), the overhead rows in microseconds,
the CPU row, and no result marked wrong."""

import csv
import os
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "tools" / "py_bench.py"


def test_py_bench_smoke(tmp_path):
    out = tmp_path / "bench.csv"
    env = dict(os.environ)
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--sizes", "2^12,3000", "--dtypes", "float32,int32",
         "--repeat", "2", "--warmup", "1", "--overhead-calls", "20", "--cpu-size", "2^12",
         "--peers", "clreduce,staged,numpy",
         "--device", env.get("CLREDUCE_TEST_DEVICE", "pocl"), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.DictReader(out.open()))
    ops = ("sum", "max", "argmax", "cumsum")
    # 2 sizes x 2 dtypes in ms, 2 dtypes at 2^10 in us, per op; the CPU row.
    assert len(rows) == 6 * len(ops) + 1, rows
    for row in rows[:-1]:
        assert row["op"] in ops and row["unit"] in ("ms", "us")
        peers = ("staged", "numpy") + (("clreduce",) if row["clreduce"] != "-" else ())  # PyOpenCL
        for col in peers:
            # Times, not "wrong" or "-": until the call returned (_call) and with the device
            # synced after it, medians and fastest tenths (_p10); each call's return comes
            # before its sync.
            t = {k: float(row[col + k]) for k in ("", "_p10", "_call", "_call_p10")}
            assert all(v > 0 for v in t.values()), row
            assert t["_call"] <= t[""] and t["_call_p10"] <= t["_p10"] <= t[""], row
        if "clreduce" in peers:
            assert float(row["x_staged"]) > 0, row
    assert [r["n"] for r in rows if r["unit"] == "us"] == ["1024"] * 8
    cpu = rows[-1]
    assert cpu["op"] == "sum (cpu)" and float(cpu["x_numpy"]) > 0
    assert "x_PEER = PEER's time" in r.stdout
    h = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "cupy" in h.stdout and "--overhead-calls" in h.stdout

"""tools/py_call_cost.py runs (a few calls a row): every row printed with a positive median and
fastest tenth, and its cProfile mode prints clreduce's entries. Skipped without PyOpenCL."""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("pyopencl")

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "tools" / "py_call_cost.py"
DEVICE = os.environ.get("CLREDUCE_TEST_DEVICE", "pocl")
ROWS = ("clreduce.sum", "clreduce.max", "clreduce.argmax", "reduce_into sum",
        "reduce_into argmax", "result array", "pyopencl launch", "pyopencl kernel call")


def run(*args):
    r = subprocess.run([sys.executable, str(SCRIPT), "--device", DEVICE, *args],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_py_call_cost_rows():
    out = run("--calls", "60", "--batch", "7", "--allocator", "none")
    times = {}
    for line in out.splitlines():
        for name in ROWS:
            if line.startswith(name + " "):
                med, p10 = (float(v) for v in line[len(name):].split())
                times[name] = (med, p10)
    assert set(times) == set(ROWS), out
    for name, (med, p10) in times.items():
        assert 0 < p10 <= med, (name, med, p10)


def test_py_call_cost_profile_and_refusals():
    out = run("--calls", "60", "--profile", "argmax", "--top", "5")
    assert "function calls" in out and "clreduce" in out, out
    r = subprocess.run([sys.executable, str(SCRIPT), "--batch", "0"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2 and "at least 1" in r.stderr

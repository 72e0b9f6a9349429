#!/usr/bin/env python3
# test_progress.py: clreduce shows its progress (generating, building, running) on one stderr line
# overwritten in place when stderr is a terminal, erases it before it prints, and shows nothing
# when stderr is a pipe. Usage: test_progress.py CLREDUCE_BIN
import os
import pty
import subprocess
import sys

clreduce = sys.argv[1]
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
args = [clreduce, "--device", device, "--size", "2^20", "--repeat", "2", "--variant", "fast,topdown",
        "--peers"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


# stderr a terminal (a pseudo-terminal), stdout a pipe.
master, slave = pty.openpty()
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave)
os.close(slave)
err = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # EIO: the other side is closed
        break
    if not chunk:
        break
    err += chunk
out = p.stdout.read().decode()
p.wait()
os.close(master)
err = err.decode(errors="replace")
print(repr(err))
check(p.returncode == 0, "exit 0 (got %d)" % p.returncode)
for what in ("generating 2^20 int32 elements", "building kernels: fast (1/2)", "building kernels: topdown (2/2)",
             "timing the sequential loop (2 runs)", "running the OpenMP peer (1/3)", "running fast (2/3)",
             "running topdown (3/3)"):
    check(what in err, "progress shows '%s'" % what)
check(err.count("\n") == 0, "progress stays on one line (no newline on stderr)")
check(err.endswith("\r\x1b[K"), "the line is erased at the end")
check("\r" not in out and "running" not in out, "stdout carries no progress")
table = [l for l in out.splitlines() if not l.startswith("~ noisy")]  # a busy machine adds the legend
check(len(table) == 5, "stdout has the table: device line, header, omp, fast, topdown (got %r)" % out)

# stderr a pipe: nothing.
p = subprocess.run(args, capture_output=True, text=True)
check(p.returncode == 0, "exit 0 with stderr a pipe")
check(p.stderr == "", "no progress when stderr is not a terminal (got %r)" % p.stderr[:200])

print("progress test: %s" % ("FAILED" if failures else "passed"))
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
# test_accuracy.py: tools/accuracy.py end to end on 5000 elements per array, on the device under
# test ($CLREDUCE_TEST_DEVICE, else 0): it fails unless its own exact sum, clreduce's reference and
# `exact` agree bit for bit and every row verifies. Then doubles against Python's math.fsum
# (Shewchuk's algorithm, correctly rounded): random arrays over 2000 binades with cancelling
# pairs, where the host reference and `exact` must both give fsum's bits.
# Usage: test_accuracy.py CLREDUCE_BIN ACCURACY_PY (with numpy)
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

clreduce, tool = sys.argv[1], sys.argv[2]
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
failures = []
if subprocess.call([sys.executable, tool, "--clreduce", clreduce, "--device", device, "--size", "5000"]) != 0:
    failures.append("accuracy.py failed")

rng = np.random.default_rng(7)
with tempfile.TemporaryDirectory() as tmp:
    for trial in range(6):
        n = int(rng.integers(1, 30000))
        lo, hi = [(-1074, 1000), (-60, 60), (-1074, -900)][trial % 3]
        x = rng.uniform(-1.0, 1.0, n) * np.exp2(rng.integers(lo, hi, n).astype(np.float64))
        x[: n // 3] = -x[n // 3: 2 * (n // 3)]  # a third cancels a third
        rng.shuffle(x)
        path = os.path.join(tmp, "x%d.npy" % trial)
        np.save(path, x)
        want = math.fsum(x.tolist())
        p = subprocess.run([clreduce, "--device", device, "--input", path, "--variant", "exact",
                            "--format", "json", "--repeat", "1", "--warmup", "0"], capture_output=True, text=True)
        if p.returncode != 0:
            failures.append("trial %d: clreduce exit %d: %s" % (trial, p.returncode, p.stderr.strip()))
            continue
        r = json.loads(p.stdout)
        for key in ("result", "expected"):
            got = float(r[key])
            if np.float64(got).view(np.uint64) != np.float64(want).view(np.uint64) and not (got == 0 and want == 0):
                failures.append("trial %d (n %d, binades %d..%d): %s %r, math.fsum %r" % (trial, n, lo, hi, key, got, want))
for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)

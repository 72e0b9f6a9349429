#!/usr/bin/env python3
# test_accuracy.py: tools/accuracy.py end to end on 5000 elements per array, on the device under
# test ($CLREDUCE_TEST_DEVICE, else 0): it fails unless its own exact sum, clreduce's reference and
# `exact` agree bit for bit and every row verifies. Usage: test_accuracy.py CLREDUCE_BIN ACCURACY_PY
import os
import subprocess
import sys

clreduce, tool = sys.argv[1], sys.argv[2]
device = os.environ.get("CLREDUCE_TEST_DEVICE") or "0"
sys.exit(subprocess.call([sys.executable, tool, "--clreduce", clreduce, "--device", device, "--size", "5000"]))

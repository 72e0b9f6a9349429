#!/usr/bin/env python3
# fake_cub_peer.py: stands in for tools/cub_peer (which needs CUDA) in the benchmark's smoke
# tests: takes cub_peer's arguments and prints one JSON line with its keys, so bench.py's
# handling of CUB rows, the cub-copy ceiling and vs_cub is tested without a GPU. --offsets (segsum)
# must name a .npy file, as cub_peer reads it.
import argparse
import json
import sys

p = argparse.ArgumentParser()
for flag in ("--op", "--type", "--size", "--seed", "--warmup", "--repeat", "--acc", "--offsets"):
    p.add_argument(flag)
a = p.parse_args()
if (a.op == "segsum") != (a.offsets is not None):
    sys.exit("fake_cub_peer.py: --offsets goes with --op segsum, and only there")
if a.offsets:
    with open(a.offsets, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            sys.exit("fake_cub_peer.py: --offsets %s is not a .npy file" % a.offsets)
n = int(a.size)
bytes_moved = n * 4 * (2 if a.op in ("copy", "dot") else 1)
ms = 0.001 + n * 1e-9
row = {"variant": "cub", "op": a.op, "type": a.type, "n": n, "device": "fake GPU", "driver": 13000,
       "cub_version": 300000, "result": 0, "expected": 0, "verified": True, "kernel_ms": ms,
       "kernel_ms_min": 0.9 * ms, "kernel_ms_max": 1.2 * ms,
       "wall_ms": 2 * ms, "gbps": bytes_moved / (ms * 1e6), "seq_ms": 10 * ms, "speedup": 10.0}
if a.op == "argmin":
    row.update(index=0, expected_index=0)
print(json.dumps(row))

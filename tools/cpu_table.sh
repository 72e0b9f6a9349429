#!/usr/bin/env bash
# cpu_table.sh CLREDUCE [DEVICE]: the CPU table of docs/PERF.md ("CPU speed on many cores"):
# `fast` sum, min and argmin on int32 and float at 2^20 to 2^28 (every second power), and
# `scan-fast` inclusive int32 -> int32 and -> int64 at 2^24 and 2^26, each beside the OpenMP peer
# in the same process (--peers: medians of 10 after 2 warm-ups, OMP_WAIT_POLICY=passive).
# DEVICE defaults to pocl. Full JSON rows go to $RESULTS_DIR/cpu.jsonl (or ./cpu.jsonl); a markdown
# table of the ratios (OpenMP time / clreduce time: above 1, clreduce is ahead) is printed last.
# MIN_LOG and MAX_LOG (default 20 and 28) bound the reduction sizes (every second power from
# MIN_LOG); below 2^20 a PoCL launch's fixed cost shows, so the table also gives `fast` at n = 1
# (the launch alone) when MIN_LOG < 20.
# ROUNDS (default 1) runs the whole list that many times, interleaved (one process per row per
# round): on a shared machine one process's ratio can move by 2x, so with ROUNDS > 1 each row
# gives the median of its processes' ratios and their range, and the median times.
set -u
bin=${1:?usage: cpu_table.sh CLREDUCE [DEVICE]}
dev=${2:-pocl}
out=${RESULTS_DIR:-.}
rows="$out/cpu.jsonl"
: >"$rows"
max=${MAX_LOG:-28}
min=${MIN_LOG:-20}
rounds=${ROUNDS:-1}
fail=0
# One process: its rows, then a line that closes them (its clreduce row pairs with its own peer).
run() {
  timeout 300 "$bin" --device "$dev" --format json --peers --repeat 10 --warmup 2 "$@" >>"$rows" ||
    { echo "failed ($?): clreduce $*" >&2; fail=1; }
  echo '{"process_end": true}' >>"$rows"
}
for _ in $(seq "$rounds"); do
  if [ "$min" -lt 20 ]; then run --variant fast --op sum --type int32 --size 1; fi
  for k in $(seq "$min" 2 "$max"); do
    for t in int32 float; do
      for op in sum min argmin; do run --variant fast --op "$op" --type "$t" --size "2^$k"; done
    done
  done
  for k in 24 26; do
    [ "$k" -le "$max" ] || continue
    run --variant scan-fast --size "2^$k" --acc int32
    run --variant scan-fast --size "2^$k"
  done
done
python3 - "$rows" <<'EOF'
import json, statistics, sys
# Each process's rows up to its closing line; its clreduce row against its own OpenMP row.
procs, cur = [], []
for line in open(sys.argv[1]):
    if not line.strip().startswith("{"):
        continue
    r = json.loads(line)
    if r.get("process_end"):
        procs.append(cur)
        cur = []
    else:
        cur.append(r)
if cur:
    procs.append(cur)
rows = {}  # row key -> list of (clreduce row, its peer row or None), in the order first seen
for rs in procs:
    omp = {(r["mode"], r["op"], r["type"], r["acc"], r["n"]): r for r in rs if r["variant"] == "omp"}
    for r in rs:
        if r["variant"] == "omp" or r.get("skipped"):
            continue
        key = (r["variant"], r["mode"], r["op"], r["type"], r["acc"], r["n"])
        rows.setdefault(key, []).append((r, omp.get(key[1:])))
many = any(len(v) > 1 for v in rows.values())
print("| what | n | clreduce ms | wall ms | OpenMP ms | ratio |" + (" ratios (range) |" if many else ""))
print("|---|---|---|---|---|---|" + ("---|" if many else ""))
for (variant, mode, op, type_, acc, n), runs in rows.items():
    k = f"2^{n.bit_length() - 1}" if n > 1 else "1"
    med = lambda xs: statistics.median(xs)
    kern = med([r["kernel_ms"] for r, _ in runs])
    wall = med([r["wall_ms"] for r, _ in runs])
    peers = [p for _, p in runs if p]
    ratios = [p["kernel_ms"] / r["kernel_ms"] for r, p in runs if p and r["kernel_ms"] > 0]
    noisy = any(r.get("noisy") or (p and p.get("noisy")) for r, p in runs)
    ratio = f"{med(ratios):.2f}x" + ("~" if noisy else "") if ratios else ""
    ok = "" if all(r.get("verified") for r, _ in runs) else " **NOT VERIFIED**"
    line = (f"| {variant} {op} {type_} -> {acc}{ok} | {k} | {kern:.4f} | {wall:.4f} | "
            f"{format(med([p['kernel_ms'] for p in peers]), '.4f') if peers else ''} | {ratio} |")
    if many:
        line += f" {len(ratios)}: {min(ratios):.2f}x-{max(ratios):.2f}x |" if ratios else " |"
    print(line)
EOF
exit $fail

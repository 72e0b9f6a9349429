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
set -u
bin=${1:?usage: cpu_table.sh CLREDUCE [DEVICE]}
dev=${2:-pocl}
out=${RESULTS_DIR:-.}
rows="$out/cpu.jsonl"
: >"$rows"
max=${MAX_LOG:-28}
min=${MIN_LOG:-20}
fail=0
run() {
  timeout 300 "$bin" --device "$dev" --format json --peers --repeat 10 --warmup 2 "$@" >>"$rows" ||
    { echo "failed ($?): clreduce $*" >&2; fail=1; }
}
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
python3 - "$rows" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
omp = {}
for r in rows:
    if r["variant"] == "omp":
        omp[(r["mode"], r["op"], r["type"], r["acc"], r["n"])] = r
print("| what | n | clreduce ms | wall ms | OpenMP ms | ratio |")
print("|---|---|---|---|---|---|")
for r in rows:
    if r["variant"] == "omp" or r.get("skipped"):
        continue
    p = omp.get((r["mode"], r["op"], r["type"], r["acc"], r["n"]))
    k = r["n"].bit_length() - 1
    k = f"2^{k}" if r["n"] > 1 else "1"
    ratio = "" if not p else f"{p['kernel_ms'] / r['kernel_ms']:.2f}x" + ("~" if r.get("noisy") or p.get("noisy") else "")
    ok = "" if r.get("verified") else " **NOT VERIFIED**"
    print(f"| {r['variant']} {r['op']} {r['type']} -> {r['acc']}{ok} | {k} | {r['kernel_ms']:.4f} | "
          f"{r['wall_ms']:.4f} | {'' if not p else format(p['kernel_ms'], '.4f')} | {ratio} |")
EOF
exit $fail

#!/usr/bin/env bash
# large_table.sh CLREDUCE DEVICE: the large-array runs of docs/PERF.md ("Large arrays"): every
# variant family at 2^29, 2^29 + 1 and 2^30 + 3 int32, a 2^28 + 1 int32 -> int64 scan, reductions
# and scans at 2^31 + 5, int32 reductions at 2^28, 2^33 (past the largest allocation: chunked)
# and 2^34 (64 GiB) resident, and 2^34 streamed from host memory (4 GiB on the device) by each
# stream source beside the pinned host-to-device copy. Every run is verified; each process is
# bounded by `timeout`. Full JSON rows go to $RESULTS_DIR/large.jsonl (or ./large.jsonl); a markdown
# table is printed last. SKIP_HUGE=1 leaves out 2^33 and 2^34 (a machine with less memory),
# SMALL=1 shrinks every size by 2^12 (a check of the script itself on a CPU device).
set -u
bin=${1:?usage: large_table.sh CLREDUCE DEVICE}
dev=${2:?usage: large_table.sh CLREDUCE DEVICE}
out=${RESULTS_DIR:-.}
rows="$out/large.jsonl"
: >"$rows"
shift2=0
if [ "${SMALL:-0}" = 1 ]; then shift2=12; fi
size() {  # size K [+M]: 2^(K - shift) + M
  echo "2^$(($1 - shift2))${2:+ + $2}" | tr -d ' '
}
fail=0
run() {  # run LABEL LIMIT_S ARGS...: one process, its rows tagged with LABEL
  local label=$1 limit=$2
  shift 2
  echo "== $label: clreduce $*" >&2
  local t0=$SECONDS
  local res
  res=$(timeout "$limit" "$bin" --device "$dev" --format json "$@" 2>"$out/err.txt")
  local rc=$?
  echo "   exit $rc in $((SECONDS - t0)) s" >&2
  if [ $rc -ne 0 ]; then
    fail=1
    echo "{\"case\":\"$label\",\"exit\":$rc,\"error\":$(python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()[-300:]))' <"$out/err.txt")}" >>"$rows"
  fi
  echo "$res" | grep '^{' | sed "s/^{/{\"case\":\"$label\",/" >>"$rows"
}
fam="--variant bottomup,topdown,multi-element,butterfly,fast,scan-blelloch,scan-hierarchical,scan-lookback,scan-fast"
once="--repeat 3 --warmup 1"
for n in "$(size 29)" "$(size 29 1)" "$(size 30 3)"; do
  run "families $n" 300 $fam --size "$n" $once
done
run "scan int32->int64 $(size 28 1)" 200 --variant all-scan --size "$(size 28 1)" $once
run "2^31+5 reduce+scan" 400 --variant fast,topdown,scan-fast,scan-lookback --size "$(size 31 5)" $once
run "int32 2^28" 200 --variant fast,topdown --size "$(size 28)" --repeat 10 --warmup 3 --measure-copy
if [ "${SKIP_HUGE:-0}" != 1 ]; then
  run "int32 2^33 chunked" 500 --variant fast,topdown --size "$(size 33)" $once
  run "int32 2^34 resident" 500 --variant fast --size "$(size 34)" $once --measure-copy
  for src in write stage host-ptr; do
    run "int32 2^34 streamed $src" 500 --variant fast --size "$(size 34)" --repeat 2 --warmup 1 \
      --tune stream=on --tune stream-source=$src
  done
fi
python3 - "$rows" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| case | variant | n | verified | chunks / layout | kernel ms | kernel GB/s | wall ms | e2e GB/s |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if "exit" in r:
        print(f"| {r['case']} | **exit {r['exit']}** | | | {r['error']} | | | | |")
        continue
    if r.get("skipped"):
        continue
    f = lambda k, d=3: "" if r.get(k) is None else f"{r[k]:.{d}f}"
    print(f"| {r['case']} | {r['variant']} | {r['n']} | {'yes' if r.get('verified') else '**NO**'} | "
          f"{r.get('layout', '')} | {f('kernel_ms')} | {f('gbps', 1)} | {f('wall_ms')} | {f('e2e_gbps', 1)} |")
def pick(case, variant):
    for r in rows:
        if r.get("case") == case and r.get("variant") == variant and not r.get("skipped"):
            return r
base = pick("int32 2^28", "fast")
if base:
    for case in ("int32 2^33 chunked", "int32 2^34 resident"):
        r = pick(case, "fast")
        if r:
            print(f"\n{case}: fast kernel {r['gbps']:.1f} GB/s = {r['gbps'] / base['gbps']:.3f}x 2^28's {base['gbps']:.1f}")
h2d = pick("int32 2^34 resident", "copy-h2d")
for src in ("write", "stage", "host-ptr"):
    r = pick(f"int32 2^34 streamed {src}", "fast")
    if r and h2d:
        print(f"streamed ({src}): end to end {r['e2e_gbps']:.1f} GB/s = {r['e2e_gbps'] / h2d['gbps']:.3f}x the pinned copy {h2d['gbps']:.1f} GB/s")
bad = [r for r in rows if "exit" in r or (not r.get("skipped") and not r.get("verified"))]
print(f"\n{len(rows)} rows, {len(bad)} failed")
EOF
exit $fail

#!/usr/bin/env bash
# multi_table.sh CLREDUCE GPU CPU: the several-devices table of docs/PERF.md: sum int32 over a host
# array (N, default 2^32) on the GPU alone, the CPU alone and both together, uploads included
# (resident: one upload, then the runs; streamed: every run moves the array), with shares by each
# device's measured end-to-end rate (--shares rate) and, for data that stays on the devices, by
# kernel rate (--shares kernel-rate); an int32 -> int64 scan over both; then `mpirun -n 2` over the
# same two devices against one process (when mpirun is present). Every run is verified and under
# `timeout`. JSON rows go to $RESULTS_DIR/multi.jsonl (or ./multi.jsonl); a markdown table is printed last.
set -u
bin=${1:?usage: multi_table.sh CLREDUCE GPU CPU}
gpu=${2:?usage: multi_table.sh CLREDUCE GPU CPU}
cpu=${3:?usage: multi_table.sh CLREDUCE GPU CPU}
n=${N:-2^32}
scan_n=${SCAN_N:-2^30}
out=${RESULTS_DIR:-.}
rows="$out/multi.jsonl"
: >"$rows"
fail=0
run() {  # run LABEL ARGS...: one process, its rows tagged with LABEL
  local label=$1
  shift
  echo "== $label: clreduce $*" >&2
  local res rc
  res=$(timeout 400 "$bin" --format json --repeat 5 --warmup 1 "$@" 2>"$out/multi_err.txt")
  rc=$?
  grep -h "shares" "$out/multi_err.txt" >&2
  [ $rc -eq 0 ] || { fail=1; echo "   exit $rc: $(tail -2 "$out/multi_err.txt")" >&2; }
  echo "$res" | grep '^{' | sed "s/^{/{\"case\":\"$label\",/" >>"$rows"
}
run "gpu" --device "$gpu" --size "$n"
run "cpu" --device "$cpu" --size "$n"
run "gpu+cpu rate" --device "$gpu,$cpu" --shares rate --size "$n"
run "gpu streamed" --device "$gpu" --size "$n" --tune stream=on
run "gpu+cpu streamed rate" --device "$gpu,$cpu" --shares rate --size "$n" --tune stream=on
run "gpu+cpu kernel-rate" --device "$gpu,$cpu" --shares kernel-rate --size "$n"
run "scan gpu" --device "$gpu" --variant scan-fast --size "$scan_n"
run "scan gpu+cpu rate" --device "$gpu,$cpu" --variant scan-fast --shares rate --size "$scan_n"
mpi=$(command -v mpirun || true)
if [ -n "$mpi" ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  for v in fast scan-fast; do
    echo "== mpirun -n 2 $v" >&2
    res=$(timeout 400 "$mpi" --oversubscribe --bind-to none -n 2 "$bin" --device "$gpu,$cpu" \
      --variant "$v" --size 2^28 --format json --repeat 5 --warmup 1 2>"$out/multi_err.txt") ||
      { fail=1; echo "   mpirun failed: $(tail -3 "$out/multi_err.txt")" >&2; }
    echo "$res" | grep '^{' | sed "s/^{/{\"case\":\"mpirun -n 2\",/" >>"$rows"
    run "one process" --device "$gpu" --variant "$v" --size 2^28
  done
else
  echo "no mpirun on this machine: the MPI runs are left out" >&2
fi
python3 - "$rows" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| case | variant | n | verified | kernel ms (slowest share) | kernel GB/s | wall ms | upload ms | e2e GB/s | shares |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    if r.get("skipped"):
        continue
    parts = r.get("parts") or []
    shares = ", ".join(f"{p['device'][:14]} {p['n']} ({p['kernel_ms']:.2f} ms)" for p in parts)
    res = r["result"] if "index" not in r else f"{r['result']} @{r['index']}"
    print(f"| {r['case']} | {r['variant']} | {r['n']} | {'yes' if r['verified'] else '**NO**'} | "
          f"{r['kernel_ms']:.3f} | {r['gbps']:.1f} | {r['wall_ms']:.2f} | {r.get('upload_ms', 0):.1f} | "
          f"{r.get('e2e_gbps', 0):.1f} | {shares} |")
def pick(case, variant="fast"):
    return next((r for r in rows if r["case"] == case and r["variant"] == variant), None)
for alone, pair, what in (("gpu", "gpu+cpu rate", "end to end, resident"),
                          ("gpu streamed", "gpu+cpu streamed rate", "end to end, streamed"),
                          ("scan gpu", "scan gpu+cpu rate", "scan end to end")):
    v = "scan-fast" if alone.startswith("scan") else "fast"
    a, b = pick(alone, v), pick(pair, v)
    if a and b:
        print(f"\n{what}: pair {b['e2e_gbps']:.1f} GB/s vs GPU alone {a['e2e_gbps']:.1f} = {b['e2e_gbps'] / a['e2e_gbps']:.2f}x")
a, b = pick("gpu"), pick("gpu+cpu kernel-rate")
if a and b:
    print(f"resident kernels: pair {b['kernel_ms']:.3f} ms vs GPU alone {a['kernel_ms']:.3f} ms = {a['kernel_ms'] / b['kernel_ms']:.2f}x")
for v in ("fast", "scan-fast"):
    m = next((r for r in rows if r["case"] == "mpirun -n 2" and r["variant"] == v), None)
    o = pick("one process", v)
    if m and o:
        same = m["result"] == o["result"] and m["expected"] == o["expected"]
        print(f"mpirun -n 2 {v}: {m['result']} (verified {m['verified']}), one process {o['result']}: {'same' if same else 'DIFFERENT'}; MPI {m['combine_ms']:.3f} ms")
EOF
exit $fail

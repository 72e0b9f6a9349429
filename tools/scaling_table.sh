#!/usr/bin/env bash
# scaling_table.sh CLREDUCE: strong and weak scaling over every GPU of one host, through one
# process (--device all-gpus, equal shares) and through MPI (mpirun -n G, one rank per GPU picked
# by its local rank), each against one GPU: sum int32 -> int64 at 2^32 and an inclusive int32 ->
# int64 scan at 2^31 (strong), and sum int32 at 2^32 per GPU (weak). Prints the kernel-phase
# speedup over one GPU (its kernel time over the slowest share's or rank's), the combine's cost
# (host fold or MPI_Allreduce; the carry scan or MPI_Exscan plus the carry pass), wall time and
# the verdicts. Every process runs under `timeout`; NVLink multicast stays off (clreduce does
# not use NCCL; NCCL_NVLS_ENABLE=0 is kept and passed to every rank). JSON rows go to
# $RESULTS_DIR/scaling.jsonl (or ./scaling.jsonl). G: the GPUs --list-devices shows (GPUS overrides);
# with one GPU the script is a dry run of itself.
set -u
bin=${1:?usage: scaling_table.sh CLREDUCE}
out=${RESULTS_DIR:-.}
rows="$out/scaling.jsonl"
: >"$rows"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
gpus=${GPUS:-$("$bin" --list-devices --format json | grep -c '"type":"GPU"')}
if [ "$gpus" -lt 1 ]; then
  echo "scaling_table.sh: no GPU" >&2
  exit 2
fi
echo "GPUs: $gpus" >&2
fail=0
run() {  # run LABEL GPUS PATH ARGS...
  local label=$1 g=$2 path=$3
  shift 3
  local cmd=("$bin" --format json --repeat 5 --warmup 1 "$@")
  if [ "$path" = mpi ]; then
    cmd=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x NCCL_NVLS_ENABLE
         -n "$g" "${cmd[@]}")
  fi
  echo "== $label ($path, $g GPUs): ${cmd[*]}" >&2
  local res
  res=$(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 500 "${cmd[@]}" \
        2>"$out/scaling_err.txt") || { fail=1; tail -3 "$out/scaling_err.txt" >&2; }
  echo "$res" | grep '^{' |
    sed "s/^{/{\"case\":\"$label\",\"path\":\"$path\",\"gpus\":$g,/" >>"$rows"
}
sum_n=2^32 scan_n=2^31
weak_n=$((gpus * (1 << 32)))
run "sum int32 2^32" 1 one --device gpu --variant fast --size "$sum_n"
run "sum int32 2^32" "$gpus" process --device all-gpus --variant fast --size "$sum_n"
run "sum int32 2^32" "$gpus" mpi --device all-gpus --variant fast --size "$sum_n"
run "scan int32->int64 2^31" 1 one --device gpu --variant scan-fast --size "$scan_n"
run "scan int32->int64 2^31" "$gpus" process --device all-gpus --variant scan-fast --size "$scan_n"
run "scan int32->int64 2^31" "$gpus" mpi --device all-gpus --variant scan-fast --size "$scan_n"
run "weak: sum int32 2^32 per GPU" "$gpus" process --device all-gpus --variant fast --size "$weak_n"
run "weak: sum int32 2^32 per GPU" "$gpus" mpi --device all-gpus --variant fast --size "$weak_n"
python3 - "$rows" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
one = {r["case"]: r for r in rows if r["path"] == "one"}
base = one.get("sum int32 2^32")
print("| case | path | GPUs | verified | kernel ms (slowest part) | speedup | combine ms | wall ms | e2e GB/s |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    ref = base if r["case"].startswith("weak") else one.get(r["case"])
    speed = ""
    if ref and r["kernel_ms"] > 0:
        s = ref["kernel_ms"] / r["kernel_ms"]
        speed = f"{s:.2f}x" if not r["case"].startswith("weak") else f"efficiency {s:.3f}"
    print(f"| {r['case']} | {r['path']} | {r['gpus']} | {'yes' if r['verified'] else '**NO**'} | "
          f"{r['kernel_ms']:.3f} | {speed} | {r.get('combine_ms', 0):.3f} | {r['wall_ms']:.2f} | "
          f"{r.get('e2e_gbps', 0):.1f} |")
EOF
exit $fail

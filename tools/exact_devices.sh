#!/usr/bin/env bash
# exact_devices.sh CLREDUCE GPU CPU: `exact`'s bits for one array wherever it runs: the GPU, the
# CPU, both at once (--shares 1,1), the GPU in chunks (--max-chunk), and two MPI ranks (one on each
# device, when mpirun is present), for float (2^28) and double (2^27) sums of uniform data and of
# data over the whole exponent range (NumPy, as tools/exact_table.sh makes them). Every run is
# verified bit for bit against the host's correctly rounded sum; the script fails unless every
# run of an array returns the same bits. Rows go to $RESULTS_DIR/exact_devices.jsonl (or ./).
set -u
bin=${1:?usage: exact_devices.sh CLREDUCE GPU CPU}
gpu=${2:?usage: exact_devices.sh CLREDUCE GPU CPU}
cpu=${3:?usage: exact_devices.sh CLREDUCE GPU CPU}
out=${RESULTS_DIR:-.}
py=${PYTHON:-python3}
rows="$out/exact_devices.jsonl"
: >"$rows"
wf="$out/wide_float_2^28.npy" wd="$out/wide_double_2^27.npy"
if [ ! -s "$wf" ] || [ ! -s "$wd" ]; then
  "$py" - "$wf" "$wd" <<'PY' || { echo "making the arrays with NumPy failed" >&2; exit 1; }
import sys, numpy as np
rng = np.random.default_rng(1)
b = rng.integers(0, 2**32, 2**28, dtype=np.uint32) & np.uint32(0x807FFFFF)
b |= rng.integers(0, 255, 2**28, dtype=np.uint32) << np.uint32(23)
np.save(sys.argv[1], b.view(np.float32))
b = rng.integers(0, 2**64, 2**27, dtype=np.uint64) & np.uint64(0x800FFFFFFFFFFFFF)
b |= rng.integers(0, 2047, 2**27, dtype=np.uint64) << np.uint64(52)
np.save(sys.argv[2], b.view(np.float64))
PY
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=$(command -v mpirun || true)
fail=0
one() {  # one ARRAY-LABEL HOW ARGS...
  local label=$1 how=$2
  shift 2
  local res
  res=$(timeout 300 "$@" --variant exact --format json --repeat 2 --warmup 1 2>"$out/err.txt") ||
    { fail=1; echo "$label / $how: $(tail -2 "$out/err.txt")" >&2; }
  echo "$res" | grep '^{' | sed "s/^{/{\"array\":\"$label\",\"how\":\"$how\",/" >>"$rows"
}
for spec in "uniform float|--type float --size 2^28|2^28" "uniform double|--type double --size 2^27|2^27" \
            "wide float|--input $wf|2^26" "wide double|--input $wd|2^26"; do
  IFS='|' read -r label data chunk <<<"$spec"
  bytes=$(( $(echo "$label" | grep -q double && echo 8 || echo 4) << ${chunk#2^} ))
  one "$label" "$gpu" "$bin" --device "$gpu" $data
  one "$label" "$cpu" "$bin" --device "$cpu" $data
  one "$label" "$gpu+$cpu 1:1" "$bin" --device "$gpu,$cpu" --shares 1,1 $data
  one "$label" "$gpu in chunks of $chunk" "$bin" --device "$gpu" --max-chunk $((bytes / 4)) $data
  [ -n "$mpi" ] && one "$label" "mpirun -n 2" "$mpi" --oversubscribe --bind-to none -n 2 "$bin" \
    --device "$gpu,$cpu" $data
done
python3 - "$rows" <<'EOF' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("| array | where | verified | result | chunks / parts |")
print("|---|---|---|---|---|")
bad = 0
for a in dict.fromkeys(r["array"] for r in rows):
    mine = [r for r in rows if r["array"] == a]
    bits = {json.dumps(r["result"]) for r in mine}
    for r in mine:
        parts = r.get("ranks") or r.get("devices") or r.get("chunks", 1)
        print(f"| {a} | {r['how']} | {'yes' if r['verified'] else '**NO**'} | {r['result']} | {parts} |")
        bad += not r["verified"]
    if len(bits) != 1:
        print(f"| {a} | **{len(bits)} different results** | | | |")
        bad += 1
print(f"\n{len(rows)} runs, {bad} problems")
sys.exit(1 if bad else 0)
EOF
exit $fail

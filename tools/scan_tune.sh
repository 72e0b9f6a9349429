#!/usr/bin/env bash
# scan_tune.sh CLREDUCE [CUB_PEER]: the shape sweep behind scan-lookback's per-device defaults
# (docs/PERF.md, "Scans at copy speed"): every lookback-rows in ROWS (default 2 4 6 8), group
# size in WGS (128 256) and lookback-vec in VECS (auto), for each element/accumulator case in
# CASES (i32 i32i64 f32 f64 i64), at each size 2^K in SIZES (24 28), on DEVICE (nvidia); beside
# it CUB's scan and CUB's device-to-device copy (the ceiling) on the same seed and size, when
# CUB_PEER is given. Medians of REPEAT (10) after 3 warm-ups; every run verified. Full JSON rows
# go to $RESULTS_DIR/scan_tune.jsonl (or ./scan_tune.jsonl); a markdown table is printed last:
# per case and size, the fastest shape, its rate against the copy's and CUB's time over its own
# (above 1, clreduce is ahead), and the default shape's (scan-fast as it picks). A run costs a
# few seconds at 2^28 (the host generates and checks the array): size the lists to the time.
set -u
bin=${1:?usage: scan_tune.sh CLREDUCE [CUB_PEER]}
peer=${2:-}
dev=${DEVICE:-nvidia}
out=${RESULTS_DIR:-.}
rows_file="$out/scan_tune.jsonl"
: >"$rows_file"
ROWS=${ROWS:-2 4 6 8}
WGS=${WGS:-128 256}
VECS=${VECS:-auto}
SIZES=${SIZES:-24 28}
REPEAT=${REPEAT:-10}
CASES=${CASES:-i32 i32i64 f32 f64 i64}
fail=0
case_args() {  # the clreduce arguments of a case
  case $1 in
    i32) echo "--type int32 --acc int32" ;;
    i32i64) echo "--type int32 --acc int64" ;;
    f32) echo "--type float" ;;
    f64) echo "--type double" ;;
    i64) echo "--type int64" ;;
  esac
}
tag() {  # tag CASE SHAPE: prefixes each JSON row with the case and the shape
  sed -e "s/^{/{\"case\":\"$1\",\"shape\":\"$2\",/"
}
for k in $SIZES; do
  for c in $CASES; do
    args=$(case_args "$c")
    # shellcheck disable=SC2086
    for r in $ROWS; do
      for w in $WGS; do
        for v in $VECS; do
          timeout 120 "$bin" --device "$dev" --format json --variant scan-lookback --size "2^$k" \
            --repeat "$REPEAT" --warmup 3 --tune "lookback-rows=$r" --tune "lookback-vec=$v" \
            --local-size "$w" $args | tag "$c" "r$r-w$w-v$v" >>"$rows_file" ||
            { echo "failed: $c r$r w$w v$v 2^$k" >&2; fail=1; }
        done
      done
    done
    # shellcheck disable=SC2086
    timeout 120 "$bin" --device "$dev" --format json --variant scan-fast --size "2^$k" \
      --repeat "$REPEAT" --warmup 3 $args | tag "$c" "default" >>"$rows_file" ||
      { echo "failed: $c default 2^$k" >&2; fail=1; }
    if [ -n "$peer" ]; then
      # shellcheck disable=SC2086
      timeout 120 "$peer" --op scan-inclusive --size "2^$k" --repeat "$REPEAT" --warmup 3 $args |
        tag "$c" "cub" >>"$rows_file" || echo "cub_peer has no $c scan" >&2
    fi
  done
  if [ -n "$peer" ]; then
    timeout 120 "$peer" --op copy --type int32 --size "2^$k" --repeat "$REPEAT" --warmup 3 |
      tag copy cub >>"$rows_file" || echo "cub_peer copy failed" >&2
  fi
done
python3 - "$rows_file" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
bad = [r for r in rows if r.get("kind") != "cub" and r.get("verified") is False]
copy = {r["n"]: r["gbps"] for r in rows if r["case"] == "copy"}
print("| case | n | best shape | ms | GB/s | x copy | CUB ms | CUB/clreduce | default ms | default x CUB |")
print("|---|---|---|---|---|---|---|---|---|---|")
keys = sorted({(r["n"], r["case"]) for r in rows if r["case"] != "copy"})
for n, c in keys:
    rs = [r for r in rows if r["n"] == n and r["case"] == c]
    shapes = [r for r in rs if r["shape"].startswith("r") and r.get("verified")]
    cub = [r for r in rs if r["shape"] == "cub"]
    dflt = [r for r in rs if r["shape"] == "default"]
    if not shapes:
        continue
    b = min(shapes, key=lambda r: r["kernel_ms"])
    cms = cub[0]["kernel_ms"] if cub else None
    d = dflt[0]["kernel_ms"] if dflt else None
    cp = copy.get(n)
    f = lambda x, s: format(x, s) if x is not None else "-"
    print("| %s | 2^%d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        c, n.bit_length() - 1, b["shape"], f(b["kernel_ms"], ".4f"), f(b["gbps"], ".0f"),
        f(b["gbps"] / cp if cp else None, ".3f"), f(cms, ".4f"),
        f(cms / b["kernel_ms"] if cms else None, ".2f"), f(d, ".4f"),
        f(cms / d if cms and d else None, ".2f")))
if bad:
    print("NOT VERIFIED: %d rows" % len(bad))
    sys.exit(1)
EOF
[ $? -eq 0 ] && [ $fail -eq 0 ]

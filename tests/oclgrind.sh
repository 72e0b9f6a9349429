#!/usr/bin/env bash
# oclgrind.sh: runs every kernel under Oclgrind (--data-races --uninitialized --check-api) on
# small arrays spanning at least three work-groups with a partial last one, and fails on any
# report. Needs OCLGRIND and CLREDUCE (paths) in the environment.
set -u
# Oclgrind 21.10's interpreter lacks an LLVM intrinsic that its own optimiser emits for some
# kernels ("Undefined external function: llvm.experimental.noalias.scope.decl"): build the
# kernels unoptimised under it. The checks then see the code as written.
export CLREDUCE_BUILD_OPTIONS="-cl-opt-disable"
fail=0
log=$(mktemp)
check_env=""  # VAR=value words put in the environment of the next checks
check() {  # check ARGS...: one clreduce run under Oclgrind
  : >"$log"
  out=$(env $check_env "$OCLGRIND" --data-races --uninitialized --check-api --log "$log" "$CLREDUCE" \
        --device 0 --warmup 0 --repeat 1 "$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || [ -s "$log" ]; then
    echo "FAIL: $check_env clreduce $* (exit $rc)"; echo "$out" | head -5; head -20 "$log"; fail=1
  else
    echo "ok: $check_env clreduce $*"
  fi
}
variants=$("$CLREDUCE" --list-variants | awk '{print $1}')
for v in $variants; do
  for combo in "sum int32" "argmin float" "max double" "prod uint64" "argmax int64" "min uint32"; do
    set -- $combo
    check --variant "$v" --op "$1" --type "$2" --size 100 --local-size 16
  done
  check --variant "$v" --op sum --type float --size 1000
done
# fast in both shapes (CLREDUCE_FAST_SHAPE), spread over 3 groups of 16 (CLREDUCE_FAST_GROUPS):
# vectors dealt out unevenly, so the last group is partial, plus a tail of 3 elements.
for shape in gpu cpu; do
  check_env="CLREDUCE_FAST_SHAPE=$shape CLREDUCE_FAST_GROUPS=3"
  for combo in "sum int32" "argmin float" "max double" "prod uint64" "argmax int64" "min uint32" "sum float"; do
    set -- $combo
    check --variant fast --op "$1" --type "$2" --size 1003 --local-size 16
  done
done
check_env=""
rm -f "$log"
if [ $fail -ne 0 ]; then echo "oclgrind: reports found"; exit 1; fi
echo "oclgrind: all kernels clean"

#!/usr/bin/env bash
# oclgrind.sh: runs every kernel under Oclgrind (--data-races --uninitialized --check-api) on
# small arrays spanning at least three work-groups with a partial last one, and fails on any
# report. Reductions get every kind of op (exact: float and double sums); scans (scan-*)
# sum/prod/min/max, exclusive and segmented; scan-lookback's and scan-fast's CPU look-back's
# in-kernel folds of predecessor tiles (lookback-limit 0) and scan-fast's CPU paths besides; user reductions (--map) and the engine's rows (--op dot, ..., minmax, and the
# variants' ops on float16, int8 and bool) in both shapes;
# --op select's compaction (cl/compact.cl);
# with CLREDUCE_TESTS (the test binary), its small case of a scan's carry-in and plans on
# sub-buffers, and of the look-back plan a library call makes, with a carry-in, reading its
# predecessors' descriptors and folding them. Needs OCLGRIND and CLREDUCE (paths) in the
# environment.
set -u
# Oclgrind 21.10's interpreter lacks an LLVM intrinsic that its own optimiser emits for some
# kernels ("Undefined external function: llvm.experimental.noalias.scope.decl"): build the
# kernels unoptimised under it. The checks then see the code as written.
export CLREDUCE_BUILD_OPTIONS="-cl-opt-disable"
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
check_env=""  # VAR=value words put in the environment of the next checks
checks="--data-races --uninitialized --check-api"
check() {  # check ARGS...: one clreduce run under Oclgrind
  : >"$log"
  local dev="--device 0"
  case " $* " in *" --device "*) dev="" ;; esac
  out=$(env $check_env "$OCLGRIND" $checks --log "$log" "$CLREDUCE" \
        $dev --warmup 0 --repeat 1 "$@" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || [ -s "$log" ]; then
    echo "FAIL: $check_env clreduce $* (exit $rc)"; echo "$out" | head -5; head -20 "$log"; fail=1
  else
    echo "ok: $check_env clreduce $*"
  fi
}
# --measure-copy's copy kernel (cl/copy.cl; Oclgrind is no NVIDIA GPU): strided over 250 and 4
# work-items, the bytes past the last 16-byte word by the last one.
check --variant fast --type int32 --size 1003 --measure-copy
check --variant fast --type double --size 7 --measure-copy
variants=$("$CLREDUCE" --list-variants | awk '!/^#/ {print $1}')
for v in $variants; do
  case "$v" in
  scan-*)
    # Scans: 300 elements in groups of 16 make 5 to 19 tiles (two or three levels), the last
    # partial; each op, a widened and a 64-bit type, exclusive, segmented (the pair operator),
    # and a group of 48 (two lane groups of the hierarchical scan, the second partial).
    for combo in "sum int32" "prod uint64" "min float --exclusive" "max double --segment-length 7" \
                 "sum float --segment-length 20 --exclusive" "max uint32 --segment-length 16"; do
      set -- $combo
      op=$1 type=$2; shift 2
      check --variant "$v" --op "$op" --type "$type" --size 300 --local-size 16 "$@"
    done
    check --variant "$v" --op sum --type int64 --size 1000 --local-size 48 --segment-length 33 --exclusive
    ;;
  exact)
    # Float and double sums only. Each process first checks the shape it takes on hard data
    # (subnormals, values near the largest finite, 60 binades, expansions overflowing, 3 groups
    # of 256), so the superaccumulator's every path runs here too; then small arrays over 4
    # groups of 16 (the GPU shape: the work-items' stores and their merge), 3 groups, each other
    # store of the GPU shape (the expansions with the work-items' limbs or the group's local
    # atomics, the expansion tree), and the CPU shape forced, in groups of 4. The test binary's
    # [.oclgrind] cases add data over the whole exponent range and a flush of the float bins.
    for t in float double; do
      check --variant exact --type $t --size 1003 --local-size 16
      CLREDUCE_EXACT_GROUPS=3 check --variant exact --type $t --size 1003 --local-size 16
      for st in expansions group; do
        CLREDUCE_EXACT_STORE=$st CLREDUCE_EXACT_GROUPS=3 check --variant exact --type $t --size 1003 --local-size 16
      done
      CLREDUCE_EXACT_SHAPE=cpu CLREDUCE_EXACT_GROUPS=3 check --variant exact --type $t --size 1003 --local-size 4
    done
    ;;
  *)
    # multi-element sizes its grid by p = n / log2 n: 3000 elements give 16 groups of 16.
    size=100
    if [ "$v" = multi-element ]; then size=3000; fi
    for combo in "sum int32" "argmin float" "max double" "prod uint64" "argmax int64" "min uint32"; do
      set -- $combo
      check --variant "$v" --op "$1" --type "$2" --size $size --local-size 16
    done
    check --variant "$v" --op sum --type float --size 1000
    case "$v" in  # the ladder kernels take groups of any size: 12 is not a power of two
      interleaved-*|sequential-addressing|first-add-*|unroll-*|complete-unroll|multi-element)
        check --variant "$v" --op argmax --type float --size 450 --local-size 12 ;;
    esac
    ;;
  esac
  case "$v" in
  scan-lookback)
    # Tiles of 4 * 16 elements (12 * 16 for a group of 3): 300 elements make 5 to 7 tiles, the
    # last partial; each op, exclusive, segmented (tiles with a start publish P early).
    for combo in "sum int32" "prod uint64 --exclusive" "min float --segment-length 7" \
                 "max double --segment-length 64 --exclusive" "sum uint32 --segment-length 20"; do
      set -- $combo
      op=$1 type=$2; shift 2
      check --variant "$v" --op "$op" --type "$type" --size 300 --local-size 4 "$@"
    done
    check --variant "$v" --op sum --type int64 --size 300 --local-size 3 --segment-length 33 --exclusive
    # Look-back windows of 3 descriptors a lane (a round covers every tile before the last).
    check --variant "$v" --op sum --type int32 --size 300 --local-size 4 --segment-length 20 \
          --tune lookback-span=3
    # A carry-in taken by the kernel (tile 0's prefix): chunks of 120 elements, each after the
    # first scanned from the chunk before it; segmented, the carry stops at the first start.
    check --variant "$v" --op sum --type int32 --size 300 --local-size 4 --max-chunk 480 --exclusive \
          --tune in-place=off
    check --variant "$v" --op max --type float --size 300 --local-size 4 --max-chunk 480 \
          --segment-length 7 --tune in-place=off
    # The decoupled fallback: with a limit of 0 each group folds the 3 tiles before its own from
    # the input (tile 0 with the carry-in of a chunk after the first) instead of reading their
    # descriptors; segmented with starts inside folded tiles, exclusive, 64-bit and float.
    CLREDUCE_LOOKBACK_LIMIT=0 check --variant "$v" --op max --type int32 --size 300 --local-size 4 --segment-length 50
    CLREDUCE_LOOKBACK_LIMIT=0 check --variant "$v" --op sum --type int64 --size 300 --local-size 4 \
          --segment-length 37 --exclusive
    CLREDUCE_LOOKBACK_LIMIT=0 check --variant "$v" --op sum --type float --size 300 --local-size 4 \
          --max-chunk 480 --exclusive --tune in-place=off
    CLREDUCE_LOOKBACK_LIMIT=0 check --variant "$v" --op min --type int32 --size 300 --local-size 4 \
          --max-chunk 480 --segment-length 90 --tune in-place=off
    ;;
  scan-fast)
    # Oclgrind is a GPU without NVIDIA's forward progress: scan-fast takes the hierarchical scan
    # there. Force its CPU path too: 3 groups of 4 work-items, chunks of 8, so 300 elements make
    # 4 superblocks (8 launches), the last partial.
    for combo in "sum int32" "prod uint64 --exclusive" "min float --segment-length 7" \
                 "max double --segment-length 20 --exclusive"; do
      set -- $combo
      op=$1 type=$2; shift 2
      CLREDUCE_SCAN_FAST_PATH=cpu CLREDUCE_SCAN_GROUPS=3 CLREDUCE_SCAN_CHUNK=8 \
        check --variant "$v" --op "$op" --type "$type" --size 300 --local-size 4 "$@"
    done
    # And its CPU look-back path: tiles of 1024 (the smallest), 3000 elements make 3 tiles, the
    # last partial; then with lookback-limit 0 each tile folding the ones before it.
    for combo in "sum int32 --segment-length 700 --exclusive" "max double" "sum float --segment-length 1024"; do
      set -- $combo
      op=$1 type=$2; shift 2
      CLREDUCE_SCAN_FAST_PATH=cpu-lookback CLREDUCE_SCAN_TILE=1024 \
        check --variant "$v" --op "$op" --type "$type" --size 3000 "$@"
    done
    CLREDUCE_SCAN_FAST_PATH=cpu-lookback CLREDUCE_SCAN_TILE=1024 CLREDUCE_LOOKBACK_LIMIT=0 \
      check --variant "$v" --op min --type int32 --size 3000 --segment-length 500
    CLREDUCE_SCAN_FAST_PATH=cpu-lookback CLREDUCE_SCAN_TILE=1024 CLREDUCE_LOOKBACK_LIMIT=0 \
      check --variant "$v" --op sum --type float --size 4000 --exclusive
    # Ranges that start between vectors: tiles of 1025, superblocks of 3 x 4 chunks of 13 (156
    # elements), so each vector scan starts after a scalar head; and chunks of 100 elements.
    CLREDUCE_SCAN_FAST_PATH=cpu-lookback CLREDUCE_SCAN_TILE=1025 \
      check --variant "$v" --op sum --type int32 --size 3000
    CLREDUCE_SCAN_FAST_PATH=cpu-lookback CLREDUCE_SCAN_TILE=1025 \
      check --variant "$v" --op min --type double --size 3000 --exclusive
    CLREDUCE_SCAN_FAST_PATH=cpu CLREDUCE_SCAN_GROUPS=3 CLREDUCE_SCAN_CHUNK=13 \
      check --variant "$v" --op max --type float --size 700 --local-size 4 --exclusive
    for path in cpu cpu-lookback; do
      CLREDUCE_SCAN_FAST_PATH=$path CLREDUCE_SCAN_GROUPS=3 CLREDUCE_SCAN_CHUNK=13 \
        check --variant "$v" --op sum --type int64 --size 1000 --max-chunk 800 --tune in-place=off
    done
    ;;
  esac
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
# The CPU shape's arg ops over whole screened blocks (32 vectors), in order and in each of 4
# streams: 2 work-items of 281 vectors, 70 a stream (2 blocks and a rest), 1 vector after them.
for streams in off on; do
  check_env="CLREDUCE_FAST_SHAPE=cpu CLREDUCE_FAST_GROUPS=2 CLREDUCE_FAST_ARG_STREAMS=$streams"
  for combo in "argmin float" "argmax int32"; do
    set -- $combo
    check --variant fast --op "$1" --type "$2" --size 9011 --local-size 1
  done
done
check_env=""
# User reductions (cl/reduce_expr.cl) in both shapes over 3 groups (16 work-items each in the GPU
# shape, reading 16-byte vectors and the last n % 4 or n % 2 elements one by one; one in the CPU
# shape), with the law check, the one-work-item reference and post: a float dot product of two
# arrays, a count with post, a double norm, four int arrays.
for shape in gpu cpu; do
  ls=16; if [ $shape = cpu ]; then ls=1; fi
  check_env="CLREDUCE_FAST_SHAPE=$shape CLREDUCE_FAST_GROUPS=3"
  check --map 'x*y' --reduce 'a+b' --identity 0 --type float --size 1003 --local-size $ls
  check --map 'x>0' --reduce 'a+b' --identity 0 --post 'n-a' --acc int64 --type int32 --size 1003 --local-size $ls
  check --map 'x*x' --reduce 'a+b' --identity 0 --post 'sqrt(a)' --type double --size 1003 --local-size $ls
  check --map 'x+y*z-w' --reduce 'min(a,b)' --identity INT_MAX --acc int32 --type int32 --size 1003 --local-size $ls
  # The engine's rows: two- and four-value accumulators, pairwise blocks (several per work-item
  # at 4003 elements), a predicate.
  check --op dot --type float --size 4003 --local-size $ls
  check --op var --type double --size 4003 --local-size $ls
  check --op logsumexp --type float --size 4003 --local-size $ls --where 'x > 0'
  # Float arrays without a predicate: the CPU shape's lanes (16 elements at a time: the sums of
  # mean and var, minmax, logsumexp; float16 read by vload_half16), the GPU shape's element
  # folds (minmax, logsumexp: its float exp, and the double one of lse-exp=double).
  check --op mean --type float --size 4003 --local-size $ls
  check --op mean --type float --size 4003 --local-size $ls --tune expr-blocks=on
  check --op var --type float --size 4003 --local-size $ls
  check --op logsumexp --type float --size 4003 --local-size $ls
  if [ $shape = gpu ]; then
    check --op logsumexp --type float --size 4003 --local-size $ls --tune lse-exp=double
  fi
  check --op minmax --type float --size 4003 --local-size $ls
  check --op norm2 --type float16 --size 4003 --local-size $ls
  # Indexed accumulators (structs across groups) over float16 read with vload_half, an arg op
  # of int8 with a predicate, a bool sum.
  check --op minmax --type float16 --size 1003 --local-size $ls
  check --op argmin --type int8 --size 1003 --local-size $ls --where 'x > 3'
  check --op sum --type bool --size 1003 --local-size $ls
done
check_env=""
# Segments and axes (cl/reduce_segments.cl). Offsets of empty, one-element, short (a work-item or
# a few lanes each), medium (a group) and long segments (groups of 4: pieces of 256 elements, 3
# of them, folded), for a sum, a product, an arg op (no empty segment), a user reduction with
# post and the engine's rows; axes of a 3-D array (columns, the last axis as segments, axes 0 and 2) and the long
# columns of a (300, 2) array (pieces of rows, folded). The .npy files are written here (python3,
# no numpy needed).
segdir=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$segdir"' EXIT
npy() {  # npy FILE DESCR SHAPE VALUES...: a .npy of little-endian values (struct codes q, f, i)
  python3 - "$@" <<'PY'
import struct, sys
path, descr, shape, values = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
code = {"<i8": "q", "<f4": "f", "<i4": "i"}[descr]
h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
conv = float if code == "f" else int
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())
    f.write(struct.pack("<%d%s" % (len(values), code), *[conv(v) for v in values]))
PY
}
seq_floats() { python3 -c "import sys; n=int(sys.argv[1]); print(' '.join(str(((k*7919)%1000-500)/256) for k in range(n)))" "$1"; }
npy "$segdir/x.npy" "<f4" "(1200,)" $(seq_floats 1200)
npy "$segdir/off.npy" "<i8" "(13,)" 0 0 1 7 9 20 50 120 300 1000 1003 1100 1200
npy "$segdir/off1.npy" "<i8" "(6,)" 0 1 7 50 1000 1200
npy "$segdir/m.npy" "<f4" "(4, 5, 3)" $(seq_floats 60)
npy "$segdir/c.npy" "<f4" "(300, 2)" $(seq_floats 600)
npy "$segdir/w.npy" "<f4" "(40, 37)" $(seq_floats 1480)
npy "$segdir/i.npy" "<i4" "(1200,)" $(seq 1 1200 | awk '{print ($1 * 7919) % 2001 - 1000}')
# var's second pass (the first's sums shifted by x0 = 10^6, which the predicate leaves out, are
# past the one-pass bound: a second launch shifted by their mean), in both shapes.
npy "$segdir/far.npy" "<f4" "(1200,)" 1000000 $(seq_floats 1199)
for shape in gpu cpu; do
  ls=16; if [ $shape = cpu ]; then ls=1; fi
  check_env="CLREDUCE_FAST_SHAPE=$shape CLREDUCE_FAST_GROUPS=3"
  check --input "$segdir/far.npy" --op var --where 'x < 1000' --local-size $ls
done
check_env=""
for combo in "--op sum" "--op prod" "--map x*x --reduce a+b --identity 0 --post a/n"; do
  check --input "$segdir/x.npy" --offsets "$segdir/off.npy" --local-size 4 $combo
done
check --input "$segdir/x.npy" --offsets "$segdir/off1.npy" --local-size 4 --op argmin
for combo in "--axis 0 --op sum" "--axis -1 --op max" "--axis 0,2 --op sum --keepdims" \
             "--axis 1 --op argmax" "--axis 0 --map x --reduce max(a,b) --identity -INFINITY"; do
  check --input "$segdir/m.npy" --local-size 4 $combo
done
check --input "$segdir/c.npy" --axis 0 --op sum --local-size 4
check --input "$segdir/c.npy" --axis 0 --op argmin --local-size 4
# The engine's rows (accumulators of two and four values, post per result): var along axes 0
# and 2 (columns), logsumexp along the long columns (pieces folded), mean over the offsets with
# their empty segment (nan). Checked for races and API misuse: Oclgrind 21.10's --uninitialized
# plugin stops on an instruction it does not support (LLVM's freeze) in these kernels' vector
# accumulators, before any check of theirs.
checks="--data-races --check-api"
check --input "$segdir/m.npy" --axis 0,2 --op var --ddof 1 --local-size 4
check --input "$segdir/c.npy" --axis 0 --op logsumexp --local-size 4
check --input "$segdir/x.npy" --offsets "$segdir/off.npy" --op mean --local-size 4
checks="--data-races --uninitialized --check-api"
# The GPU shape's knobs: loads in flight and vector loads of a segment (ends element by
# element; the arg op reads no vectors), several results a work-item read as vectors (the
# (300, 2) array's rows: float2) with rows in flight, and where they cannot be (axis 0 of
# m.npy: rows of 15 elements).
check --input "$segdir/x.npy" --offsets "$segdir/off.npy" --local-size 4 --op sum \
      --tune segments-unroll=4 --tune segments-vec=4
check --input "$segdir/x.npy" --offsets "$segdir/off1.npy" --local-size 4 --op argmin \
      --tune segments-unroll=2 --tune segments-vec=8
check --input "$segdir/c.npy" --axis 0 --op sum --local-size 4 --tune axis-cols=2 --tune axis-unroll=4
check --input "$segdir/m.npy" --axis 0 --op max --local-size 4 --tune axis-cols=4 --tune axis-unroll=2
# The CPU shape: segments walked by a work-item each (runs of whole ones; long ones in pieces of
# 256, folded), a user reduction and an engine row among them; columns in tiles (axis 0 of
# m.npy: a tile of its 15 results, or tiles of 4; axis 1: tiles of 3; the (300, 2) array's in
# 4 pieces, their fold a tile a work-item, or tiles of 1), and axes 0 and 2 of m.npy (no tiles:
# 16 results a work-item).
for combo in "--op sum" "--op prod" "--map x*x --reduce a+b --identity 0 --post a/n"; do
  check --input "$segdir/x.npy" --offsets "$segdir/off.npy" --tune segments-shape=cpu \
        --tune segments-piece=256 $combo
done
check --input "$segdir/x.npy" --offsets "$segdir/off1.npy" --tune segments-shape=cpu --op argmin
for combo in "--axis 0 --op sum" "--axis 1 --op argmax" "--axis 0,2 --op sum" "--axis 0 --op max --tune axis-cols=4"; do
  check --input "$segdir/m.npy" --tune segments-shape=cpu $combo
done
check --input "$segdir/c.npy" --axis 0 --op sum --tune segments-shape=cpu
check --input "$segdir/c.npy" --axis 0 --op argmin --tune segments-shape=cpu --tune axis-cols=1
# Its explicit vectors (segments-simd=auto, as above) and its scalar loops (off): int32 sums in
# int64 (vectors converted), floats' min (whole segments past the 32 accumulators: 50, 120,
# 700), and 37 columns (tiles of two vectors of 16 and 5 one by one) in 3 pieces, folded the
# same way.
for simd in auto off; do
  check --input "$segdir/i.npy" --offsets "$segdir/off.npy" --op sum --tune segments-shape=cpu \
        --tune segments-piece=256 --tune segments-simd=$simd
  check --input "$segdir/x.npy" --offsets "$segdir/off1.npy" --op min --tune segments-shape=cpu \
        --tune segments-simd=$simd
  check --input "$segdir/w.npy" --axis 0 --op sum --tune segments-shape=cpu --tune axis-pieces=3 \
        --tune segments-simd=$simd
done
checks="--data-races --check-api"
check --input "$segdir/m.npy" --axis 0,2 --op var --ddof 1 --tune segments-shape=cpu
check --input "$segdir/x.npy" --offsets "$segdir/off.npy" --op mean --tune segments-shape=cpu
checks="--data-races --uninitialized --check-api"
# The chunk driver: a reduction folded over 4 chunks (results written at offsets in one partials
# buffer), a segmented exclusive scan whose carry crosses 4 chunk edges, both used in place and
# copied; then streamed through 2 slots of 2 KiB, each way of feeding them.
# In place (CL_MEM_USE_HOST_PTR over the host array) Oclgrind 21.10 sees the host's bytes as
# uninitialised, whatever they hold: those runs are checked for races and API misuse only. Chunks
# of 256 floats and 128 ints (their flags and int64 outputs too) start at multiples of 128 bytes,
# as host memory must to be used in place (else it is copied).
for place in off on; do
  if [ $place = on ]; then checks="--data-races --check-api"; fi
  check --variant fast --op argmax --type float --size 1003 --local-size 16 --max-chunk 1024 --tune in-place=$place
  check --variant scan-blelloch --op sum --type int32 --size 500 --local-size 16 --max-chunk 512 \
        --segment-length 7 --exclusive --tune in-place=$place
  # Chunks of 100 elements, not a multiple of a vector: look-back tiles that start between
  # vectors in place take the element-by-element path.
  check --variant scan-lookback --op sum --type int64 --size 1000 --local-size 4 --max-chunk 800 \
        --exclusive --tune in-place=$place
done
checks="--data-races --uninitialized --check-api"
# The carry-in pass in each layout (blocked is the CPUs' default), and two shares of one device
# whose scan carries cross between them.
for layout in blocked strided; do
  check --variant scan-hierarchical --op sum --type int64 --size 300 --local-size 16 --max-chunk 640 \
        --segment-length 11 --tune carry-layout=$layout --tune in-place=off
done
# Two shares of one device. Oclgrind 21.10 runs one context at a time (two at once give wrong
# results), so the shares run one after another; its --uninitialized plugin crashes on a second
# context, so this run is checked for races and API misuse (the kernels it runs are checked with
# all three plugins above).
checks="--data-races --check-api"
check --device 0,0 --variant fast,scan-hierarchical,scan-lookback --op sum --type int32 --size 300 \
      --local-size 16 --tune in-place=off --tune share-threads=off
# The engine's shares: each device's accumulator, then their fold on the first (minmax's structs).
check --device 0,0 --op minmax --type float --size 1003 --local-size 16 --tune in-place=off \
      --tune share-threads=off
checks="--data-races --uninitialized --check-api"
# exact over 3 chunks: each launch leaves its exact state after its result, at its offset in
# the partials buffer, for the host's fold (the CPU shape too, in groups of 4).
check --variant exact --type float --size 1003 --local-size 16 --max-chunk 1600 --tune in-place=off
check --variant exact --type double --size 1003 --local-size 16 --max-chunk 3200 --tune in-place=off
CLREDUCE_EXACT_SHAPE=cpu CLREDUCE_EXACT_GROUPS=3 check --variant exact --type double --size 1003 \
      --local-size 4 --max-chunk 3200 --tune in-place=off
for source in write stage host-ptr; do
  stream="--tune in-place=off --tune stream=on --tune stream-bytes=2048 --tune stream-slots=2 --tune stream-source=$source"
  check --variant topdown --op min --type int32 --size 1003 --local-size 16 $stream
  check --variant scan-hierarchical --op max --type float --size 700 --local-size 16 --segment-length 9 $stream
done
# The reduction engine in chunks (run/expr_chunks.hpp): each chunk's accumulator written at its
# offset in one buffer and folded in order by reduce_expr_fold (minmax's structs, indices from
# each chunk's start; a user expression of two arrays, whose one-work-item reference resumes
# chunk after chunk), resident in 4 chunks and streamed through 2 slots.
for layout in "--max-chunk 1024" "--tune stream=on --tune stream-bytes=2048 --tune stream-slots=2"; do
  check --op minmax --type float --size 1003 --local-size 16 --tune in-place=off $layout
  check --map 'x*y' --reduce 'a+b' --identity 0 --post 'a/n' --type float --size 1003 \
        --local-size 16 --tune in-place=off $layout
done
# --op select: the compaction's kernels (cl/compact.cl) and the scan under them, in groups of 16.
check --op select --where "x > 0.25f" --type float --size 300 --local-size 16
check --op select --where "x % 3 == 0" --type int64 --size 1000 --local-size 16
# What the CLI never runs: a scan plan's carry-in pass (cl/scan_carry.cl) and plans on
# sub-buffers, the look-back plan a library call makes (with a carry-in, reading descriptors and,
# with lookback-limit 0, folding predecessors), and a compaction's select and partition, in the
# test binary's small cases for Oclgrind (device 0 there is Oclgrind's).
if [ -n "${CLREDUCE_TESTS:-}" ]; then
  : >"$log"
  out=$(env -u CLREDUCE_TEST_DEVICE "$OCLGRIND" --data-races --uninitialized --check-api --log "$log" \
        "$CLREDUCE_TESTS" "[.oclgrind]" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || [ -s "$log" ]; then
    echo "FAIL: clreduce_tests [.oclgrind] (exit $rc)"; echo "$out" | tail -20; head -20 "$log"; fail=1
  else
    echo "ok: clreduce_tests [.oclgrind]"
  fi
fi
rm -f "$log"
if [ $fail -ne 0 ]; then echo "oclgrind: reports found"; exit 1; fi
echo "oclgrind: all kernels clean"

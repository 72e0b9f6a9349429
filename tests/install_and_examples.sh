#!/usr/bin/env bash
# install_and_examples.sh: what a user of an installed clreduce meets. Installs the build into a
# temporary prefix; checks the installed clreduce finds the prefix's kernels with no variable set,
# also once the prefix is moved; builds examples/ (copied away from the source tree) against the
# prefix alone with find_package(clreduce); runs dijkstra on a generated graph and on the
# hand-written examples/data/small.gr (distances verified, DIST.npy as expected), and on bad
# input (exit 2, a message with the line number, no output file).
# usage: install_and_examples.sh BUILD_DIR SOURCE_DIR VERSION CXX_COMPILER [COMPILER_LAUNCHER]
set -euo pipefail
build=$1 src=$2 version=$3 cxx=$4 launcher=${5:-}
device=${CLREDUCE_TEST_DEVICE:-0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset CLREDUCE_KERNEL_DIR

checks=0
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_in TEXT WANTED: TEXT contains WANTED.
expect_in() {
  [[ $1 == *"$2"* ]] || fail "expected '$2' in: $1"
  checks=$((checks + 1))
}
# expect_code GOT WANT WHAT
expect_code() {
  [[ $1 == "$2" ]] || fail "$3: exit $1, expected $2"
  checks=$((checks + 1))
}
# npy_int64 FILE: the int64 elements of a version 1.0 .npy, space-separated.
npy_int64() {
  local header_len
  header_len=$(od -An -t u2 -j 8 -N 2 "$1" | tr -d ' ')
  od -An -v -t d8 -j $((10 + header_len)) "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'
}

# --- Install, and the installed command line.
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" > "$work/install.log"
for f in bin/clreduce include/clreduce/clreduce.hpp include/clreduce/version.hpp lib/cmake/clreduce/clreduceConfig.cmake \
         lib/cmake/clreduce/clreduceConfigVersion.cmake share/clreduce/cl/clreduce.h share/clreduce/cl/reduce_fast.cl; do
  [[ -f $prefix/$f ]] || fail "not installed: $f"
  checks=$((checks + 1))
done
ls "$prefix"/lib/libclreduce.so* > /dev/null || fail "libclreduce.so not installed"
out=$("$prefix/bin/clreduce" --version)
expect_in "$out" "clreduce $version"
# MPI as built: Open MPI's version, or not built in.
[[ $out == *$'\nmpi: Open MPI v'* || $out == *$'\nmpi: not built in\n'* ]] ||
  fail "expected an 'mpi: ' line naming Open MPI or 'not built in' in: $out"
checks=$((checks + 1))
expect_in "$out" "kernels: $prefix/share/clreduce/cl"
out=$("$prefix/bin/clreduce" --device "$device" --size 5000 --op argmin --verbose 2>&1)
expect_in "$out" "kernels: $prefix/share/clreduce/cl"
expect_in "$out" "yes"

# --- examples/ as a project of its own, built against the prefix alone.
cp -r "$src/examples" "$work/examples"
cmake_args=(-S "$work/examples" -B "$work/examples/build" -DCMAKE_BUILD_TYPE=Release
            -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DCMAKE_CXX_COMPILER="$cxx")
if [[ -n $launcher ]]; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher")
  export CCACHE_BASEDIR=$work  # paths relative to the temporary directory: the cache hits next time
fi
cmake "${cmake_args[@]}" > "$work/configure.log" || { cat "$work/configure.log"; fail "examples: configure"; }
expect_in "$(grep '^clreduce_DIR' "$work/examples/build/CMakeCache.txt")" "$prefix/lib/cmake/clreduce"
cmake --build "$work/examples/build" -j2 > "$work/build.log" 2>&1 || { cat "$work/build.log"; fail "examples: build"; }
dijkstra=$work/examples/build/dijkstra
gen_graph=$work/examples/build/gen_graph

# --- dijkstra on the hand-written graph: the distances by hand, -1 for the unreachable node 8.
out=$("$dijkstra" "$work/examples/data/small.gr" --source 1 --device "$device" --output "$work/small.npy")
expect_in "$out" "distances: verified (7 of 8 nodes reachable)"
expect_in "$out" "kernels $prefix/share/clreduce/cl"
expect_in "$(npy_int64 "$work/small.npy")" "0 3 9 18 20 11 20 -1"
out=$("$dijkstra" "$work/examples/data/small.gr" --source 8 --device "$device")
expect_in "$out" "distances: verified (8 of 8 nodes reachable)"

# --- dijkstra on generated graphs: from node 1 every node is reachable (a tree from node 1).
"$gen_graph" 1500 6000 42 > "$work/g.gr"
out=$("$dijkstra" "$work/g.gr" --source 1 --device "$device" --output "$work/g.npy")
expect_in "$out" "distances: verified (1500 of 1500 nodes reachable)"
expect_in "$out" "host binary-heap dijkstra: "
[[ $(stat -c %s "$work/g.npy") == $((128 + 1500 * 8)) ]] || fail "g.npy has the wrong size"
[[ " $(npy_int64 "$work/g.npy") " != *" -1 "* ]] || fail "g.npy: an unreachable node from node 1"
checks=$((checks + 2))
"$gen_graph" 1200 900 7 50 > "$work/sparse.gr"  # too few arcs for a tree: nodes past 901 unreachable
out=$("$dijkstra" "$work/sparse.gr" --source 5 --device "$device" --variant topdown --output "$work/sparse.npy")
expect_in "$out" "distances: verified ("
[[ " $(npy_int64 "$work/sparse.npy") " == *" -1 "* ]] || fail "sparse.npy: no unreachable node"
checks=$((checks + 1))

# --- Bad input: exit 2, one line naming the file and line, no output file.
bad() {  # bad NAME WANT_EXIT WANT_TEXT CONTENTS [ARGS...]
  local name=$1 want=$2 text=$3 contents=$4 code=0 err
  shift 4
  printf '%b' "$contents" > "$work/$name.gr"
  err=$("$dijkstra" "$work/$name.gr" --device "$device" --output "$work/$name.npy" "$@" 2>&1 >/dev/null) || code=$?
  expect_code "$code" "$want" "$name"
  expect_in "$err" "$text"
  [[ $(printf '%s\n' "$err" | wc -l) == 1 ]] || fail "$name: more than one line: $err"
  ! ls "$work/$name".npy* > /dev/null 2>&1 || fail "$name: an output file was written"
  checks=$((checks + 2))
}
bad node_outside 2 "node_outside.gr:3: arc 2 -> 7 names node 7, outside 1..3" 'p sp 3 2\na 1 2 4\na 2 7 1\n' --source 1
bad bad_arc 2 "bad_arc.gr:3: expected 'a U V W' with integers U, V, W" 'c x\np sp 3 1\na 1 x 2\n' --source 1
bad bad_line 2 "bad_line.gr:2: expected a 'c', 'p sp N M' or 'a U V W' line" 'p sp 2 1\nx 1 2\na 1 2 1\n' --source 1
bad arc_before_p 2 "arc_before_p.gr:2: an arc before the 'p sp N M' line" 'c no p yet\na 1 2 3\np sp 2 1\n' --source 1
bad no_p 2 "no_p.gr:3: end of file with no 'p sp N M' line" 'c just\nc comments\n' --source 1
bad negative 2 "negative.gr:2: arc 1 -> 2 has negative weight -5" 'p sp 2 1\na 1 2 -5\n' --source 1
bad arc_count 2 "arc_count.gr:1: 'p sp' promises 2 arcs, the file has 1" 'p sp 2 2\na 1 2 1\n' --source 1
bad source_outside 2 "--source 9 is outside 1..8" "$(cat "$src/examples/data/small.gr")\n" --source 9
bad no_source 2 "--source S is required" 'p sp 2 1\na 1 2 1\n'
# An explicit kernel directory without kernels is clreduce's error: exit 3.
code=0
err=$(CLREDUCE_KERNEL_DIR=$work/nowhere "$dijkstra" "$work/examples/data/small.gr" --source 1 --device "$device" \
      --output "$work/nokernels.npy" 2>&1 >/dev/null) || code=$?
expect_code "$code" 3 "no kernels"
expect_in "$err" "kernel directory not found: tried CLREDUCE_KERNEL_DIR=$work/nowhere"
[[ ! -e $work/nokernels.npy ]] || fail "no kernels: an output file was written"
code=0
"$gen_graph" 10 > /dev/null 2>&1 || code=$?
expect_code "$code" 2 "gen_graph with too few arguments"

# --- The prefix moved: the command line and the library find their kernels beside themselves.
moved=$work/moved
mv "$prefix" "$moved"
out=$("$moved/bin/clreduce" --version)
expect_in "$out" "kernels: $moved/share/clreduce/cl"
out=$(LD_LIBRARY_PATH="$moved/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$dijkstra" "$work/examples/data/small.gr" --source 1 --device "$device")
expect_in "$out" "kernels $moved/share/clreduce/cl"
expect_in "$out" "distances: verified (7 of 8 nodes reachable)"

echo "install_and_examples: $checks checks passed"

#!/usr/bin/env bash
# install_and_examples.sh: what a user of an installed clreduce meets. Installs the build into a
# temporary prefix; checks the installed clreduce finds the prefix's kernels with no variable set,
# also once the prefix is moved; builds a program of the user's own (tests/consumer: the public
# header alone, the version macros in #if, -Wall -Wextra -Wpedantic -Werror) with pkg-config's
# flags as C++17 and with find_package(clreduce) from a project that asks for C++14, and runs it
# with variables set that the library must not read; builds examples/ (copied away from the
# source tree) against the prefix alone with find_package(clreduce); runs own_queue (its own
# context and queue, kernels chained with clreduce's compaction and reduction); runs dijkstra on a
# generated graph and on the hand-written examples/data/small.gr (distances verified, DIST.npy as
# expected), on the largest weights it can take, and on bad input (exit 2, a message with the
# line number, no output file; a FIFO, a folder, /dev/zero, a binary file named as such at once;
# escape bytes escaped; weights that could overflow refused; a graph too large for memory: exit 5).
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
for f in bin/clreduce include/clreduce/clreduce.hpp include/clreduce/version.hpp include/clreduce/export.hpp \
         lib/cmake/clreduce/clreduceConfig.cmake lib/cmake/clreduce/clreduceConfigVersion.cmake \
         lib/pkgconfig/clreduce.pc share/clreduce/cl/clreduce.h share/clreduce/cl/reduce_fast.cl; do
  [[ -f $prefix/$f ]] || fail "not installed: $f"
  checks=$((checks + 1))
done
ls "$prefix"/lib/libclreduce.so* > /dev/null || fail "libclreduce.so not installed"
! grep -n '@' "$prefix/include/clreduce/version.hpp" || fail "version.hpp holds an unconfigured @NAME@"
checks=$((checks + 1))
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

# --- A program of the user's own, outside CMake: pkg-config's flags, C++17, every warning an error
# (the clreduce headers come in with -I, so their warnings count).
pc_flags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs clreduce) ||
  fail "pkg-config --cflags --libs clreduce"
expect_in "$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion clreduce)" "$version"
# shellcheck disable=SC2086 # the flags are words
"$cxx" -std=c++17 -Wall -Wextra -Wpedantic -Werror "$src/tests/consumer/consumer.cpp" $pc_flags \
  -o "$work/consumer_pc" > "$work/consumer_pc.log" 2>&1 || { cat "$work/consumer_pc.log"; fail "consumer (pkg-config): build"; }
consumer_run() {  # consumer_run PROGRAM [VAR=VALUE...]: runs it on the prefix's library
  local program=$1
  shift
  env "$@" LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$program" "$device"
}
out=$(consumer_run "$work/consumer_pc") || fail "consumer (pkg-config): exit $?"
expect_in "$out" "consumer: clreduce $version (macros $version), sum "
expect_in "$out" "verified, kernels $prefix/share/clreduce/cl"
# The program did not ask the library to read its environment: a kernel directory that does not
# exist and knobs the command would refuse (abc) or act on (7 groups) change nothing.
out=$(consumer_run "$work/consumer_pc" CLREDUCE_KERNEL_DIR="$work/nowhere" CLREDUCE_FAST_GROUPS=abc) ||
  fail "consumer with CLREDUCE_FAST_GROUPS=abc: exit $?"
expect_in "$out" "verified, kernels $prefix/share/clreduce/cl"
out=$(consumer_run "$work/consumer_pc" CLREDUCE_FAST_GROUPS=7) || fail "consumer with CLREDUCE_FAST_GROUPS=7: exit $?"
expect_in "$out" "verified"

# --- The same program as a CMake project that asks for C++14: clreduce::clreduce raises it to
# C++17 (its headers need it), with every warning an error.
cp -r "$src/tests/consumer" "$work/consumer"
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON -DCMAKE_CXX_COMPILER="$cxx" > "$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; fail "consumer (CMake): configure"; }
cmake --build "$work/consumer/build" > "$work/consumer_build.log" 2>&1 ||
  { cat "$work/consumer_build.log"; fail "consumer (CMake, C++14 asked): build"; }
expect_in "$(grep -o -- '-std=[a-z+0-9]*' "$work/consumer/build/compile_commands.json" | sort -u | tr '\n' ' ')" "-std=c++17"
out=$(consumer_run "$work/consumer/build/consumer") || fail "consumer (CMake): exit $?"
expect_in "$out" "consumer: clreduce $version (macros $version), sum "

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

# --- own_queue: the program's own context and queue, its kernels chained with clreduce's
# compaction and reduction by events; checked against the host inside.
own_queue=$work/examples/build/own_queue
out=$("$own_queue" --device "$device" --size 300001 --threshold 0.75)
expect_in "$out" "verified"
expect_in "$out" "queue of the program's own"
out=$("$own_queue" --device "$device" --size 1000 --threshold 2)  # nothing kept: count 0
expect_in "$out" "above 2: 0 of 1000"
expect_in "$out" "verified"
code=0
"$own_queue" --size x > /dev/null 2>&1 || code=$?
expect_code "$code" 2 "own_queue with a bad --size"

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
# What is not a DIMACS file is named as what it is, at once (a FIFO is never opened to block on).
bad empty 2 "empty.gr: an empty file (no 'p sp N M' line)" '' --source 1
bad binary 2 "binary.gr:2: a NUL byte: a binary file, not a DIMACS graph" 'p sp 2 1\na 1 2\0 1\n' --source 1
bad long_line 2 "long_line.gr:2: a line longer than 4096 bytes" "c x\nc $(printf 'x%.0s' {1..5000})\n" --source 1
bad promises_more 2 "promises_more.gr:1: 'p sp' promises 1000000000 arcs, more than a file of 26 bytes can hold" \
  'p sp 2 1000000000\na 1 2 1\n' --source 1
head -c 1000000 /dev/zero > "$work/zeros.gr"
bad_path() {  # bad_path PATH WANT_EXIT WANT_TEXT [ARGS...]: within 60 s, one line, no output file
  local path=$1 want=$2 text=$3 code=0 err
  shift 3
  err=$(timeout 60 "$dijkstra" "$path" --device "$device" --output "$work/bad_path.npy" "$@" 2>&1 >/dev/null) || code=$?
  expect_code "$code" "$want" "$path"
  expect_in "$err" "$text"
  [[ $(printf '%s\n' "$err" | wc -l) == 1 ]] || fail "$path: more than one line: $err"
  ! ls "$work"/bad_path.npy* > /dev/null 2>&1 || fail "$path: an output file was written"
  checks=$((checks + 2))
}
bad_path "$work/zeros.gr" 2 "zeros.gr:1: a NUL byte: a binary file, not a DIMACS graph" --source 1
mkfifo "$work/fifo.gr"
bad_path "$work/fifo.gr" 2 "fifo.gr: not a regular file (a FIFO); give a .gr file" --source 1
bad_path /dev/zero 2 "/dev/zero: not a regular file (a character device)" --source 1
mkdir "$work/folder.gr"
bad_path "$work/folder.gr" 2 "folder.gr: a directory, not a graph file" --source 1
# Bytes from the graph and the command line are shown escaped, never sent to the terminal.
bad escape 2 "escape.gr:2: expected a 'c', 'p sp N M' or 'a U V W' line, got 'x\\x1B[2J\\x07 \\\\n'" \
  'p sp 2 1\nx\033[2J\007 \\n\na 1 2 1\n' --source 1
[[ $(cat "$work/escape.gr" | od -c) == *'033'* ]] || fail "escape.gr has no escape byte to test"
err=$("$dijkstra" "$work/escape.gr" --device "$device" --source 1 2>&1 >/dev/null) || true
[[ $err != *$'\033'* && $err != *$'\a'* ]] || fail "escape bytes reached stderr: $err"
printf 'p sp 2 1\na 1 2 1\n' > "$work/"$'name\033]0;x\a.gr'
bad_path "$work/"$'name\033]0;x\a.gr' 2 "--source 5 is outside 1..2 of $work/name\\x1B]0;x\\x07.gr" --source 5
checks=$((checks + 2))
# A graph whose arrays the host or device cannot hold: exit 5, one line, before allocating.
bad huge 5 "huge.gr: 2147483647 nodes and 0 arcs need about " 'p sp 2147483647 0\n' --source 1
printf 'p sp 100000000 0\n' > "$work/big.gr"  # within ulimit -v, the host's memory runs out first
code=0
err=$(ulimit -v 3000000; "$dijkstra" "$work/big.gr" --source 1 --device "$device" 2>&1 >/dev/null) || code=$?
expect_code "$code" 5 "big.gr under ulimit -v"
expect_in "$err" "big.gr: 100000000 nodes and 0 arcs need about "
expect_in "$err" " of host memory"
# Weights whose shortest paths could reach 2^63-1 (int64 distances, and the mark of an unreached
# node) are refused; the largest that cannot are computed exactly.
bad heavy 2 "heavy.gr: weights too large: a shortest path could reach 2^63-1" \
  'p sp 2 1\na 1 2 9223372036854775807\n' --source 1
bad heavy_path 2 "heavy_path.gr: weights too large" \
  'p sp 3 2\na 1 2 4611686018427387904\na 2 3 4611686018427387904\n' --source 1
printf 'p sp 3 2\na 1 2 4611686018427387903\na 2 3 4611686018427387903\n' > "$work/longest.gr"
out=$("$dijkstra" "$work/longest.gr" --source 1 --device "$device" --output "$work/longest.npy")
expect_in "$out" "distances: verified (3 of 3 nodes reachable)"
expect_in "$(npy_int64 "$work/longest.npy")" "0 4611686018427387903 9223372036854775806"
# Only the arcs a path can use count: a heavy self-loop or a heavier parallel arc does not.
printf 'p sp 2 3\na 1 2 9223372036854775807\na 1 2 5\na 2 2 9223372036854775807\n' > "$work/parallel.gr"
out=$("$dijkstra" "$work/parallel.gr" --source 1 --device "$device" --output "$work/parallel.npy")
expect_in "$out" "distances: verified (2 of 2 nodes reachable)"
expect_in "$(npy_int64 "$work/parallel.npy")" "0 5"
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
# pkg-config finds the moved prefix from the .pc file's own place.
expect_in "$(PKG_CONFIG_PATH="$moved/lib/pkgconfig" pkg-config --cflags --libs clreduce)" "$moved/"

echo "install_and_examples: $checks checks passed"

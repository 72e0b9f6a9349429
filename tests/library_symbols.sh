#!/usr/bin/env bash
# library_symbols.sh: libclreduce.so exports the public API alone and loads neither MPI nor
# OpenMP. Every exported (dynamic, defined) symbol must lie in namespace clreduce under a name
# the public headers declare (a class, a function or an operator of include/clreduce/*.hpp, or
# that class's type information and virtual table); an internal name (a variant, a plan, a
# session, clreduce::detail, a global function) fails, and so does a NEEDED library or a
# dependency of one that is MPI's or OpenMP's.
# usage: library_symbols.sh LIBRARY INCLUDE_DIR... (each holding clreduce/*.hpp)
set -euo pipefail
lib=$1
shift
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -f $lib ]] || fail "no library at $lib"

# --- The names the public headers declare, comments stripped.
headers=()
for dir in "$@"; do headers+=("$dir"/clreduce/*.hpp); done
code=$(sed -e 's://.*$::' "${headers[@]}")
declared=$({
  grep -oE '\b(class|struct)[[:space:]]+(CLREDUCE_API[[:space:]]+)?[A-Za-z_][A-Za-z0-9_]*' <<<"$code" |
    awk '{print $NF}'
  grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\(' <<<"$code" | sed -E 's/[[:space:]]*\($//'
  grep -oE 'operator[^A-Za-z0-9_[:space:](]+' <<<"$code"
} | sort -u)
for name in Device Error Bytes Value version reduce_variant_names; do
  grep -qxF "$name" <<<"$declared" || fail "the headers' names were not found (no $name)"
done

# --- The exported symbols.
symbols=$(nm -D --defined-only -C "$lib" | sed -E 's/^[0-9a-fA-F]* +[A-Za-z] +//')
count=$(grep -c . <<<"$symbols" || true)
bad=()
while IFS= read -r sym; do
  [[ -n $sym ]] || continue
  s=${sym#typeinfo name for }
  s=${s#typeinfo for }
  s=${s#vtable for }
  if [[ $s != clreduce::* ]]; then
    bad+=("$sym (outside namespace clreduce)")
    continue
  fi
  rest=${s#clreduce::}
  first=$(sed -E 's/^(operator[^A-Za-z0-9_[:space:](]+|[A-Za-z_][A-Za-z0-9_]*).*$/\1/' <<<"$rest")
  grep -qxF -- "$first" <<<"$declared" || bad+=("$sym ('$first' is not in the public headers)")
done <<<"$symbols"
if ((${#bad[@]})); then
  printf '  %s\n' "${bad[@]}" >&2
  fail "${#bad[@]} of $count exported symbols are not the public API"
fi
# The public API is there (a library that exports nothing would pass the loop above).
for want in 'clreduce::Device::Device(' 'clreduce::Device::reduce(' 'clreduce::Device::scan(' \
            'clreduce::Device::from_environment(' 'clreduce::version()' 'typeinfo for clreduce::Error' \
            'clreduce::tuning_from_env()' 'clreduce::dtype_name' 'clreduce::Reduction::enqueue(' \
            'clreduce::Scan::enqueue(' 'clreduce::Scan::enqueue_segmented(' \
            'clreduce::Compaction::enqueue(' 'clreduce::Predicate::where(' \
            'clreduce::Device::reduce_segments(' 'clreduce::Segments::from_offsets(' \
            'clreduce::Segments::along_axes(' 'clreduce::derived_name' 'clreduce::parse_derived('; do
  grep -qF -- "$want" <<<"$symbols" || fail "not exported: $want"
done

# --- No MPI and no OpenMP, needed directly or through another library.
needed=$(readelf -d "$lib" | grep NEEDED || true)
grep -q 'libOpenCL' <<<"$needed" || fail "libOpenCL is not NEEDED: $needed"
if grep -iE 'mpi|gomp|libomp|iomp|open-rte|open-pal' <<<"$needed"; then
  fail "the library needs MPI or OpenMP"
fi
loaded=$(ldd "$lib")
if grep -iE 'libmpi|gomp|libomp|iomp|open-rte|open-pal|pmix' <<<"$loaded"; then
  fail "loading the library loads MPI or OpenMP"
fi
echo "library_symbols: $count exported symbols, all public API; needs: $(sed -E 's/.*\[(.*)\]/\1/' <<<"$needed" | tr '\n' ' ')"

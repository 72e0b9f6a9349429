#!/usr/bin/env bash
# mpi_ranks.sh: runs the MPI module's test program as R ranks on this host.
#   usage: mpi_ranks.sh R PROGRAM SCRATCH_DIR [MPIEXEC]
# Exits 77 (skipped) when no mpirun is found. As root, Open MPI refuses to start unless told
# otherwise (--allow-run-as-root, or OMPI_ALLOW_RUN_AS_ROOT=1 and
# OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1); --oversubscribe lets R exceed the cores (CI has 2).
set -euo pipefail
ranks=$1 program=$2 scratch=$3 mpiexec=${4:-}
if [[ -z $mpiexec || ! -x $mpiexec ]]; then
  mpiexec=$(command -v mpirun || command -v mpiexec || true)
fi
if [[ -z $mpiexec ]]; then
  echo "mpi_ranks.sh: no mpirun found: skipped"
  exit 77
fi
mkdir -p "$scratch"
args=(-n "$ranks")
version=$("$mpiexec" --version 2>&1 || true)
if [[ $version == *"Open MPI"* || $version == *OpenRTE* ]]; then
  args=(--allow-run-as-root --oversubscribe --bind-to none "${args[@]}")
  export OMPI_MCA_rmaps_base_oversubscribe=1
fi
exec timeout 240 "$mpiexec" "${args[@]}" "$program" "$ranks" "$scratch"

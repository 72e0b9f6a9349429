#!/usr/bin/env bash
# setup.sh: installs what clreduce needs to build and test on Debian 12 or Ubuntu 24.04, and what
# its tools need (tools/bench.py plot: matplotlib; NumPy to make and read .npy files), Open MPI
# for MPI ranks (mpirun -n R clreduce ...), and what the Python package's build needs beside the
# package index (a virtual environment and Python's headers).
# Idempotent: does nothing when every package is already present. Needs root or sudo.
# When another apt or dpkg holds the package lock (an unattended upgrade, a second install), it
# waits for it, up to SETUP_LOCK_WAIT seconds (default 600), instead of failing.
set -euo pipefail

pkgs=(build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers
      pocl-opencl-icd clinfo libcli11-dev oclgrind python3 python3-numpy python3-matplotlib
      python3-venv python3-dev
      libopenmpi-dev openmpi-bin)
catch2_pkg=catch2
lock_wait=${SETUP_LOCK_WAIT:-600}

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

missing=()
for p in "${pkgs[@]}" "$catch2_pkg"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Catch2 must be v3: Debian 12's main suite has only v2.
catch2_v3() { [ -f /usr/include/catch2/catch_test_macros.hpp ]; }
if [ ${#missing[@]} -eq 0 ] && catch2_v3; then
  exit 0
fi

. /etc/os-release
export DEBIAN_FRONTEND=noninteractive
# apt-get waits for the dpkg lock itself (DPkg::Lock::Timeout, apt 1.9.11 and later: Debian 12,
# Ubuntu 24.04). The loop also retries what still fails on a held lock (apt-get update's lists
# lock, older apts): exit 100 with "Could not get lock" or "Unable to acquire/lock", until the
# deadline. Any other failure stops at once.
apt_get() {
  local deadline=$((SECONDS + lock_wait)) rc err
  err=$(mktemp)
  while :; do
    rc=0
    $SUDO apt-get -o DPkg::Lock::Timeout="$lock_wait" "$@" 2>"$err" || rc=$?
    cat "$err" >&2
    if [ $rc -eq 100 ] && [ $SECONDS -lt $deadline ] &&
       grep -qE "Could not get lock|Unable to acquire|Unable to lock" "$err"; then
      echo "setup.sh: the package lock is held by another process; retrying in 10 s (until ${lock_wait} s have passed)" >&2
      sleep 10
      continue
    fi
    rm -f "$err"
    return $rc
  done
}
if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
  list=/etc/apt/sources.list.d/clreduce-backports.list
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$list" >/dev/null
  fi
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${pkgs[@]}"
  apt_get install -y -qq --no-install-recommends -t bookworm-backports "$catch2_pkg"
else
  apt_get update -qq
  apt_get install -y -qq --no-install-recommends "${pkgs[@]}" "$catch2_pkg"
fi
catch2_v3 || { echo "setup.sh: Catch2 v3 headers not found after install" >&2; exit 1; }

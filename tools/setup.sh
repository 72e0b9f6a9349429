#!/usr/bin/env bash
# setup.sh: installs what clreduce needs to build and test on Debian 12 or Ubuntu 24.04.
# Idempotent: does nothing when every package is already present. Needs root or sudo.
set -euo pipefail

pkgs=(build-essential cmake pkg-config ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers
      pocl-opencl-icd clinfo libcli11-dev oclgrind python3 python3-numpy)
catch2_pkg=catch2

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
if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
  list=/etc/apt/sources.list.d/clreduce-backports.list
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deb http://deb.debian.org/debian bookworm-backports main" | $SUDO tee "$list" >/dev/null
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}"
  $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports "$catch2_pkg"
else
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" "$catch2_pkg"
fi
catch2_v3 || { echo "setup.sh: Catch2 v3 headers not found after install" >&2; exit 1; }

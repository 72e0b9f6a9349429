#!/usr/bin/env bash
# run.sh: installs the Python package from the source tree as a user does (`pip install .`, in a
# virtual environment) and runs its tests (pytest, tests/python) against NumPy.
# The environment and the wheel's CMake build directory are kept in WORK_DIR, so a later run
# installs nothing new and recompiles only what changed; the first needs the package index
# (scikit-build-core, nanobind, NumPy, pytest; PyOpenCL where it installs) and compiles the
# library (about 1.5 minutes on 2 cores).
# usage: run.sh PYTHON3 SOURCE_DIR WORK_DIR [WERROR]   (WERROR: ON builds the module with
# warnings as errors, as the CMake build it belongs to does)
set -euo pipefail
python=$1
src=$2
work=$3
werror=${4:-OFF}
venv=$work/venv
mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ ! -x $venv/bin/python ]]; then
  "$python" -m venv "$venv" ||
    fail "cannot create a virtual environment with $python (Debian and Ubuntu: apt-get install python3-venv, or run tools/setup.sh)"
fi
py=$venv/bin/python
# What the build and the tests need, installed once.
if ! "$py" -c "import scikit_build_core, nanobind, numpy, pytest" 2>/dev/null; then
  "$py" -m pip install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" \
    "numpy>=1.26" pytest || fail "pip could not install the build and test requirements"
fi
# PyOpenCL, optional: the tests of pyopencl arrays (test_pyopencl.py) skip without it. Tried
# once per environment (a marker file), so a machine without the package index is not slowed.
if ! "$py" -c "import pyopencl" 2>/dev/null && [[ ! -e $work/pyopencl-tried ]]; then
  "$py" -m pip install -q --disable-pip-version-check pyopencl ||
    echo "note: PyOpenCL could not be installed: the tests of pyopencl arrays are skipped" >&2
  touch "$work/pyopencl-tried"
fi
# The package itself, every time (an unchanged tree rebuilds nothing). No build isolation: the
# build requirements are the environment's, installed above, and so is its CMake build directory.
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} "$py" -m pip install -q \
  --disable-pip-version-check --no-build-isolation --no-deps --force-reinstall \
  --config-settings=build-dir="$work/wheel-build" \
  --config-settings=cmake.define.CLREDUCE_WERROR="$werror" "$src" || fail "pip install of the package failed"
# From outside the source tree, so that `import clreduce` is the installed package.
cd "$work"
"$py" -c "import clreduce, sys; print('clreduce', clreduce.__version__, 'from', clreduce.__file__, 'numpy', __import__('numpy').__version__)"
exec "$py" -m pytest -q -p no:cacheprovider "$src/tests/python"

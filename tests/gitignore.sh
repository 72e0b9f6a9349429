#!/usr/bin/env bash
# gitignore.sh: what the README, examples/README.md and docs/PYTHON.md tell a user to create inside
# the checkout (examples/build/, the .npy files their runs write in its top directory, the virtual
# environment .venv/) is ignored by git, and the sources beside it are not. Skipped (77) outside a
# git work tree, as in a source tarball.
# usage: gitignore.sh SOURCE_DIR
set -uo pipefail
src=$1
git -C "$src" rev-parse --is-inside-work-tree > /dev/null 2>&1 || { echo "not a git work tree: skipped"; exit 77; }
failed=0
for path in examples/build/CMakeCache.txt examples/build/dijkstra dist.npy scan.npy x.npy .venv/bin/python; do
  git -C "$src" check-ignore -q --no-index "$path" || { echo "FAIL: $path is not ignored"; failed=1; }
done
for path in examples/dijkstra.cpp examples/data/small.gr README.md tests/gitignore.sh pyproject.toml \
            python/clreduce/__init__.py python/src/module.cpp; do
  ! git -C "$src" check-ignore -q --no-index "$path" || { echo "FAIL: $path is ignored"; failed=1; }
done
((failed == 0)) && echo "gitignore: passed"
exit $failed

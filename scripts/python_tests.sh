#!/usr/bin/env bash
# Builds the Python package (python/: PyO3 extension + pure-Python glue) into a virtual
# environment and runs its pytest suite. Run by `cargo test --workspace`
# (crates/spindle-cli/tests/python_package.rs); by hand: scripts/python_tests.sh [PYTEST ARGS].
#
# The environment ($CARGO_TARGET_DIR/python-venv, or target/python-venv) is created on first
# use and filled from PyPI; later runs reuse it while the list below is unchanged. The
# extension is built with the same CARGO_TARGET_DIR as the workspace (release profile of
# python/Cargo.toml), so a rebuild only recompiles what changed.
#
# Exit status 77: no Python 3 with venv, or PyPI unreachable (the caller skips, visibly).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${SPINDLE_VENV:-$target/python-venv}"
base="${SPINDLE_PYTHON_BASE:-python3}"
requirements=("maturin>=1.5,<2" "pytest>=7" "pandas>=1.5" "pyarrow>=10" "ray>=2.5" "tqdm>=4")
stamp="$venv/.spindle-requirements"

if [ ! -x "$venv/bin/python" ]; then
  if ! "$base" -m venv "$venv"; then
    echo "python_tests: cannot create a virtual environment with $base -m venv" >&2
    rm -rf "$venv"
    exit 77
  fi
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "${requirements[*]}" ]; then
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "${requirements[@]}"; then
    echo "python_tests: pip could not install ${requirements[*]} (no network to PyPI?)" >&2
    exit 77
  fi
  echo "${requirements[*]}" >"$stamp"
fi
export VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" CARGO_TARGET_DIR="$target"
cd "$root/python"
maturin develop --release --quiet
exec python -m pytest -q -p no:cacheprovider tests "$@"

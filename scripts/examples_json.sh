#!/usr/bin/env bash
# Runs every examples/**/*.toml with a given spindle binary and keeps each --json output and
# stderr, to compare two binaries' results (scripts/compare_reports.py).
#
# usage: scripts/examples_json.sh BINARY OUTDIR
#   files with [[axis]] tables run as `sweep --jobs 1 --json`, the others as `run --json`;
#   OUTDIR/log lists each file with its exit status.
set -uo pipefail
bin=$1
out=$2
mkdir -p "$out"
cd "$(dirname "$0")/.."
for f in $(find examples -name '*.toml' | sort); do
  name=$(echo "$f" | tr '/' '_')
  if grep -q '^\[\[axis\]\]' "$f"; then
    "$bin" sweep --jobs 1 --json "$f" >"$out/$name.json" 2>"$out/$name.err"
  else
    "$bin" run --json "$f" >"$out/$name.json" 2>"$out/$name.err"
  fi
  echo "$f rc=$?" >>"$out/log"
done

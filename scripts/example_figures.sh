#!/usr/bin/env bash
# Makes the figure each example README shows (examples/<dir>/<name>.svg): runs the example
# with spindle and draws its results with `spindle plot`; and the example HTML report the
# README links (examples/sr_array/report.html, with the results it shows beside it). Run from anywhere; about a minute
# with a release build on 2 cores (ew_array, paged and dr take ~15 s each).
#
# usage: scripts/example_figures.sh [--out DIR] [--only dir1,dir2]
#   --out DIR    write the figures (and the results they come from) under DIR/<dir>/
#                instead of examples/<dir>/ (tests regenerate figures this way)
#   --only LIST  only these example directories
#   SPINDLE=BIN  the spindle binary (default: cargo build --release, then its binary)
#
# The dr figure replays the TPC-C block trace in ../shared; without it that figure is
# skipped with a message and the committed one is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
out=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--only dir1,dir2]" >&2; exit 2 ;;
  esac
done
if [ -z "${SPINDLE:-}" ]; then
  cargo build --release -q -p spindle-cli
  SPINDLE="${CARGO_TARGET_DIR:-target}/release/spindle"
fi
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# dir | figure name | how the results are made | spindle plot's options
figures=(
  "sr_array|fig4_9_read_write_mix|sweep --csv examples/sr_array/fig4_9_read_write_mix.toml|--title|SR-Array fig. 4.9: 6 disks against the read fraction"
  "ew_array|fig4_schedulers_queue|sweep --csv examples/ew_array/fig4_schedulers_queue.toml|--title|EW-Array fig. 4: eager-writing schedulers against the queue depth"
  "raid5|fig9_10_cache_size|sweep --csv examples/raid5/fig9_10_cache_size.toml|--x|array.write_cache_bytes|--log-y|--title|RAID-5 figs. 9-10: response time against the write-cache size"
  "paged|fig4_write_fraction|sweep --csv examples/paged/fig4_write_fraction.toml|--title|Paged disk fig. 4: latency against the write fraction"
  "track_aligned|raid0_track_vs_fixed|run --json examples/track_aligned/raid0_track_vs_fixed.toml|--y|throughput_mb_s|--y|mean_ms|--title|Track-aligned RAID-0 against fixed stripe units"
  "bench|sweep_36_mix|sweep --csv examples/bench/sweep_36_mix.toml|--title|36 disks: layouts against the queue depth and read mix"
  "dr|tpcc_block_forwarding|dr --json examples/dr/tpcc_block_forwarding.toml|--y|mean_w|--y|throughput_iops|--title|DR secondary: deferred vs immediate updates (TPC-C block forwarding)"
)

made=0
for entry in "${figures[@]}"; do
  IFS='|' read -r -a f <<<"$entry"
  dir=${f[0]} name=${f[1]} cmd=${f[2]}
  plot_args=("${f[@]:3}")
  if [ -n "$only" ] && [[ ",$only," != *",$dir,"* ]]; then
    continue
  fi
  if [ "$dir" = dr ] && [ ! -d ../shared/traces ]; then
    echo "skipping examples/dr: its trace is in ../shared, which is absent (the committed figure stays)" >&2
    continue
  fi
  dest=${out:-examples}/$dir
  mkdir -p "$dest"
  ext=${cmd#* --}; ext=${ext%% *}
  res="$results/$name.$ext"
  # shellcheck disable=SC2086 # the command's words
  "$SPINDLE" --quiet $cmd >"$res"
  if [ -n "$out" ]; then cp "$res" "$dest/$name.$ext"; fi
  "$SPINDLE" plot "$res" -o "$dest/$name.svg" "${plot_args[@]}"
  echo "$dest/$name.svg"
  made=$((made + 1))
  # The example HTML report the README links: the SR-Array figure's experiment, results,
  # figure and the README's recorded verdict (the results are kept beside it).
  if [ "$dir" = sr_array ]; then
    cp "$res" "$dest/$name.$ext"
    "$SPINDLE" report "examples/$dir/$name.toml" "$dest/$name.$ext" "examples/$dir/README.md" \
      -o "$dest/report.html" --title "SR-Array dissertation, fig. 4.9"
    echo "$dest/report.html"
  fi
done
if [ "$made" = 0 ]; then
  echo "no figure made (--only $only names no example directory?)" >&2
  exit 2
fi

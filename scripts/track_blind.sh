#!/usr/bin/env bash
# Head tracking checked blind on emulated library drives: each DRIVE (a library id) gets
# its seeded noise turned on and is served alone by `spindle serve --realtime`; `spindle
# calibrate --realtime` measures it over NBD (the first ZONES zones, default 2), then
# `spindle calibrate --check` runs REQUESTS random 4 KiB reads (after 200 of warm-up)
# predicted by the calibrated model. Prints one Markdown table row per drive
# (docs/calibrate.md, "Head tracking").
#
#   scripts/track_blind.sh [--zones N] [--requests N] DRIVE...
#
# Needs python3 and a built spindle (SPINDLE, default target/release/spindle).
set -euo pipefail

zones=2
requests=2000
drives=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --zones) zones="$2"; shift 2 ;;
        --requests) requests="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) drives+=("$1"); shift ;;
    esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
spindle="${SPINDLE:-$repo/target/release/spindle}"
work="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"
server=""
cleanup() { [[ -n "$server" ]] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
echo "| drive | rpm | requests | late / early | mean error | stdev | abs error p50 / p90 | within ±100 / ±200 µs | mean access | demerit / access | abs error / access (mean / median) | host delay | interval noise |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for d in "${drives[@]}"; do
    dir="$work/$d"; mkdir -p "$dir"
    cp "$repo/drives/$d.toml" "$dir/drive.toml"
    printf '\n[noise]\nseek_rel_sigma = 0.02\nrotation_sigma_ms = 0.01\n' >> "$dir/drive.toml"
    printf 'seed = 7\n[drive]\nmodel = "%s"\nnoise = true\n[array]\nlayout = "jbod"\ndisks = 1\n[workload]\nkind = "closed"\n[run]\nrequests = 1\n' \
        "$dir/drive.toml" > "$dir/exp.toml"
    "$spindle" serve "$dir/exp.toml" --data "$dir/data" --unix "$dir/sock" --realtime 2>"$dir/serve.log" &
    server=$!
    for _ in $(seq 100); do [[ -S "$dir/sock" ]] && break; sleep 0.1; done
    uri="nbd+unix:///spindle?socket=$dir/sock"
    if ! "$spindle" calibrate "$uri" -o "$dir/cal.toml" --zones "$zones" --realtime --quiet 2>"$dir/cal.log"; then
        echo "| $d | not calibrated: $(tail -1 "$dir/cal.log" | cut -c1-160) |"
    elif ! "$spindle" calibrate "$uri" --check "$dir/cal.toml" --requests "$requests" --realtime \
        --quiet --json "$dir/check.json" >/dev/null 2>"$dir/check.log"; then
        echo "| $d | check failed: $(tail -1 "$dir/check.log" | cut -c1-160) |"
    else
        python3 - "$repo/drives/$d.toml" "$dir/check.json" "$d" <<'PY'
import json, sys, tomllib
lib = tomllib.load(open(sys.argv[1], "rb"))
r = json.load(open(sys.argv[2]))
a = r["accuracy"]
pct = lambda x: f"{100 * x:.2f} %"
print(f"| {sys.argv[3]} | {lib['rpm']:.0f} | {a['requests']} | {a['misses']} / {a['early']} "
      f"| {a['mean_error_us']:.1f} µs | {a['stdev_error_us']:.0f} µs "
      f"| {a['abs_error_p50_us']:.1f} / {a['abs_error_p90_us']:.1f} µs "
      f"| {pct(a['within_100us'])} / {pct(a['within_200us'])} | {a['mean_service_us']:.0f} µs "
      f"| {pct(a['demerit_share'])} | {pct(a['mean_abs_rel_error'])} / {pct(a['median_abs_rel_error'])} "
      f"| {r['delay_constant_us']:.0f} µs + {100 * r['delay_slope']:.2f} % | {r['interval_sigma_us']:.0f} µs |")
PY
    fi
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null || true; server=""
done

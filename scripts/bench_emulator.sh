#!/usr/bin/env bash
# The emulator benchmark: each experiment is served by `spindle serve` and driven by fio's
# nbd engine with the experiment's own closed workload (queue depth, read fraction, request
# size, over the whole export); the IOPS fio achieves are compared with `spindle run`'s
# prediction for the same workload: as many requests as the emulator answered, measured
# over those fio measured (after its ramp). The length matters: an array with delayed
# writes fills its NVRAM table over the first ~100,000 requests and slows down (the
# experiment's own 20,000-request run predicts ~13 % more). spindle's lateness (actual -
# simulated answer time) is read from its final statistics. Prints one Markdown table row
# per experiment.
#
#   scripts/bench_emulator.sh [--runtime SECONDS] [--realtime] EXPERIMENT.toml...
#
# Needs fio (Debian `fio`, with its nbd engine) and python3; builds spindle if needed.
# `--realtime` passes --realtime to spindle serve (SCHED_FIFO clock thread; needs root).
set -euo pipefail

runtime=30
serve_flags=()
files=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runtime) runtime="$2"; shift 2 ;;
        --realtime) serve_flags+=(--realtime); shift ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) files+=("$1"); shift ;;
    esac
done
if [[ ${#files[@]} -eq 0 ]]; then
    echo "usage: $0 [--runtime SECONDS] [--realtime] EXPERIMENT.toml..." >&2
    exit 2
fi
for tool in fio python3; do
    command -v "$tool" >/dev/null || { echo "$0: $tool is not installed" >&2; exit 2; }
done

root=$(cd "$(dirname "$0")/.." && pwd)
spindle="${SPINDLE:-$root/target/release/spindle}"
if [[ -z "${SPINDLE:-}" ]]; then
    (cd "$root" && cargo build --release -q -p spindle-cli)
fi

work=$(mktemp -d)
serve_pid=""
cleanup() {
    if [[ -n "$serve_pid" ]] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -INT "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# field FILE KEY: a [workload] value of the experiment (TOML, via python's tomllib).
field() {
    python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["workload"][sys.argv[2]])' "$1" "$2"
}

echo "| experiment | predicted IOPS | emulated IOPS | emulated / predicted | lateness mean | p50 | p99 | p99.9 | max | mean in array |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for exp in "${files[@]}"; do
    [[ -f "$exp" ]] || { echo "$0: $exp: no such file" >&2; exit 2; }
    kind=$(field "$exp" kind)
    [[ "$kind" == closed ]] || { echo "$0: $exp: [workload] kind is $kind; the benchmark needs a closed workload" >&2; exit 2; }
    qd=$(field "$exp" queue_depth)
    reads=$(python3 -c "print(round(100 * float('$(field "$exp" read_fraction)')))")
    bs=$(field "$exp" size_bytes)

    data="$work/data"
    sock="$work/nbd.sock"
    rm -rf "$data"
    "$spindle" serve "$exp" --data "$data" --unix "$sock" "${serve_flags[@]}" 2>"$work/serve.log" &
    serve_pid=$!
    for _ in $(seq 600); do
        [[ -S "$sock" ]] && break
        kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
        sleep 0.05
    done
    uri="nbd+unix:///spindle?socket=$sock"
    fio --name=bench --ioengine=nbd --uri="$uri" --rw=randrw --rwmixread="$reads" \
        --bs="$bs" --iodepth="$qd" --norandommap --randrepeat=0 \
        --ramp_time=3 --runtime="$runtime" --time_based --output-format=json \
        >"$work/fio.out" 2>"$work/fio.err" || { cat "$work/fio.err" >&2; exit 1; }
    kill -INT "$serve_pid"
    wait "$serve_pid" || { cat "$work/serve.log" >&2; exit 1; }
    serve_pid=""
    # emulated IOPS, and the requests fio measured (after its ramp)
    fio_counts=$(python3 -c '
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]
if job["error"]:
    sys.exit("fio reported error %d" % job["error"])
print(round(job["read"]["iops"] + job["write"]["iops"]), job["read"]["total_ios"] + job["write"]["total_ios"])' "$work/fio.out")
    read -r emulated measured <<<"$fio_counts"
    # spindle serve: stopped: N requests (R reads, W writes, F flushes) in ...
    answered=$(python3 -c '
import re, sys
line = [l for l in open(sys.argv[1]) if "stopped:" in l][-1]
print(re.search(r"stopped: ([0-9]+) requests", line).group(1))' "$work/serve.log")
    warmup=$((answered > measured ? answered - measured : 0))
    predicted=$("$spindle" run "$exp" --json --set run.requests="$answered" \
        --set run.warmup_requests="$warmup" --set run.cooldown_requests=0 |
        python3 -c 'import json, sys; print(round(json.load(sys.stdin)["throughput_iops"]))')
    # spindle serve: stopped: N requests (...) in T s, X IOPS; lateness mean M µs, p50 A µs, ...
    lateness=$(python3 -c '
import re, sys
line = [l for l in open(sys.argv[1]) if "stopped:" in l][-1]
v = dict(re.findall(r"(mean|p50|p99\.9|p99|max) ([0-9.]+) µs", line))
q = re.search(r"([0-9.]+) requests in the array", line).group(1)
print(" | ".join(["%s µs" % v[k] for k in ("mean", "p50", "p99", "p99.9", "max")] + [q]))' "$work/serve.log")
    ratio=$(python3 -c "print('%.1f %%' % (100 * $emulated / $predicted))")
    echo "| $(basename "$exp" .toml) | $predicted | $emulated | $ratio | $lateness |"
done

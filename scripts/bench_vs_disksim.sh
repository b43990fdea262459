#!/usr/bin/env bash
# spindle and DiskSim 4.0 side by side on the same work: the four workloads of
# ../shared/tools/disksim-4.0/bench/ on DiskSim's own Cheetah 9LP model (with its buffer),
# 1,000,000 random 4 KiB requests, 60 % reads:
#   (a)  closed loop, Q = 1, FCFS
#   (b)  open-loop trace (gen_trace.py 1000000 13.655943 12345, ~70 % load), FCFS
#   (c1) the same trace, SPTF (DiskSim) / SATF (spindle), at most 16 outstanding
#   (c2) closed loop, 16 outstanding, SPTF / SATF
# Builds DiskSim from ../shared/tools/disksim-4.0 into a temporary folder (never into the
# repository) and spindle with cargo, runs each workload RUNS times in both simulators,
# alternating which goes first, and prints the medians of the whole-process wall times and
# of the paired ratios as a Markdown table, and the same for CPU time (user + system), which
# other load on the machine disturbs less than wall time.
#
#   scripts/bench_vs_disksim.sh [RUNS]          (default 5)
#
# env: SHARED (default ../shared beside the checkout); DISKSIM=path of a built disksim to
# skip the build; SPINDLE=path of a spindle binary to skip cargo; WORKLOADS (default
# "a b c1 c2"). Needs gcc, make, bison, flex (for DiskSim), python3 (the trace), cargo.
set -euo pipefail

runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
ds_src=$shared/tools/disksim-4.0
model=$shared/validation/disksim/cheetah9LP
workloads=${WORKLOADS:-a b c1 c2}
for d in "$ds_src/bench" "$model"; do
  [ -d "$d" ] || { echo "bench_vs_disksim.sh: $d is absent" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/bench_vs_disksim.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ -z "${DISKSIM:-}" ]; then
  echo "building DiskSim into $work/disksim …" >&2
  "$ds_src/build.sh" "$work/disksim" >&2
  DISKSIM=$work/disksim/bin/disksim
fi
if [ -z "${SPINDLE:-}" ]; then
  echo "building spindle (release) …" >&2
  (cd "$root" && cargo build --release --quiet -p spindle-cli)
  SPINDLE=$root/target/release/spindle
fi

run=$work/run
mkdir -p "$run"
cp "$ds_src"/bench/* "$model"/* "$run"/
chmod -R u+w "$run"
cd "$run"
echo "generating the 1,000,000-request trace …" >&2
python3 gen_trace.py 1000000 13.655943 12345 >rand4k_1M.trace

overrides=(disk0 "Max queue length" 16 disk0 "Scheduler:Scheduling policy" 8)
# The command of workload $2 in simulator $1 (disksim or spindle), into the array cmd.
set_cmd() {
  case $1-$2 in
    disksim-a) cmd=("$DISKSIM" synth_closed_qd1.parv out.outv ascii 0 1) ;;
    disksim-b) cmd=("$DISKSIM" trace_cheetah9LP.parv out.outv ascii rand4k_1M.trace 0) ;;
    disksim-c1) cmd=("$DISKSIM" trace_cheetah9LP.parv out.outv ascii rand4k_1M.trace 0 "${overrides[@]}") ;;
    disksim-c2) cmd=("$DISKSIM" synth_closed_qd16.parv out.outv ascii 0 1 "${overrides[@]}") ;;
    spindle-a) cmd=("$SPINDLE" --quiet run spindle_a_closed_qd1.toml) ;;
    spindle-b) cmd=("$SPINDLE" --quiet run spindle_b_trace_fcfs.toml) ;;
    spindle-c1) cmd=("$SPINDLE" --quiet run spindle_c1_trace_satf16.toml) ;;
    spindle-c2) cmd=("$SPINDLE" --quiet run spindle_c2_closed_qd16_satf.toml) ;;
    *) echo "bench_vs_disksim.sh: unknown workload $2" >&2; exit 1 ;;
  esac
}
# Whole-process wall and CPU (user + system) time of one run, in seconds: "WALL CPU".
timed() {
  local cmd
  set_cmd "$1" "$2"
  /usr/bin/time -f '%e %U %S' -o "$work/last.time" "${cmd[@]}" >/dev/null 2>"$work/last.err" ||
    { cat "$work/last.err" >&2; exit 1; }
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$work/last.time"
}

times=$work/times.tsv
: >"$times"
for i in $(seq 1 "$runs"); do
  for w in $workloads; do
    if [ $((i % 2)) = 1 ]; then
      d=$(timed disksim "$w"); s=$(timed spindle "$w")
    else
      s=$(timed spindle "$w"); d=$(timed disksim "$w")
    fi
    printf '%s\t%s\t%s\n' "$w" "$d" "$s" >>"$times"
    echo "run $i ($w): DiskSim ${d% *} s wall, ${d#* } s CPU; spindle ${s% *} s wall, ${s#* } s CPU" >&2
  done
done

python3 - "$times" "$runs" <<'EOF'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().splitlines()]
names = {'a': '(a) closed, Q=1, FCFS', 'b': '(b) open-loop trace, FCFS',
         'c1': '(c1) trace, SPTF/SATF, <= 16 outstanding', 'c2': '(c2) closed, Q=16, SPTF/SATF'}
med = statistics.median
print(f"Medians of {sys.argv[2]} alternating pairs; ratio = spindle / DiskSim time of each pair.")
print()
print("| workload | DiskSim wall s | spindle wall s | wall ratio | speed-up (wall) | DiskSim CPU s | spindle CPU s | CPU ratio | speed-up (CPU) |")
print("|---|---|---|---|---|---|---|---|---|")
for w in dict.fromkeys(r[0] for r in rows):
    d = [tuple(map(float, r[1].split())) for r in rows if r[0] == w]
    s = [tuple(map(float, r[2].split())) for r in rows if r[0] == w]
    wall = med(b[0] / a[0] for a, b in zip(d, s))
    cpu = med(b[1] / max(a[1], 0.01) for a, b in zip(d, s))
    print(f"| {names[w]} | {med(x[0] for x in d):.2f} | {med(x[0] for x in s):.2f} | {wall:.3f} | {1 / wall:.1f}x "
          f"| {med(x[1] for x in d):.2f} | {med(x[1] for x in s):.2f} | {cpu:.3f} | {1 / cpu:.1f}x |")
EOF

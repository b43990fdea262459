#!/usr/bin/env bash
# Fuzzes spindle's input-facing code with cargo-fuzz (libFuzzer), one target at a time.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET | -runs=N] [TARGET...]
#   SECONDS_PER_TARGET  how long each target runs (default 60)
#   -runs=N             instead: N executions per target
#   TARGET              default: every target of fuzz/Cargo.toml
#
# Each target's corpus fuzz/corpus/TARGET (not committed) is first seeded by
# scripts/fuzz_seeds.py from fuzz/seeds/TARGET (committed), examples/, drives/ and ../shared
# (trace heads, DiskSim models; SHARED=dir overrides). A crash, timeout or out-of-memory
# input lands in fuzz/artifacts/TARGET/; to keep one as a regression input, copy it to
# fuzz/regressions/TARGET/ (crates/*/tests/fuzz_corpus.rs replays those on stable) and add
# a test with its bytes next to the fix. Targets are built optimised with debug assertions and
# overflow checks on (as the release profile) and without a sanitizer (safe Rust; about 3x the
# executions per second of AddressSanitizer). Prints executions and crashes per target; exits 1
# if any target crashed.
#
# The text-format targets get the dictionary fuzz/dicts/TARGET.dict, else fuzz/dicts/numbers.dict
# (extreme numbers).
#
# env: SHARED (default ../shared beside the checkout); FUZZ_NICE (default 10);
# FUZZ_ARGS extra libFuzzer flags (e.g. "-fork=1 -ignore_crashes=1" to go on past crashes).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${SHARED:-$root/../shared}
nice_n=${FUZZ_NICE:-10}

limit=(-max_total_time=60)
if [ $# -gt 0 ]; then
  case $1 in
    -runs=*) limit=("$1") ;;
    *[!0-9]* | '') echo "usage: $0 [SECONDS_PER_TARGET | -runs=N] [TARGET...]" >&2; exit 2 ;;
    *) limit=(-max_total_time="$1") ;;
  esac
  shift
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\(.*\)"$/\1/p' "$root/fuzz/Cargo.toml" | grep -v '^spindle-fuzz$')
fi

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: needs the nightly toolchain and cargo-fuzz (rustup toolchain install nightly; cargo install cargo-fuzz)" >&2
  exit 2
fi

cd "$root"
python3 "$root/scripts/fuzz_seeds.py" "$root" "$shared" "$root/fuzz/corpus"
echo "fuzz.sh: building the fuzz targets (cargo +nightly fuzz build -O -a -s none)" >&2
if ! nice -n "$nice_n" cargo +nightly fuzz build -O -a -s none >"$root/fuzz/build.log" 2>&1; then
  tail -30 "$root/fuzz/build.log" >&2
  exit 2
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/artifacts/$t"
  before=$(find "fuzz/artifacts/$t" -type f | wc -l)
  dict=()
  case $t in
    nbd_*) ;;
    *) if [ -f "fuzz/dicts/$t.dict" ]; then dict=(-dict="fuzz/dicts/$t.dict"); else dict=(-dict=fuzz/dicts/numbers.dict); fi ;;
  esac
  start=$(date +%s)
  echo "fuzz.sh: $t: ${limit[*]} ${dict[*]}" >&2
  # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
  if nice -n "$nice_n" cargo +nightly fuzz run -O -a -s none "$t" "fuzz/corpus/$t" -- \
    "${limit[@]}" "${dict[@]}" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 ${FUZZ_ARGS:-} \
    >"$logs/$t.log" 2>&1; then
    status=ok
  else
    status="exit $?"
  fi
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -1)
  if [ -z "$execs" ]; then # fork mode prints no final stats: the last status line
    execs=$(grep -o '^#[0-9]*' "$logs/$t.log" | tail -1 | tr -d '#')
  fi
  after=$(find "fuzz/artifacts/$t" -type f | wc -l)
  crashes=$((after - before))
  if [ "$crashes" -gt 0 ] || [ "$status" != ok ]; then
    failed=1
    tail -40 "$logs/$t.log" >&2
    cp "$logs/$t.log" "fuzz/artifacts/$t/last-run.log"
  fi
  summary+=("$(printf '%-18s %12s execs %6ss %3s crashes  (%s)' "$t" "${execs:-?}" "$secs" "$crashes" "$status")")
done
printf '%s\n' "${summary[@]}"
exit $failed

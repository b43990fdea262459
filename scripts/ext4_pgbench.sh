#!/usr/bin/env bash
# ext4 and PostgreSQL (pgbench) on an array emulated by `spindle serve`, through nbdfuse and a
# loop device with direct I/O and 4 KiB sectors (docs/emulator.md, "ext4 and PostgreSQL").
#
#   scripts/ext4_pgbench.sh [OPTIONS] EXPERIMENT.toml [SCALE [SECONDS]]   # defaults: 10, 20
#   scripts/ext4_pgbench.sh --check                                       # prerequisites only
#
# Options (before EXPERIMENT.toml):
#   --record FILE        record the host requests of the pgbench run (`spindle serve --record`,
#                        docs/emulator.md) as a DiskSim trace in FILE: the whole session is
#                        recorded, and FILE keeps the requests from the start of the pgbench
#                        run on (mkfs, initdb and pgbench -i dropped); `spindle trace stats
#                        FILE` is printed at the end. FILE must not be a directory or device.
#   --clients N          pgbench clients (default 4), on min(N, 4) threads
#   --transactions N     each client runs N transactions (pgbench -t) instead of SECONDS
#   --pg-set NAME=VALUE  a PostgreSQL setting (postgres -c), e.g. checkpoint_timeout=30s;
#                        repeatable
#
# Serves the experiment's array from a fresh data directory, mounts the export as a file with
# nbdfuse, attaches it to a loop device (--direct-io=on --sector-size 4096), makes ext4 on it,
# creates a PostgreSQL cluster there, runs `pgbench -i -s SCALE` and `pgbench -c 4 -j 2 -T
# SECONDS`, then stops PostgreSQL, unmounts, checks the file system (e2fsck -fn), detaches the
# loop device, unmounts nbdfuse and stops spindle with SIGINT. Prints pgbench's report,
# spindle's statistics (SIGUSR1 before and after the run, and the final ones) and spindle's
# exit status. Teardown runs whatever happens. Exit status 0 only if every step, the file
# system check and spindle's clean stop succeeded; 3 if a prerequisite is missing (a tool,
# a package), 4 if the machine cannot (not root, no /dev/fuse, no loop device).
#
# Needs root, /dev/fuse, a free loop device, nbdfuse (libnbd-bin), mkfs.ext4 and e2fsck
# (e2fsprogs), the PostgreSQL server binaries (postgresql) and a system user to run them.
# The array must hold the file system: 1 GiB is enough for SCALE 10.
#
# Environment:
#   SPINDLE         the spindle binary (default: target/release/spindle, else spindle on PATH)
#   PG_BIN          PostgreSQL server binaries (default: newest /usr/lib/postgresql/*/bin)
#   PG_USER         the system user PostgreSQL runs as (default: postgres)
#   COUNT_INFLIGHT  1: put scripts/nbd_inflight.py between nbdfuse and spindle and print how
#                   many requests were in flight and how many were not 4 KiB-aligned
#   KEEP            1: keep the work directory (logs, the disks' files, the whole session's
#                   recording with --record)
#   TMPDIR          where the work directory goes (the disks' files: on /dev/shm spindle's
#                   fsyncs cost nothing, which speeds up a long --record capture)
set -euo pipefail
PATH="$PATH:/usr/sbin:/sbin" # losetup, mkfs.ext4, e2fsck for a non-root PATH under sudo

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"

die() { echo "ext4_pgbench: $*" >&2; exit 1; }
missing() { echo "ext4_pgbench: missing prerequisite: $*" >&2; exit 3; }
# What no package brings: privileges and kernel devices of this machine.
unable() { echo "ext4_pgbench: this machine cannot: $*" >&2; exit 4; }

check_prerequisites() {
  [ "$(id -u)" = 0 ] || unable "run as root (loop devices, mount)"
  [ -c /dev/fuse ] || unable "open /dev/fuse (the fuse kernel module)"
  local tool
  for tool in nbdfuse:libnbd-bin losetup:mount mount:mount umount:mount mountpoint:util-linux \
    runuser:util-linux mkfs.ext4:e2fsprogs e2fsck:e2fsprogs; do
    command -v "${tool%%:*}" >/dev/null || missing "${tool%%:*} (Debian package ${tool#*:})"
  done
  losetup -f >/dev/null 2>&1 || unable "find a free loop device (losetup -f failed)"
  if [ -z "${PG_BIN:-}" ]; then
    PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  fi
  for tool in initdb pg_ctl pgbench; do
    [ -x "${PG_BIN:-/nonexistent}/$tool" ] ||
      missing "PostgreSQL's $tool (Debian package postgresql; or set PG_BIN)"
  done
  PG_USER="${PG_USER:-postgres}"
  id -u "$PG_USER" >/dev/null 2>&1 ||
    missing "system user $PG_USER to run PostgreSQL (Debian package postgresql; or set PG_USER)"
  if [ -z "${SPINDLE:-}" ]; then
    if [ -x "$repo/target/release/spindle" ]; then SPINDLE="$repo/target/release/spindle"
    else SPINDLE="$(command -v spindle || true)"; fi
  fi
  [ -n "$SPINDLE" ] && [ -x "$SPINDLE" ] ||
    missing "the spindle binary (cargo build --release -p spindle-cli, or set SPINDLE)"
  if [ "${COUNT_INFLIGHT:-0}" = 1 ]; then
    command -v python3 >/dev/null || missing "python3 (COUNT_INFLIGHT=1)"
  fi
}

if [ "${1:-}" = --check ]; then
  check_prerequisites
  echo "ext4_pgbench: prerequisites present (spindle: $SPINDLE, PostgreSQL: $PG_BIN)"
  exit 0
fi
usage="usage: $0 [--record FILE] [--clients N] [--transactions N] [--pg-set NAME=VALUE]...\
 EXPERIMENT.toml [SCALE [SECONDS]] | --check"
record="" clients=4 transactions="" pg_sets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --record) [ $# -ge 2 ] || die "$usage"; record="$2"; shift 2 ;;
    --clients) [ $# -ge 2 ] || die "$usage"; clients="$2"; shift 2 ;;
    --transactions) [ $# -ge 2 ] || die "$usage"; transactions="$2"; shift 2 ;;
    --pg-set) [ $# -ge 2 ] || die "$usage"; pg_sets+=(-c "$2"); shift 2 ;;
    --) shift; break ;;
    -*) die "unknown option $1; $usage" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 3 ] || die "$usage"
experiment="$1"
scale="${2:-10}"
duration="${3:-20}"
[ -r "$experiment" ] || die "$experiment: not a readable experiment file"
for n in "$scale:SCALE" "$duration:SECONDS" "$clients:--clients" "${transactions:-1}:--transactions"; do
  [[ "${n%%:*}" =~ ^[1-9][0-9]*$ ]] || die "${n#*:} must be a whole number > 0, got '${n%%:*}'"
done
for ((i = 1; i < ${#pg_sets[@]}; i += 2)); do
  [[ "${pg_sets[i]}" == ?*=* ]] || die "--pg-set takes NAME=VALUE, got '${pg_sets[i]}'"
done
if [ -n "$record" ]; then
  [ ! -e "$record" ] || [ -f "$record" ] ||
    die "--record $record: exists and is not a regular file; not overwriting it"
  [ -d "$(dirname "$record")" ] || die "--record $record: no directory $(dirname "$record")"
  record="$(cd "$(dirname "$record")" && pwd)/$(basename "$record")"
fi
check_prerequisites

spindle_pid="" proxy_pid="" nbdfuse_pid="" loop="" fs_mounted="" pg_started=""
spindle_status="" start_ns="$(date +%s%N)"

step() {
  local now
  now="$(date +%s%N)"
  printf '== %6.1f s  %s\n' "$(((now - start_ns) / 1000000))e-3" "$*"
}

as_pg() { runuser -u "$PG_USER" -- "$@"; }

# Waits up to $2 seconds for process $1 to exit; returns 1 if it is still running.
wait_gone() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# Asks spindle for its statistics (SIGUSR1) and prints the line it adds to its log.
spindle_stats() {
  local before i
  before="$(grep -c 'spindle serve: [0-9]' "$work/spindle.log" || true)"
  kill -USR1 "$spindle_pid"
  for ((i = 0; i < 50; i++)); do
    if [ "$(grep -c 'spindle serve: [0-9]' "$work/spindle.log" || true)" -gt "$before" ]; then
      echo "spindle $1: $(grep 'spindle serve: [0-9]' "$work/spindle.log" | tail -n 1 |
        sed 's/^spindle serve: //')"
      return
    fi
    sleep 0.1
  done
  echo "spindle $1: (no statistics within 5 s)"
}

# Undoes whatever is set up, in reverse order. Every step is attempted; returns 1 if one
# failed. Run by the normal path and, for anything left, by the EXIT trap.
teardown() {
  local failed=0
  if [ -n "$pg_started" ]; then
    as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m fast -w -t 120 stop >/dev/null ||
      { echo "ext4_pgbench: pg_ctl stop failed" >&2; failed=1; }
    pg_started=""
  fi
  if [ -n "$fs_mounted" ]; then
    umount "$fs_dir" || { echo "ext4_pgbench: umount $fs_dir failed" >&2; failed=1; }
    fs_mounted=""
  fi
  if [ -n "$loop" ]; then
    losetup -d "$loop" || { echo "ext4_pgbench: losetup -d $loop failed" >&2; failed=1; }
    loop=""
  fi
  if [ -n "$nbdfuse_pid" ]; then
    # nbdfuse exits once its mount point is unmounted (root needs no fusermount3).
    if mountpoint -q "$fuse_dir"; then
      umount "$fuse_dir" || { echo "ext4_pgbench: umount $fuse_dir failed" >&2; failed=1; }
    fi
    if ! wait_gone "$nbdfuse_pid" 10; then
      echo "ext4_pgbench: nbdfuse still running 10 s after unmount; killing it" >&2
      kill "$nbdfuse_pid" 2>/dev/null || true
      failed=1
    fi
    wait "$nbdfuse_pid" 2>/dev/null || true
    nbdfuse_pid=""
  fi
  if [ -n "$proxy_pid" ]; then
    kill -INT "$proxy_pid" 2>/dev/null || true
    wait "$proxy_pid" 2>/dev/null || true
    proxy_pid=""
    grep '^nbd_inflight: connection' "$work/inflight.log" || true
  fi
  if [ -n "$spindle_pid" ]; then
    local t0 t1
    t0="$(date +%s%N)"
    kill -INT "$spindle_pid" 2>/dev/null || true
    if ! wait_gone "$spindle_pid" 120; then
      echo "ext4_pgbench: spindle serve did not stop within 120 s of SIGINT; killing it" >&2
      kill -KILL "$spindle_pid" 2>/dev/null || true
    fi
    spindle_status=0
    wait "$spindle_pid" || spindle_status=$?
    t1="$(date +%s%N)"
    spindle_pid=""
    grep -E 'spindle serve: (stopped|recorded)' "$work/spindle.log" ||
      { echo "ext4_pgbench: spindle printed no final statistics; its log:" >&2
        cat "$work/spindle.log" >&2; }
    echo "spindle exit status: $spindle_status (stopped $(((t1 - t0) / 1000000)) ms after SIGINT)"
    [ "$spindle_status" = 0 ] || failed=1
  fi
  return "$failed"
}

on_exit() {
  local status=$?
  trap - EXIT
  set +e
  if [ -n "$pg_started$fs_mounted$loop$nbdfuse_pid$proxy_pid$spindle_pid" ]; then
    echo "ext4_pgbench: tearing down after a failure" >&2
    teardown || status=1
  fi
  [ -z "$record" ] || rm -f "$record.tmp"
  if [ "${KEEP:-0}" = 1 ] || [ "$status" != 0 ]; then
    echo "ext4_pgbench: work directory kept: $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$status"
}
work="$(mktemp -d "${TMPDIR:-/tmp}/spindle-ext4.XXXXXX")"
trap on_exit EXIT
trap 'exit 130' INT TERM
chmod 755 "$work" # PostgreSQL's user must reach its directories inside
sock="$work/nbd.sock"
fuse_dir="$work/fuse"  # nbdfuse's mount point; the export is the file $fuse_dir/disk
fs_dir="$work/ext4"    # ext4's mount point
pgdata="$fs_dir/pgdata"
run_dir="$work/run"    # PostgreSQL's Unix socket and log
mkdir "$fuse_dir" "$fs_dir" "$run_dir"
chown "$PG_USER" "$run_dir"

record_args=()
[ -z "$record" ] || record_args=(--record "$work/session.trace")
step "spindle serve $experiment (data in $work/data)${record:+, recording}"
"$SPINDLE" serve "$experiment" --data "$work/data" --unix "$sock" "${record_args[@]}" \
  2>"$work/spindle.log" &
spindle_pid=$!
for ((i = 0; i < 300; i++)); do
  [ -S "$sock" ] && break
  kill -0 "$spindle_pid" 2>/dev/null ||
    { cat "$work/spindle.log" >&2; spindle_pid=""; die "spindle serve exited"; }
  sleep 0.1
done
[ -S "$sock" ] || die "spindle serve did not listen on $sock within 30 s"
head -n 1 "$work/spindle.log"

nbd_sock="$sock"
if [ "${COUNT_INFLIGHT:-0}" = 1 ]; then
  python3 "$here/nbd_inflight.py" "$work/proxy.sock" "$sock" 2>"$work/inflight.log" &
  proxy_pid=$!
  for ((i = 0; i < 100; i++)); do [ -S "$work/proxy.sock" ] && break; sleep 0.1; done
  [ -S "$work/proxy.sock" ] || die "nbd_inflight.py did not start"
  nbd_sock="$work/proxy.sock"
fi

step "nbdfuse $fuse_dir/disk --unix $nbd_sock"
nbdfuse -P "$work/nbdfuse.pid" "$fuse_dir/disk" --unix "$nbd_sock" 2>"$work/nbdfuse.log" &
nbdfuse_pid=$!
for ((i = 0; i < 300; i++)); do
  [ -s "$work/nbdfuse.pid" ] && [ -f "$fuse_dir/disk" ] && break
  kill -0 "$nbdfuse_pid" 2>/dev/null ||
    { cat "$work/nbdfuse.log" >&2; nbdfuse_pid=""; die "nbdfuse exited"; }
  sleep 0.1
done
[ -f "$fuse_dir/disk" ] || die "nbdfuse did not mount $fuse_dir/disk within 30 s"

step "losetup --direct-io=on --sector-size 4096"
loop="$(losetup --find --show --direct-io=on --sector-size 4096 "$fuse_dir/disk")"
[ "$(cat "/sys/block/${loop#/dev/}/loop/dio")" = 1 ] ||
  die "$loop: the kernel did not enable direct I/O on it"
echo "$loop: $(cat "/sys/block/${loop#/dev/}/size") × 512 B, logical block" \
  "$(cat "/sys/block/${loop#/dev/}/queue/logical_block_size") B, direct I/O on"

step "mkfs.ext4 -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 $loop"
mkfs.ext4 -q -F -b 4096 -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$loop"
mount "$loop" "$fs_dir"
fs_mounted=1
mkdir "$pgdata"
chown "$PG_USER" "$pgdata"
chmod 700 "$pgdata"

step "initdb"
as_pg "$PG_BIN/initdb" -D "$pgdata" -U postgres -A trust --locale=C -E UTF8 \
  --no-instructions >"$run_dir/initdb.log" ||
  { cat "$run_dir/initdb.log" >&2; die "initdb failed"; }

step "pg_ctl start (Unix socket in $run_dir only)"
pg_started=1
as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -l "$run_dir/postgres.log" -w -t 60 \
  -o "-c listen_addresses='' -k $run_dir -c max_wal_size=256MB ${pg_sets[*]}" start >/dev/null ||
  { cat "$run_dir/postgres.log" >&2; die "PostgreSQL did not start"; }

step "pgbench -i -s $scale"
as_pg "$PG_BIN/pgbench" -h "$run_dir" -U postgres -i -s "$scale" -q postgres \
  >"$run_dir/pgbench-init.log" 2>&1 ||
  { cat "$run_dir/pgbench-init.log" >&2; die "pgbench -i failed"; }
tail -n 1 "$run_dir/pgbench-init.log"

spindle_stats "before the run" | tee "$work/before.stats"
threads=$((clients < 4 ? clients : 4))
run_args=(-c "$clients" -j "$threads" -T "$duration")
[ -z "$transactions" ] || run_args=(-c "$clients" -j "$threads" -t "$transactions")
step "pgbench ${run_args[*]}"
pgbench_status=0
as_pg "$PG_BIN/pgbench" -h "$run_dir" -U postgres "${run_args[@]}" postgres \
  >"$run_dir/pgbench.log" 2>&1 || pgbench_status=$?
cat "$run_dir/pgbench.log"
[ "$pgbench_status" = 0 ] || die "pgbench exited with status $pgbench_status"
spindle_stats "after the run" | tee "$work/after.stats"

step "pg_ctl stop"
as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m fast -w -t 120 stop >/dev/null
pg_started=""
step "umount; e2fsck -fn $loop"
umount "$fs_dir"
fs_mounted=""
fsck_status=0
e2fsck -fn "$loop" >"$work/e2fsck.log" 2>&1 || fsck_status=$?
if [ "$fsck_status" = 0 ]; then
  echo "e2fsck: clean ($(tail -n 1 "$work/e2fsck.log"))"
else
  cat "$work/e2fsck.log"
  echo "e2fsck: exit status $fsck_status"
fi
step "losetup -d; umount nbdfuse; SIGINT spindle"
teardown_status=0
teardown || teardown_status=$?
if [ -n "$record" ] && [ "$teardown_status" = 0 ]; then
  # The pgbench run lies between the statistics taken before and after it, whose elapsed
  # times are on the recording's clock, rounded to 0.1 s: keep the requests from 0.05 s
  # before the first to 0.05 s after the second. mkfs, initdb and pgbench -i before, and
  # PostgreSQL's shutdown checkpoint and e2fsck after the run, are left out.
  elapsed() { sed -n 's/.* in \([0-9.]*\) s, .*/\1/p' "$1"; }
  from_s="$(elapsed "$work/before.stats")"
  to_s="$(elapsed "$work/after.stats")"
  [ -n "$from_s" ] && [ -n "$to_s" ] ||
    die "--record: no elapsed time in spindle's statistics before and after the run"
  read -r from_ms to_ms < <(awk -v a="$from_s" -v b="$to_s" \
    'BEGIN { a -= 0.05; if (a < 0) a = 0; printf "%.6f %.6f\n", a * 1000, (b + 0.05) * 1000 }')
  step "--record: the requests from $from_ms ms to $to_ms ms (the pgbench run) to $record"
  awk -v from="$from_ms" -v to="$to_ms" -v expfile="$experiment" \
    -v run="pgbench ${run_args[*]}; postgres -c max_wal_size=256MB ${pg_sets[*]}" '
    NR == 1 {
      print "# scripts/ext4_pgbench.sh --record: the pgbench run (" run ") on " expfile
      print "# the session'\''s requests from " from " ms to " to " ms (before: mkfs, initdb,"
      print "# pgbench -i; after: the shutdown checkpoint, e2fsck); arrivals as recorded"
    }
    /^# end:/ { next }
    /^# flush / { if ($3 + 0 >= from + 0 && $3 + 0 <= to + 0) print; next }
    /^#/ { print; next }
    $1 + 0 >= from + 0 && $1 + 0 <= to + 0 { print }
  ' "$work/session.trace" >"$record.tmp"
  mv "$record.tmp" "$record"
  "$SPINDLE" trace stats "$record" ||
    { echo "ext4_pgbench: spindle trace stats $record failed" >&2; teardown_status=1; }
fi
step "done"
[ "$fsck_status" = 0 ] || die "the file system check failed"
[ "$teardown_status" = 0 ] || die "teardown failed"

#!/usr/bin/env bash
# A real database log for the power-aware DR secondary (docs/dr.md): runs pgbench on a fresh
# PostgreSQL cluster and writes the write-ahead log of the pgbench run, as `pg_waldump` prints
# it, to OUT (gzip-compressed when OUT ends in .gz).
#
#   scripts/pgbench_wal.sh [OPTIONS] OUT [SCALE [SECONDS]]     # defaults: 10, 60
#
# Options:
#   --clients N          pgbench clients (default 4), on min(N, 4) threads
#   --rate TPS           pgbench's transaction rate (pgbench -R): the same stream rate on any
#                        machine that can sustain it (default: as fast as it goes)
#   --pg-set NAME=VALUE  a PostgreSQL setting (postgres -c); repeatable
#
# The log covers the pgbench run only (from the LSN after `pgbench -i` to the LSN at its end);
# checkpoints run as PostgreSQL's defaults make them (so full-page images follow each one, as
# in production), and wal_keep_size keeps every segment until it is dumped. Each COMMIT
# record carries its wall-clock time: `spindle` times every record by its LSN between
# commits (docs/dr.md).
# The first line of OUT is a `#` comment naming the run (scale, clients, seconds, LSNs,
# PostgreSQL version). Do not commit OUT: SCALE 10 for 60 s is a few hundred MB of text.
#
# Needs the PostgreSQL server binaries (Debian package postgresql) and, when run as root, the
# system user postgres to run them (PG_USER). Runs in a temporary directory (TMPDIR), removed
# at the end whatever happens.
#
# Environment: PG_BIN (default: newest /usr/lib/postgresql/*/bin), PG_USER (default postgres).
set -euo pipefail

die() { echo "pgbench_wal: $*" >&2; exit 1; }
missing() { echo "pgbench_wal: missing prerequisite: $*" >&2; exit 3; }

clients=4
rate=""
pg_sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --clients) [ $# -ge 2 ] || die "--clients needs a number"; clients=$2; shift 2 ;;
    --pg-set) [ $# -ge 2 ] || die "--pg-set needs NAME=VALUE"; pg_sets+=(-c "$2"); shift 2 ;;
    --rate) [ $# -ge 2 ] || die "--rate needs a number"; rate=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: $0 [OPTIONS] OUT [SCALE [SECONDS]]"
out=$1
scale=${2:-10}
seconds=${3:-60}
case $scale$seconds$clients$rate in *[!0-9]*) die "SCALE, SECONDS, --clients and --rate are whole numbers" ;; esac
[ "$scale" -ge 1 ] && [ "$seconds" -ge 1 ] && [ "$clients" -ge 1 ] || die "SCALE, SECONDS and --clients must be >= 1"
if [ -e "$out" ] && [ ! -f "$out" ]; then die "$out exists and is not a regular file"; fi

if [ -z "${PG_BIN:-}" ]; then
  PG_BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
for tool in initdb pg_ctl pgbench psql pg_waldump; do
  [ -x "${PG_BIN:-/nonexistent}/$tool" ] || missing "PostgreSQL's $tool (Debian package postgresql; or set PG_BIN)"
done
PG_USER="${PG_USER:-postgres}"
if [ "$(id -u)" = 0 ]; then
  id -u "$PG_USER" >/dev/null 2>&1 || missing "system user $PG_USER to run PostgreSQL (or set PG_USER)"
  as_pg() { runuser -u "$PG_USER" -- "$@"; }
else
  as_pg() { "$@"; }
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/pgbench_wal.XXXXXX")"
chmod 755 "$work"
pgdata="$work/data"
started=""
cleanup() {
  if [ -n "$started" ]; then as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m immediate -w stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown "$PG_USER" "$work"

as_pg "$PG_BIN/initdb" -D "$pgdata" -U postgres -A trust --locale=C -E UTF8 --no-instructions \
  >"$work/initdb.log" 2>&1 || { cat "$work/initdb.log" >&2; die "initdb failed"; }
started=1
as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -l "$work/postgres.log" -w -t 60 \
  -o "-c listen_addresses='' -k $work -c wal_keep_size=64GB ${pg_sets[*]}" \
  start >/dev/null || { cat "$work/postgres.log" >&2; die "PostgreSQL did not start"; }
psql() { as_pg "$PG_BIN/psql" -h "$work" -U postgres -X -A -t -q -c "$1" postgres; }

echo "pgbench_wal: pgbench -i -s $scale" >&2
as_pg "$PG_BIN/pgbench" -h "$work" -U postgres -i -s "$scale" -q postgres >"$work/init.log" 2>&1 ||
  { cat "$work/init.log" >&2; die "pgbench -i failed"; }
psql "CHECKPOINT" >/dev/null
start_lsn="$(psql "SELECT pg_current_wal_insert_lsn()")"
threads=$((clients < 4 ? clients : 4))
run_args=(-c "$clients" -j "$threads" -T "$seconds")
[ -z "$rate" ] || run_args+=(-R "$rate")
echo "pgbench_wal: pgbench ${run_args[*]}" >&2
as_pg "$PG_BIN/pgbench" -h "$work" -U postgres "${run_args[@]}" postgres \
  >"$work/run.log" 2>&1 || { cat "$work/run.log" >&2; die "pgbench failed"; }
grep -E '^(tps|number of transactions actually processed)' "$work/run.log" >&2 || true
psql "SELECT pg_switch_wal()" >/dev/null
end_lsn="$(psql "SELECT pg_current_wal_insert_lsn()")"
version="$(as_pg "$PG_BIN/postgres" --version)"
as_pg "$PG_BIN/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
started=""

tmp_out="$out.partial.$$"
trap 'rm -f "$tmp_out"; cleanup' EXIT
{
  echo "# spindle pgbench WAL: scale $scale, $clients clients, $seconds s, rate ${rate:-max} tps, lsn $start_lsn..$end_lsn, $version"
  as_pg "$PG_BIN/pg_waldump" -p "$pgdata/pg_wal" -s "$start_lsn" -e "$end_lsn" 2>"$work/waldump.err" || {
    # pg_waldump ends with an error at the end of valid WAL; anything else is a failure.
    grep -q "invalid record length\|error in WAL record\|could not find file" "$work/waldump.err" ||
      { cat "$work/waldump.err" >&2; exit 1; }
  }
} | if [[ $out == *.gz ]]; then gzip -c; else cat; fi >"$tmp_out"
mv "$tmp_out" "$out"
echo "pgbench_wal: wrote $out ($(du -h "$out" | cut -f1)), lsn $start_lsn..$end_lsn" >&2

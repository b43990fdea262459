#!/usr/bin/env bash
# Blind calibration of emulated library drives: each DRIVE (a library id) gets its seeded
# noise turned on, is served alone (a one-disk jbod) by `spindle serve --realtime` on a Unix
# socket, and `spindle calibrate --realtime` measures it over NBD without reading its file;
# then the measured drive file is compared with the library's. Prints one Markdown table row
# per drive (docs/calibrate.md, "Measured accuracy").
#
#   scripts/calibrate_blind.sh [--zones N] [--noise SEEK_REL,ROT_MS] DRIVE...
#
# Needs python3 (the comparison) and a built spindle (SPINDLE, default target/release/spindle).
set -euo pipefail

zones=()
noise="0.02,0.01"
drives=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --zones) zones=(--zones "$2"); shift 2 ;;
        --noise) noise="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) drives+=("$1"); shift ;;
    esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
spindle="${SPINDLE:-$repo/target/release/spindle}"
# The disk file on tmpfs when there is one: a busy disk must not delay the emulator's data
# moves (and so its answers) behind other work's I/O.
work="$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)"
server=""
cleanup() { [[ -n "$server" ]] && kill "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
echo "| drive | rpm | rotation error | bound Δ | zones | spt and LBA boundaries | surfaces | skews off by (max, sectors) | min read time vs model (median / max abs %; worst µs, % of a revolution) | interval noise | time |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for d in "${drives[@]}"; do
    dir="$work/$d"; mkdir -p "$dir"
    cp "$repo/drives/$d.toml" "$dir/drive.toml"
    printf '\n[noise]\nseek_rel_sigma = %s\nrotation_sigma_ms = %s\n' "${noise%,*}" "${noise#*,}" >> "$dir/drive.toml"
    printf 'seed = 7\n[drive]\nmodel = "%s"\nnoise = true\n[array]\nlayout = "jbod"\ndisks = 1\n[workload]\nkind = "closed"\n[run]\nrequests = 1\n' \
        "$dir/drive.toml" > "$dir/exp.toml"
    "$spindle" serve "$dir/exp.toml" --data "$dir/data" --unix "$dir/sock" --realtime 2>"$dir/serve.log" &
    server=$!
    for _ in $(seq 100); do [[ -S "$dir/sock" ]] && break; sleep 0.1; done
    start=$(date +%s)
    if "$spindle" calibrate "nbd+unix:///spindle?socket=$dir/sock" -o "$dir/cal.toml" \
        --json "$dir/cal.json" --realtime --quiet "${zones[@]}" 2>"$dir/cal.log"; then
        secs=$(( $(date +%s) - start ))
        python3 - "$repo/drives/$d.toml" "$dir/cal.toml" "$dir/cal.json" "$d" "$secs" <<'PY'
import json, math, sys, tomllib
lib = tomllib.load(open(sys.argv[1], "rb"))
cal = tomllib.load(open(sys.argv[2], "rb"))
m = json.load(open(sys.argv[3]))
name, secs = sys.argv[4], sys.argv[5]
period = round(60e9 / lib["rpm"])
err = abs(m["period_ns"] - period) / period * 100
S = lib["surfaces"]
lz = lib["zones"][: len(cal["zones"])]
def lbas(z, s):
    return (z["last_cylinder"] - z["first_cylinder"] + 1) * s * z["sectors_per_track"] - z.get("spare_sectors_per_zone", 0)
zones_ok = all(a["sectors_per_track"] == b["sectors_per_track"] and lbas(a, cal["surfaces"]) == lbas(b, S)
               for a, b in zip(cal["zones"], lz))
skew = max(max(abs(a["track_skew"] - b.get("track_skew", 0)), abs(a["cylinder_skew"] - b.get("cylinder_skew", 0)))
           for a, b in zip(cal["zones"], lz))
seek = lib["seek"]
def model(d):
    if seek["kind"] == "two_piece":
        if d == 1 and seek.get("single_cylinder_ms") is not None:
            return seek["single_cylinder_ms"]
        return seek["a_ms"] + seek["b_ms"] * math.sqrt(d) if d < seek["boundary"] else seek["c_ms"] + seek["e_ms"] * d
    if seek["kind"] == "linear":
        return seek.get("intercept_ms", 0) + seek["full_ms"] * d / (lib["cylinders"] - 1)
    return None
pts = m.get("seek") or []
base = next((p["min_read_ns"] for p in pts if p["cylinders"] == 0), None)
errs = []
abs_us = []
rev_us = 60e6 / lib["rpm"]
for p in pts:
    d = p["cylinders"]
    if d and base is not None and model(d) is not None:
        want = lib["overhead_read_ms"] + model(d)
        got = p["min_read_ns"] / 1e6 - base / 1e6 + lib["overhead_read_ms"]
        errs.append(abs(got - want) / want * 100)
        abs_us.append((d, round((got - want) * 1000)))
errs.sort()
mrt = f"{errs[len(errs)//2]:.1f} / {errs[-1]:.1f} ({len(errs)} distances)" if errs else "n/a (three-point seek)"
if abs_us:
    worst = max(abs(e) for _, e in abs_us)
    mrt += f"; worst {worst} µs = {100 * worst / rev_us:.1f} % of a revolution"
    print(f"{name}: measured − model by distance (cylinders, µs): {abs_us}", file=sys.stderr)
print(f"| {name} | {lib['rpm']} | {err:.4f} % ({abs(m['period_ns']-period):.0f} ns) | {m['period_delta_ns']:.0f} ns | "
      f"{len(cal['zones'])} of {len(lib['zones'])} | {'exact' if zones_ok else 'WRONG'} | "
      f"{cal['surfaces']} (true {S}) | {skew:.0f} | {mrt} | {m['sigma_ns']/1e3:.0f} µs | {secs} s |")
PY
    else
        echo "| $d | refused: $(tail -1 "$dir/cal.log" | sed "s/.*(NBD): //" | cut -c1-300) |"
    fi
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
done

#!/usr/bin/env python3
"""The cleaner study (README.md): every rate, the whole run and its early and late halves.
Prints the markdown tables of README.md. Run from the repository root after
`cargo build --release -p spindle-cli`:  python3 examples/paged/cleaner/run.py"""
import json, subprocess, sys

SPINDLE = "target/release/spindle"
TOML = "examples/paged/cleaner/study.toml"
RATES = [10, 25, 40, 55, 70]
N = 40000


def run(rate, warm, cool):
    out = subprocess.run(
        [SPINDLE, "run", TOML, "--quiet", "--json",
         "--set", f"workload.rate_iops={rate}",
         "--set", f"run.warmup_requests={warm}",
         "--set", f"run.cooldown_requests={cool}"],
        check=True, capture_output=True, text=True).stdout
    v = json.loads(out)
    return [v] + v["compare"]


print("| IOPS | configuration | read ms | write ms | read ms early → late | util | cleaning | tenants start → end | cleaned | backlog |")
print("|---:|---|---:|---:|---|---:|---:|---|---:|---|")
for rate in RATES:
    whole = run(rate, N * 15 // 100, N * 15 // 100)
    early = run(rate, 0, N // 2)
    late = run(rate, N // 2, 0)
    for w, e, l in zip(whole, early, late):
        d = w["disks"][0]
        p = w.get("paged") or {}
        lat = w["latency"]
        print(f"| {rate} | {w['label']} | {lat['read']['mean_ms']:.2f} | {lat['write']['mean_ms']:.2f} "
              f"| {e['latency']['read']['mean_ms']:.2f} → {l['latency']['read']['mean_ms']:.2f} "
              f"| {100 * d['utilization']:.1f} % | {100 * d['utilization_by_cause']['cleaning']:.1f} % "
              f"| {p.get('tenants_start', 0)} → {p.get('tenants_end', 0)} | {p.get('cleaned', 0)} "
              f"| {'grows' if not w['sustainable'] else 'steady'}{' SATURATED' if w['saturated'] else ''} |")
    sys.stdout.flush()

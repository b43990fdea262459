#!/usr/bin/env python3
"""The cleaner study (README.md): every rate, 300,000 requests; the early window (first
30,000) and the late one (last 30,000, the steady state: most pages written several times).
Prints the markdown tables of README.md. Run from the repository root after
`cargo build --release -p spindle-cli`:  python3 examples/paged/cleaner/run.py"""
import json, subprocess, sys

SPINDLE = "target/release/spindle"
TOML = "examples/paged/cleaner/study.toml"
RATES = [10, 25, 40, 55, 70]
N = 300000
W = 30000


def run(rate, warm, cool):
    out = subprocess.run(
        [SPINDLE, "run", TOML, "--quiet", "--json",
         "--set", f"workload.rate_iops={rate}",
         "--set", f"run.warmup_requests={warm}",
         "--set", f"run.cooldown_requests={cool}"],
        check=True, capture_output=True, text=True).stdout
    v = json.loads(out)
    return [v] + v["compare"]


print("| IOPS | configuration | mean ms (late) | read ms | write ms | read ms early → late | util | cleaning | tenants (late window) | cleaned | backlog |")
print("|---:|---|---:|---:|---:|---|---:|---:|---|---:|---|")
for rate in RATES:
    early = run(rate, 0, N - W)
    late = run(rate, N - W, 0)
    for e, l in zip(early, late):
        d = l["disks"][0]
        p = l.get("paged") or {}
        lat = l["latency"]
        print(f"| {rate} | {l['label']} | {lat['all']['mean_ms']:.2f} | {lat['read']['mean_ms']:.2f} | {lat['write']['mean_ms']:.2f} "
              f"| {e['latency']['read']['mean_ms']:.2f} → {lat['read']['mean_ms']:.2f} "
              f"| {100 * d['utilization']:.1f} % | {100 * d['utilization_by_cause']['cleaning']:.1f} % "
              f"| {p.get('tenants_start', 0)} → {p.get('tenants_end', 0)} | {p.get('cleaned', 0)} "
              f"| {'grows' if not l['sustainable'] else 'steady'}{' SATURATED' if l['saturated'] else ''} |")
    sys.stdout.flush()

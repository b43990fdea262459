#!/usr/bin/env python3
# usage: scripts/compare_reports.py BASE_DIR NEW_DIR  (directories of scripts/examples_json.sh)
# Exit status 1 when any output differs in a field other than the energy fields (docs/power.md).
"""Compares base and new `--json` outputs of every example with the energy fields dropped."""
import json, os, sys
ENERGY = {"energy", "energy_j", "state_s", "spin_ups"}
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in ENERGY}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v
def load(path):
    text = open(path).read()
    try:
        return [json.loads(text)] if text.strip() else []
    except json.JSONDecodeError:
        return [json.loads(l) for l in text.splitlines() if l.strip()]
def has_energy(v):
    if isinstance(v, dict):
        return any(k in ENERGY for k in v) or any(has_energy(x) for x in v.values())
    if isinstance(v, list):
        return any(has_energy(x) for x in v)
    return False
base, new = sys.argv[1], sys.argv[2]
same = differ = 0
for f in sorted(os.listdir(base)):
    if not f.endswith(".json"):
        continue
    b, n = os.path.join(base, f), os.path.join(new, f)
    # stderr without the wall-clock speed line ("simulated N requests in T s: R requests/s").
    def err(p):
        return [l for l in open(p[:-5] + ".err").read().splitlines() if not l.startswith("simulated ")]
    berr, nerr = err(b), err(n)
    rb, rn = load(b), load(n)
    identical_bytes = open(b).read() == open(n).read()
    ok = strip(rb) == strip(rn) and berr == nerr
    tag = "IDENTICAL" if identical_bytes and berr == nerr else ("SAME-EXCEPT-ENERGY" if ok else "DIFFERENT")
    print(f"{tag:20} energy={'yes' if has_energy(rn) else 'no ':3} {f}")
    same += ok
    differ += not ok
print(f"{same} same, {differ} different")
sys.exit(1 if differ else 0)

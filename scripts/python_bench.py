#!/usr/bin/env python3
"""Benchmarks of the Python package (docs/python.md; not tests: numbers depend on the machine).

1. Overhead of a Python call per point: `spindle.run` of a 100,000-request point against the
   same point run by the release `spindle` binary (`spindle --quiet run FILE --json`, the
   command line's Rust path), median wall time of REPS alternating runs of each.
2. Ray against local threads: a sweep of 64 points (`backend="ray"` on `ray.init(num_cpus=N)`
   against `backend="local"` with N threads), points per second, median of 5.

    python scripts/python_bench.py --bin target/release/spindle [--reps 7] [--cpus 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time

import spindle

POINT = """\
seed = 1

[drive]
model = "st39133lwv"

[array]
scheduler = "look"

[workload]
kind = "closed"
queue_depth = 8
read_fraction = 1.0

[run]
requests = 100000
"""

SWEEP = """\
seed = 1

[drive]
model = "st39133lwv"

[workload]
kind = "closed"

[run]
requests = 100000

[[axis]]
key = "workload.queue_depth"
values = [1, 2, 3, 4, 6, 8, 12, 16]

[[axis]]
key = "array.scheduler"
values = ["fcfs", "sstf", "look", "satf"]

[[axis]]
key = "workload.read_fraction"
values = [1.0, 0.7]
"""


def timed(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def overhead(binary: str, reps: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "point.toml")
        with open(path, "w") as f:
            f.write(POINT)
        cli = lambda: subprocess.run(  # noqa: E731
            [binary, "--quiet", "run", path, "--json"], check=True, capture_output=True
        )
        py = lambda: spindle.run(path).to_dict()  # noqa: E731
        cli()
        py()  # warm the page cache and the library
        t_cli, t_py = [], []
        for _ in range(reps):
            t_cli.append(timed(cli))
            t_py.append(timed(py))
        # The Python side alone: the same call with and without the package's wrapping
        # (reading the file, the overrides, building and decoding the report).
        from spindle import _core

        text = POINT
        core = lambda: _core.run(text, path, d, [], [])  # noqa: E731
        t_core, t_wrapped = [], []
        for _ in range(reps):
            t_core.append(timed(core))
            t_wrapped.append(timed(py))
        # What the wrapper does besides the Rust call, timed alone (no load noise from the run).
        from spindle._experiment import Report, set_strings, source

        json_text = core()
        wrap = lambda: (source(path), set_strings(None, {}), Report(json_text).to_dict())  # noqa: E731
        t_wrap = min(timed(wrap) for _ in range(200))
    k, w = statistics.median(t_core), statistics.median(t_wrapped)
    print(f"the wrapper alone (read the file, overrides, decode the report): {t_wrap * 1e3:.3f} ms "
          f"= {100 * t_wrap / k:.2f} % of the Rust call (best of 200)")
    print(f"in-process: Rust call {k * 1e3:.1f} ms, spindle.run(...).to_dict() {w * 1e3:.1f} ms; "
          f"the Python side adds {(w - k) * 1e3:+.2f} ms = {100 * (w - k) / k:+.2f} %")
    c, p = statistics.median(t_cli), statistics.median(t_py)
    print(f"100,000-request point: CLI {c * 1e3:.1f} ms, Python {p * 1e3:.1f} ms "
          f"(median of {reps}); Python - CLI = {(p - c) * 1e3:+.1f} ms = {100 * (p - c) / c:+.2f} %")
    print(f"  CLI runs: {', '.join(f'{t * 1e3:.0f}' for t in t_cli)} ms")
    print(f"  Python runs: {', '.join(f'{t * 1e3:.0f}' for t in t_py)} ms")


def ray_vs_local(cpus: int) -> None:
    import ray

    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    n = spindle.sweep(SWEEP, raw=True).results.__len__()  # warm-up, and the point count
    t_local, t_ray = [], []
    for _ in range(5):
        t_local.append(timed(lambda: spindle.sweep(SWEEP, jobs=cpus)))
        t_ray.append(timed(lambda: spindle.sweep(SWEEP, backend="ray", progress=False)))
    ray.shutdown()
    lo, ra = statistics.median(t_local), statistics.median(t_ray)
    print(f"{n} points: local {lo:.2f} s ({n / lo:.1f} points/s), ray {ra:.2f} s "
          f"({n / ra:.1f} points/s), median of 5; ray throughput = {100 * lo / ra:.1f} % of local")
    print(f"  local runs: {', '.join(f'{t:.2f}' for t in t_local)} s; "
          f"ray runs: {', '.join(f'{t:.2f}' for t in t_ray)} s")


if __name__ == "__main__":
    a = argparse.ArgumentParser()
    a.add_argument("--bin", required=True)
    a.add_argument("--reps", type=int, default=7)
    a.add_argument("--cpus", type=int, default=2)
    a.add_argument("--only", choices=["overhead", "ray"])
    args = a.parse_args()
    if args.only in (None, "overhead"):
        overhead(args.bin, args.reps)
    if args.only in (None, "ray"):
        ray_vs_local(args.cpus)

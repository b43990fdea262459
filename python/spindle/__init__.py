"""spindle from Python: run experiments, sweep them (locally or on a Ray cluster), read traces.

The work is done in-process by the same Rust core as the ``spindle`` command line, so a
report's fields are those of ``spindle run --json`` and a sweep's columns those of
``spindle sweep --csv`` (docs/python.md)::

    import spindle
    report = spindle.run("examples/look_vs_queue.toml", {"run.requests": 20000})
    report.to_dict()["rows"] ...
    df = spindle.sweep("examples/sweep_queue_depth.toml")              # pandas DataFrame
    df = spindle.sweep("examples/sweep_queue_depth.toml", backend="ray")  # same rows, on Ray
"""

from __future__ import annotations

from . import trace
from ._core import ConfigError, SpindleError, TraceError
from ._experiment import Report, drives, run
from ._sweep import SweepResult, sweep

__all__ = [
    "ConfigError",
    "Report",
    "SpindleError",
    "SweepResult",
    "TraceError",
    "drives",
    "run",
    "sweep",
    "trace",
]

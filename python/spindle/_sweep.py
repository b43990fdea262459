"""``spindle.sweep``: a sweep's points run on local threads or as Ray tasks, one row each."""

from __future__ import annotations

import io
import os
from typing import Any, Callable, Mapping, Optional, Sequence

import pandas as pd

from . import _core
from ._experiment import Source, set_strings, source


class SweepResult:
    """Every point's result of a sweep, in point order, and the sweep it came from: prints
    the command line's table, CSV and JSON Lines, byte for byte."""

    def __init__(self, src: Source, sets: list[str], results: list[bytes]):
        self.source = src
        self.sets = sets
        #: Each point's result as the bytes its run returned (identical on every backend).
        self.results = results

    def text(self, fmt: str = "csv") -> str:
        """``"table"``, ``"csv"`` or ``"json"`` (JSON Lines): ``spindle sweep``'s output."""
        out, _ = _core.sweep_format(self.source.text, self.source.origin, self.sets, self.results, fmt)
        return out

    def warnings(self) -> list[str]:
        """The points' warnings, each naming its point."""
        _, warnings = _core.sweep_format(
            self.source.text, self.source.origin, self.sets, self.results, "csv"
        )
        return warnings

    def to_dataframe(self) -> pd.DataFrame:
        """One row per point: the columns of ``spindle sweep --csv`` (axis values, then
        docs/sweep.md's fields), read from that CSV so the values are the same."""
        return pd.read_csv(io.StringIO(self.text("csv")), keep_default_na=False, na_values=[""])


def _axes_sets(axes: Optional[Mapping[str, Sequence[Any]]]) -> str:
    """Extra scalar ``[[axis]]`` tables (TOML) for ``axes={"key": [values…]}``."""
    if not axes:
        return ""
    tables = []
    for key, values in axes.items():
        table = _core.dict_to_toml({"axis": [{"key": key, "values": list(values)}]})
        tables.append(table)
    return "\n" + "\n".join(tables)


def prepare(experiment: Any, axes=None, overrides=None, **kwargs) -> tuple[Source, list[str]]:
    """The sweep's source (with ``axes`` appended as ``[[axis]]`` tables) and overrides."""
    src = source(experiment)
    extra = _axes_sets(axes)
    if extra:
        src = Source(src.text + extra, src.origin, src.base)
    return src, set_strings(overrides, kwargs)


def sweep(
    experiment: Any,
    axes: Optional[Mapping[str, Sequence[Any]]] = None,
    backend: str = "local",
    *,
    overrides: Optional[Mapping[str, Any]] = None,
    jobs: Optional[int] = None,
    max_in_flight: Optional[int] = None,
    max_retries: int = 3,
    progress: bool = True,
    raw: bool = False,
    **kwargs: Any,
) -> pd.DataFrame | SweepResult:
    """Runs a sweep, as ``spindle sweep FILE --csv`` does, and returns one row per point.

    ``experiment``: a sweep file (an experiment with ``[[axis]]`` tables), its TOML text or
    a dict. ``axes``: more scalar axes, ``{"workload.queue_depth": [1, 2, 4]}``, appended
    after the file's. ``overrides`` (and keyword arguments, ``__`` for dots) set keys of the
    base experiment (``--set``).

    ``backend="local"`` runs the points on ``jobs`` threads (default: one per core);
    ``backend="ray"`` runs each point as a Ray task on the cluster ``ray.init()`` connects
    to (started locally when Ray is not initialised), at most ``max_in_flight`` at once
    (default: twice the cluster's CPUs), retrying a task lost with its worker or node up to
    ``max_retries`` times, with a tqdm progress bar when ``progress``. Both return the same rows, in point order.

    Every point is checked before any runs (a bad value in the last point fails at once).
    Returns a pandas DataFrame, or the :class:`SweepResult` when ``raw``.
    """
    if backend not in ("local", "ray"):
        raise ValueError(f'backend is "local" or "ray", not {backend!r}')
    src, sets = prepare(experiment, axes, overrides, **kwargs)
    n = _core.sweep_len(src.text, src.origin, sets)
    cores = os.cpu_count() or 1
    _core.sweep_check(src.text, src.origin, src.base, sets, jobs or cores)
    if backend == "local":
        results = _core.sweep_local(src.text, src.origin, src.base, sets, jobs or cores)
    else:
        from ._ray import run_points

        results = run_points(
            src, sets, n, max_in_flight=max_in_flight, max_retries=max_retries, progress=progress
        )
    result = SweepResult(src, sets, list(results))
    return result if raw else result.to_dataframe()

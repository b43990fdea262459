"""Experiments given as a path, TOML text or a dict; overrides; ``run`` and ``drives``."""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from . import _core


@dataclass(frozen=True)
class Source:
    """An experiment's TOML text, the name its errors give (``origin``) and the folder its
    relative file names are taken from (``base``)."""

    text: str
    origin: str
    base: Optional[str]


def source(experiment: Any) -> Source:
    """Reads ``experiment``: a path (``str`` naming an existing file, or ``os.PathLike``),
    TOML text, or a dict of tables; ``None`` is the built-in default experiment."""
    if experiment is None:
        return Source(_core.default_experiment(), "built-in default experiment", None)
    if isinstance(experiment, Mapping):
        return Source(_core.dict_to_toml(dict(experiment)), "<dict>", None)
    if isinstance(experiment, os.PathLike) or (
        isinstance(experiment, str)
        and "\n" not in experiment
        and (experiment.endswith(".toml") or os.path.isfile(experiment))
    ):
        path = os.fspath(experiment)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise _core.ConfigError(f"{path}: {e.strerror or e}") from None
        return Source(text, path, os.path.dirname(os.path.abspath(path)))
    if isinstance(experiment, str):
        return Source(experiment, "<string>", None)
    raise TypeError(
        f"an experiment is a path, TOML text or a dict, not {type(experiment).__name__}"
    )


def set_strings(overrides: Optional[Mapping[str, Any]], kwargs: Mapping[str, Any]) -> list[str]:
    """Overrides as ``--set key=value`` strings. ``kwargs`` name keys with ``__`` for the
    dots (``workload__queue_depth=8``), since a keyword cannot hold a dot."""
    merged: dict[str, Any] = dict(overrides or {})
    for k, v in kwargs.items():
        merged[k.replace("__", ".")] = v
    return [_core.set_string(k, v) for k, v in merged.items()]


class Report:
    """A run's report: the fields of ``spindle run --json`` (docs/report.md)."""

    def __init__(self, json_text: str):
        self._json = json_text
        self._dict = json.loads(json_text)

    def to_dict(self) -> dict[str, Any]:
        """The report as ``spindle run --json`` prints it (a fresh copy)."""
        return json.loads(self._json)

    def to_json(self) -> str:
        """The JSON text ``spindle run --json`` prints (without its final newline)."""
        return self._json

    @property
    def rows(self) -> list[dict[str, Any]]:
        """One report per configuration: this one, then its ``compare`` rows."""
        return [self._dict] + list(self._dict.get("compare", []))

    def __getitem__(self, key: str) -> Any:
        return self._dict[key]

    def __repr__(self) -> str:
        d = self._dict
        return (
            f"<spindle.Report {d.get('label', '')!r}: {d.get('throughput_iops', 0):.1f} IOPS, "
            f"mean {d.get('latency', {}).get('all', {}).get('mean_ms', 0):.3f} ms>"
        )


def run(
    experiment: Any = None,
    overrides: Optional[Mapping[str, Any]] = None,
    *,
    unset: Optional[list[str]] = None,
    **kwargs: Any,
) -> Report:
    """Runs an experiment, as ``spindle run FILE --set key=value… --json`` does.

    ``experiment``: a path, TOML text, a dict, or None (the built-in default).
    ``overrides``: ``{"workload.queue_depth": 8}``; keyword arguments add more, with ``__``
    for the dots (``workload__queue_depth=8``). ``unset``: keys removed first (``--unset``).

    Raises ``spindle.ConfigError`` (with ``file``, ``line``, ``key``) for a bad experiment.
    """
    src = source(experiment)
    sets = set_strings(overrides, kwargs)
    return Report(_core.run(src.text, src.origin, src.base, sets, list(unset or [])))


def drives() -> list[dict[str, Any]]:
    """The built-in drive library: one dict per drive with its id, name, rpm, capacity,
    geometry, mean random seek and half a revolution (``spindle drives list``), and its
    full TOML under ``spec``."""
    out = []
    for drive_id, text in _core.drive_specs():
        spec = tomllib.loads(text)
        summary = _core.drive_summary(drive_id)
        out.append({"id": drive_id, "rpm": spec.get("rpm"), **summary, "spec": spec})
    return out

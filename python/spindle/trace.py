"""Block traces: ``read`` (a pyarrow Table), ``read_batches`` (record batches, streamed) and
``stats`` (``spindle trace stats --json``). Formats are detected unless named; gzip and
bzip2 files are read as they are (docs/traces.md)."""

from __future__ import annotations

import json
import os
from typing import Any, Iterator, Optional

import pyarrow as pa

from . import _core

#: The columns of a trace read into Arrow: arrival time (ns), device, start sector
#: (512-byte), length in sectors, and the operation ("R" or "W").
SCHEMA = pa.schema(
    [
        ("arrival_ns", pa.uint64()),
        ("device", pa.uint32()),
        ("lba", pa.uint64()),
        ("sectors", pa.uint32()),
        ("op", pa.string()),
    ]
)


def read_batches(
    path: str | os.PathLike, format: Optional[str] = None, batch_size: int = 65536
) -> Iterator[pa.RecordBatch]:
    """The trace's requests as Arrow record batches of ``batch_size`` rows, read as they
    are consumed (memory: one batch). Raises ``spindle.TraceError`` on a bad line."""
    for columns in _core.TraceBatches(os.fspath(path), format, batch_size):
        yield pa.RecordBatch.from_pydict(columns, schema=SCHEMA)


def read(
    path: str | os.PathLike, format: Optional[str] = None, batch_size: int = 65536
) -> pa.Table:
    """The whole trace as a pyarrow Table (built from :func:`read_batches`)."""
    return pa.Table.from_batches(list(read_batches(path, format, batch_size)), schema=SCHEMA)


def stats(path: str | os.PathLike, format: Optional[str] = None) -> dict[str, Any]:
    """The trace's statistics, the object ``spindle trace stats --json`` prints."""
    return json.loads(_core.trace_stats(os.fspath(path), format))

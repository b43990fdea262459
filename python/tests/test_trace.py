import json

import pyarrow as pa
import pytest

import spindle
from spindle import trace


def test_read_streams_batches_into_a_table(trace_file):
    batches = list(trace.read_batches(trace_file, batch_size=300))
    assert [b.num_rows for b in batches] == [300, 300, 300, 100]
    t = trace.read(trace_file)
    assert isinstance(t, pa.Table)
    assert t.num_rows == 1000
    assert t.schema == trace.SCHEMA
    row = t.slice(3, 1).to_pylist()[0]
    # Line 4: "4.500 1 192 8 1": 4.5 ms, device 1, sector 192, 8 sectors, a read.
    assert row == {"arrival_ns": 4_500_000, "device": 1, "lba": 192, "sectors": 8, "op": "R"}
    assert t.column("op").to_pylist().count("R") == 334


def test_stats_are_the_cli_json(trace_file, cli):
    s = trace.stats(trace_file)
    assert s == json.loads(cli("trace", "stats", trace_file, "--json"))
    assert s["requests"] == 1000
    assert s["format"] == "disksim"


def test_a_bad_line_is_a_trace_error_naming_the_file(tmp_path):
    p = tmp_path / "bad.disksim"
    p.write_text("1.0 0 0 8 1\n2.0 0 0 8 zz\n")
    with pytest.raises(spindle.TraceError) as e:
        trace.read(p, format="disksim")
    assert e.value.file == str(p)
    assert "line 2" in str(e.value)
    assert isinstance(e.value, spindle.SpindleError)


def test_a_missing_trace_is_a_trace_error(tmp_path):
    with pytest.raises(spindle.TraceError):
        trace.stats(tmp_path / "none.disksim")

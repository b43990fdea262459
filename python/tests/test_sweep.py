import io

import pandas as pd
import pytest

import spindle

from conftest import EXPERIMENT


def test_sweep_rows_are_the_cli_csv(sweep_file, cli):
    df = spindle.sweep(sweep_file, progress=False)
    expected = pd.read_csv(io.StringIO(cli("sweep", sweep_file, "--csv")), keep_default_na=False, na_values=[""])
    assert len(df) == 8
    assert list(df.columns) == list(expected.columns)
    pd.testing.assert_frame_equal(df, expected)
    assert list(df["workload.queue_depth"]) == [1, 1, 2, 2, 4, 4, 8, 8]
    assert list(df["scheduler"]) == ["LOOK", "SATF"] * 4


def test_sweep_text_is_byte_for_byte_the_cli(sweep_file, cli):
    res = spindle.sweep(sweep_file, raw=True)
    for fmt, flag in [("csv", "--csv"), ("json", "--json"), ("table", None)]:
        args = ["sweep", sweep_file] + ([flag] if flag else [])
        assert res.text(fmt) == cli(*args), fmt


def test_axes_argument_adds_an_axis():
    df = spindle.sweep(EXPERIMENT, axes={"workload.queue_depth": [1, 16]}, overrides={"run.requests": 1000})
    assert list(df["workload.queue_depth"]) == [1, 16]
    # More outstanding requests let LOOK order them: throughput grows (dissertation fig. 4.5).
    assert df["throughput_iops"][1] > df["throughput_iops"][0]


def test_a_bad_point_fails_before_any_runs(sweep_file):
    with pytest.raises(spindle.ConfigError) as e:
        spindle.sweep(sweep_file, axes={"run.requests": [1000, -5]})
    assert "run.requests" in str(e.value)


def test_unknown_backend_is_refused(sweep_file):
    with pytest.raises(ValueError, match="backend"):
        spindle.sweep(sweep_file, backend="dask")

"""The Ray backend on a local cluster of 2 CPUs, started here."""

import pandas as pd
import pytest

import spindle

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_returns_the_local_rows_byte_for_byte(sweep_file, cluster):
    local = spindle.sweep(sweep_file, raw=True)
    # max_in_flight=3 < 8 points: the streaming path (ray.wait, refill) is exercised.
    remote = spindle.sweep(sweep_file, backend="ray", raw=True, max_in_flight=3, progress=False)
    assert remote.results == local.results, "each point's result is the same bytes"
    pd.testing.assert_frame_equal(remote.to_dataframe(), local.to_dataframe())
    assert remote.text("json") == local.text("json")


def test_ray_dataframe_equals_local(sweep_file, cluster):
    df_local = spindle.sweep(sweep_file)
    df_ray = spindle.sweep(sweep_file, backend="ray", progress=True)
    pd.testing.assert_frame_equal(df_ray, df_local)


def test_a_bad_point_is_refused_before_any_ray_task(sweep_file, cluster):
    with pytest.raises(spindle.ConfigError) as e:
        spindle.sweep(sweep_file, backend="ray", axes={"workload.queue_depth": [0]})
    assert "workload.queue_depth" in str(e.value)


def test_the_cli_hands_a_sweep_to_ray(sweep_file, cli, cluster):
    # `spindle sweep --ray ADDRESS` connects a new driver to this test's running cluster.
    address = ray.get_runtime_context().gcs_address
    for flag in ["--csv", "--json"]:
        on_ray = cli("sweep", sweep_file, "--ray", address, flag)
        assert on_ray == cli("sweep", sweep_file, flag), flag

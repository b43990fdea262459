import json

import pytest

import spindle

from conftest import EXPERIMENT


def test_run_has_the_fields_and_values_of_the_cli_json(experiment_file, cli):
    report = spindle.run(experiment_file, {"workload.queue_depth": 8})
    expected = json.loads(cli("run", experiment_file, "--set", "workload.queue_depth=8", "--json"))
    # Same core, same seed: the whole object is equal, field for field (floats included).
    assert report.to_dict() == expected
    assert list(report.to_dict()) == list(expected), "same field order"


def test_a_path_text_and_dict_are_the_same_experiment(experiment_file):
    import tomllib

    a = spindle.run(experiment_file).to_dict()
    b = spindle.run(EXPERIMENT).to_dict()
    c = spindle.run(tomllib.loads(EXPERIMENT)).to_dict()
    assert a == b == c
    assert a["requests_issued"] == 3000


def test_overrides_as_dict_and_keywords_agree(experiment_file):
    a = spindle.run(experiment_file, {"workload.queue_depth": 2, "run.requests": 1000})
    b = spindle.run(experiment_file, workload__queue_depth=2, run__requests=1000)
    assert a.to_dict() == b.to_dict()
    assert a.to_dict() != spindle.run(experiment_file, run__requests=1000).to_dict(), (
        "the queue depth override changes the run"
    )


def test_a_bad_value_is_a_config_error_naming_file_line_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(EXPERIMENT.replace("queue_depth = 4", "queue_depth = -3"))
    with pytest.raises(spindle.ConfigError) as e:
        spindle.run(p)
    err = e.value
    assert isinstance(err, spindle.SpindleError)
    assert err.file == str(p)
    assert err.line == EXPERIMENT.splitlines().index("queue_depth = 4") + 1
    assert err.key == "workload.queue_depth", str(err)
    assert str(p) in str(err)


def test_an_unknown_key_and_a_bad_override_are_config_errors(experiment_file):
    with pytest.raises(spindle.ConfigError) as e:
        spindle.run(EXPERIMENT.replace("[run]\n", "[run]\nbogus = 2\n"))
    assert e.value.file == "<string>"
    assert e.value.key == "run.bogus"
    assert e.value.line == EXPERIMENT.splitlines().index("[run]") + 2
    with pytest.raises(spindle.ConfigError) as e:
        spindle.run(experiment_file, {"array.scheduler": "no-such-policy"})
    assert "array.scheduler" in str(e.value)


def test_a_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(spindle.ConfigError, match="nothing.toml"):
        spindle.run(tmp_path / "nothing.toml")


def test_the_drive_library_lists_the_built_in_drives():
    drives = spindle.drives()
    ids = [d["id"] for d in drives]
    assert "st39133lwv" in ids
    d = drives[ids.index("st39133lwv")]
    assert d["rpm"] == pytest.approx(10026)  # measured, drives/st39133lwv.toml
    assert d["capacity_bytes"] > 9e9
    assert 0 < d["mean_seek_ms"] < 20
    # Half a revolution from the rpm; the period is whole nanoseconds, hence rel 1e-6.
    assert d["half_rotation_ms"] == pytest.approx(30_000 / d["rpm"], rel=1e-6)

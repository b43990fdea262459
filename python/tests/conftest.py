"""Fixtures: small experiments and traces written per test, and the `spindle` binary the
package is compared with (SPINDLE_BIN, set by crates/spindle-cli/tests/python_package.rs)."""

import os
import subprocess
import sys

import pytest

EXPERIMENT = """\
seed = 7

[drive]
model = "st39133lwv"

[array]
scheduler = "look"

[workload]
kind = "closed"
queue_depth = 4
read_fraction = 1.0

[run]
requests = 3000
"""

SWEEP = EXPERIMENT + """
[[axis]]
key = "workload.queue_depth"
values = [1, 2, 4, 8]

[[axis]]
name = "scheduler"
points = [
  { label = "LOOK", set = { "array.scheduler" = "look" } },
  { label = "SATF", set = { "array.scheduler" = "satf" } },
]
"""

# DiskSim ASCII: arrival_ms devno lbn nsectors flags (bit 0: read).
TRACE = "".join(f"{i * 1.5:.3f} {i % 2} {i * 64} 8 {i % 3 == 0:d}\n" for i in range(1000))


@pytest.fixture
def experiment_file(tmp_path):
    p = tmp_path / "exp.toml"
    p.write_text(EXPERIMENT)
    return p


@pytest.fixture
def sweep_file(tmp_path):
    p = tmp_path / "sweep.toml"
    p.write_text(SWEEP)
    return p


@pytest.fixture
def trace_file(tmp_path):
    p = tmp_path / "small.disksim"
    p.write_text(TRACE)
    return p


@pytest.fixture
def cli():
    """Runs the `spindle` binary; a test needing it fails when SPINDLE_BIN is unset under
    SPINDLE_REQUIRE_PYTHON=1, and skips visibly otherwise."""
    binary = os.environ.get("SPINDLE_BIN")
    if not binary:
        if os.environ.get("SPINDLE_REQUIRE_PYTHON") == "1":
            pytest.fail("SPINDLE_BIN is unset (the spindle binary to compare with)")
        pytest.skip("SPINDLE_BIN is unset: no spindle binary to compare with")

    def run(*args):
        # `spindle sweep --ray` hands over to this interpreter's spindle package.
        env = dict(os.environ, SPINDLE_PYTHON=sys.executable)
        out = subprocess.run(
            [binary, "--quiet", *map(str, args)],
            capture_output=True,
            text=True,
            check=False,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout

    return run

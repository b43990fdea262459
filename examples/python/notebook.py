# %% [markdown]
# # spindle from Python: a run, a sweep, a trace
#
# A notebook-style script (cells split by `# %%`; open it in Jupyter with jupytext or in
# VS Code, or run it whole: `python examples/python/notebook.py` from the repository root).
# It needs the package: `pip install ./python` (or scripts/python_tests.sh's environment);
# docs/python.md has the rest.

# %%
from pathlib import Path

import spindle

root = Path(__file__).resolve().parents[2] if "__file__" in globals() else Path.cwd()
examples = root / "examples"

# %% [markdown]
# ## One run: LOOK against the queue length (dissertation fig. 4.5)
# `spindle.run` takes a path, TOML text or a dict, and overrides (`--set`); the report has
# the fields of `spindle run --json`, its `[[compare]]` rows under `compare`.

# %%
report = spindle.run(examples / "look_vs_queue.toml", {"run.requests": 5000})
for row in report.rows:
    print(f"{row['label']:<10} {row['throughput_iops']:7.1f} IOPS, "
          f"p99 {row['latency']['all']['p99_ms']:6.2f} ms")

# %% [markdown]
# ## A sweep as a DataFrame
# The same file's `[[axis]]` over the queue length; one row per point, the columns of
# `spindle sweep --csv`. `backend="ray"` would run the points on a Ray cluster instead.

# %%
df = spindle.sweep(examples / "sweep_queue_depth.toml", overrides={"run.requests": 5000})
print(df[["workload.queue_depth", "throughput_iops", "mean_ms", "p99_ms", "utilization"]])
# Eq. 2.41: throughput rises with Q (about 114 IOPS at Q = 1, 171 at Q = 32).
assert df["throughput_iops"].is_monotonic_increasing

# %% [markdown]
# ## A dict experiment with an extra axis

# %%
exp = {
    "seed": 1,
    "drive": {"model": "st39133lwv"},
    "workload": {"kind": "closed", "read_fraction": 1.0},
    "run": {"requests": 3000},
}
df2 = spindle.sweep(exp, axes={"workload.queue_depth": [1, 4, 16], "array.scheduler": ["fcfs", "satf"]})
print(df2.pivot(index="workload.queue_depth", columns="array.scheduler", values="throughput_iops"))

# %% [markdown]
# ## Traces as Arrow
# `spindle.trace.read` streams a trace (format detected, gzip/bzip2 read as is) into a
# pyarrow Table; `stats` is `spindle trace stats --json`.

# %%
import tempfile

with tempfile.TemporaryDirectory() as d:
    path = Path(d) / "tiny.disksim"
    path.write_text("".join(f"{i * 2.0:.1f} 0 {i * 128} 8 1\n" for i in range(500)))
    table = spindle.trace.read(path)
    print(table.schema)
    print(table.to_pandas().describe())
    print({k: v for k, v in spindle.trace.stats(path).items() if k in ("requests", "format")})

# %% [markdown]
# ## Errors name the file, line and key

# %%
try:
    spindle.run(examples / "look_vs_queue.toml", {"workload.queue_depth": 0})
except spindle.ConfigError as e:
    print(f"ConfigError: file={e.file} line={e.line} key={e.key}\n  {e}")

# %%
print(f"{len(spindle.drives())} built-in drives:", ", ".join(d["id"] for d in spindle.drives()))

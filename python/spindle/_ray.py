"""The Ray backend of ``spindle.sweep``: each point a Ray task, results streamed back with
``ray.wait`` so at most ``max_in_flight`` points are pending (memory stays flat however many
points), in point order once all are in."""

from __future__ import annotations

from typing import Optional

from . import _core
from ._experiment import Source


def _require_ray():
    try:
        import ray
    except ImportError:
        raise _core.SpindleError(
            'backend="ray" needs Ray: pip install "ray>=2.5" tqdm (docs/python.md)'
        ) from None
    return ray


def _point(text: str, origin: str, base: Optional[str], sets: list, index: int) -> bytes:
    """One point, run in a Ray worker: the same call as the local backend's."""
    from spindle import _core as core

    return core.sweep_point(text, origin, base, sets, index)


def run_points(
    src: Source,
    sets: list[str],
    n: int,
    *,
    max_in_flight: Optional[int] = None,
    max_retries: int = 3,
    progress: bool = True,
) -> list[bytes]:
    """Runs the ``n`` points of a sweep as Ray tasks; their results in point order."""
    ray = _require_ray()
    if not ray.is_initialized():
        ray.init(log_to_driver=False)
    if max_in_flight is None:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        max_in_flight = max(2, 2 * cpus)
    # A task that raises (a bad point) is not retried: only a lost worker or node is.
    task = ray.remote(num_cpus=1, max_retries=max_retries)(_point)
    text = ray.put(src.text)
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=n, desc="sweeping", unit="point")
        except ImportError:
            bar = None
    # The costliest points start first, as on local threads; rows come back in point order.
    order = _core.sweep_order(src.text, src.origin, sets)
    results: list[Optional[bytes]] = [None] * n
    pending: dict = {}
    next_k = 0
    try:
        while next_k < n or pending:
            while next_k < n and len(pending) < max_in_flight:
                i = order[next_k]
                pending[task.remote(text, src.origin, src.base, sets, i)] = i
                next_k += 1
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                try:
                    results[i] = ray.get(ref)
                except ray.exceptions.RayTaskError as e:
                    cause = e.as_instanceof_cause()
                    if isinstance(cause, _core.SpindleError):
                        raise cause from None
                    raise
                if bar is not None:
                    bar.update(1)
    finally:
        for ref in pending:
            ray.cancel(ref)
        if bar is not None:
            bar.close()
    return [r for r in results if r is not None]

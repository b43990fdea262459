from typing import Any, Mapping, Optional, Sequence

import pandas as pd

from . import trace as trace
from ._core import ConfigError as ConfigError
from ._core import SpindleError as SpindleError
from ._core import TraceError as TraceError
from ._sweep import SweepResult as SweepResult

class Report:
    def to_dict(self) -> dict[str, Any]: ...
    def to_json(self) -> str: ...
    @property
    def rows(self) -> list[dict[str, Any]]: ...
    def __getitem__(self, key: str) -> Any: ...

def run(
    experiment: Any = None,
    overrides: Optional[Mapping[str, Any]] = None,
    *,
    unset: Optional[list[str]] = None,
    **kwargs: Any,
) -> Report: ...
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
) -> pd.DataFrame | SweepResult: ...
def drives() -> list[dict[str, Any]]: ...

"""PyTriton's Request: one request's inputs (a mapping name -> numpy array) and parameters."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np


@dataclasses.dataclass
class Request:
    data: dict[str, np.ndarray]
    parameters: dict[str, Any] | None = None
    requested_output_names: list[str] | None = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        self.data[name] = value

    def __delitem__(self, name: str) -> None:
        del self.data[name]

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def items(self) -> Any:
        return self.data.items()

    def keys(self) -> Any:
        return self.data.keys()

    def values(self) -> Any:
        return self.data.values()

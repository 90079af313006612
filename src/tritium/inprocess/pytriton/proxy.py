"""PyTriton's Request: one request's inputs (a mapping name -> numpy array) and parameters."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Optional

import numpy as np


@dataclasses.dataclass
class Request:
    data: dict[str, np.ndarray]
    parameters: Optional[dict[str, Any]] = None
    requested_output_names: Optional[list[str]] = None

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

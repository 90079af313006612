"""`batch_output` BATCH_SCATTER_WITH_INPUT_SHAPE: an output that follows a ragged input.

A model fed a ragged (flattened) input cannot give its output a batch dimension to split along,
so the configuration says to split it like the input: request by request, each takes the next
elements of the flattened output, as many as its shape holds, and gets them in that shape. The
shape is the output's configured one (after the batch dimension, which the model has) with every
-1 taken from the same dimension of the request's source input (Triton's ProcessBatchOutput).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest
from ..tensor import element_count


class BatchOutputs:
    """The configured batch outputs of a model, by target name."""

    def __init__(self, config: mc.ModelConfig) -> None:
        dims = {
            o.name: tuple(o.reshape.shape) if o.HasField("reshape") else tuple(o.dims)
            for o in config.output
        }
        batch_dim = (-1,) if config.max_batch_size > 0 else ()
        self._sources: dict[str, str] = {}
        self._shapes: dict[str, tuple[int, ...]] = {}
        for batch_output in config.batch_output:
            for target in batch_output.target_name:
                self._sources[target] = batch_output.source_input[0]
                self._shapes[target] = batch_dim + dims.get(target, ())

    def __contains__(self, name: str) -> bool:
        return name in self._sources

    def scatter(
        self, name: str, output: np.ndarray, requests: Sequence[InferenceRequest]
    ) -> list[np.ndarray | TritonError]:
        """Output `name` cut into each request's part: an array, or the error of a request
        the model's output holds too few elements for."""
        flat = output.reshape(-1)
        parts: list[np.ndarray | TritonError] = []
        offset = 0
        for request in requests:
            try:
                shape = self._shape(name, request)
            except TritonError as error:
                parts.append(error)
                continue
            size = element_count(shape)
            if offset + size > flat.size:
                parts.append(
                    TritonError.internal(
                        f"output '{name}' has {flat.size} elements, too few for the shape "
                        f"{list(shape)} of input '{self._sources[name]}' in every request"
                    )
                )
            else:
                parts.append(flat[offset : offset + size].reshape(shape))
            offset += size
        return parts

    def _shape(self, name: str, request: InferenceRequest) -> tuple[int, ...]:
        source_name = self._sources[name]
        source = request.inputs.get(source_name)
        shape = self._shapes[name]
        wildcards = [i for i, d in enumerate(shape) if d == -1]
        if source is None or (wildcards and wildcards[-1] >= len(source.shape)):
            raise TritonError.invalid_arg(
                f"output '{name}' takes its shape {list(shape)} from input '{source_name}', "
                f"which the request does not provide with as many dimensions"
            )
        return tuple(source.shape[i] if d == -1 else d for i, d in enumerate(shape))

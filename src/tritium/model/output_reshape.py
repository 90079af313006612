"""Outputs with `reshape` leave in their configured `dims` shape.

Counterpart: Triton's InferenceResponse::Output, which, for an output whose configuration has
`reshape`, reports the configured `dims` (after the batch dimension of a batching model)
instead of the shape the model produced (the `reshape` shape). Variable dims (-1) take what
the produced shape leaves; when that is ambiguous the produced shape is kept.
"""

from __future__ import annotations

from math import prod

from tritonclient.grpc import model_config_pb2 as mc

from ..request import InferenceResponse


def output_reshapes(config: mc.ModelConfig) -> dict[str, tuple[int, ...]]:
    """Configured dims of each output that has a reshape."""
    return {o.name: tuple(o.dims) for o in config.output if o.HasField("reshape")}


def _target(dims: tuple[int, ...], shape: tuple[int, ...], batching: bool) -> tuple[int, ...]:
    head = shape[:1] if batching and shape else ()
    target = list(head + dims)
    variable = [i for i, d in enumerate(target) if d < 0]
    total = prod(shape)
    if len(variable) > 1:
        return shape
    if variable:
        known = prod(d for d in target if d >= 0)
        if known == 0 or total % known:
            return shape
        target[variable[0]] = total // known
    return tuple(target) if prod(target) == total else shape


def apply_output_reshapes(response: InferenceResponse, reshapes: dict[str, tuple[int, ...]],
                          batching: bool) -> None:
    for tensor in response.outputs:
        dims = reshapes.get(tensor.name)
        if dims is None:
            continue
        shape = _target(dims, tuple(tensor.shape), batching)
        if shape != tuple(tensor.shape):
            tensor.shape = shape
            tensor.data = tensor.data.reshape(shape)


__all__ = ["apply_output_reshapes", "output_reshapes"]

"""Which requests may share a batch: Triton's RequiredEqualInputs.

A batch's requests must agree on the shapes of its shape tensors and of its variable-size
inputs that do not allow ragged batches (Triton's enforce_equal_shape_tensors), and, when the
model has optional inputs, on which inputs they give. The dynamic batcher and both sequence
batcher strategies compare requests with it.
"""

from __future__ import annotations

from collections.abc import Hashable

from tritonclient.grpc import model_config_pb2 as mc

from ..request import InferenceRequest


class RequiredEqualInputs:
    """The inputs of `config` that requests of one batch must give alike."""

    __slots__ = ("_names", "_optional", "active")

    def __init__(self, config: mc.ModelConfig) -> None:
        self._names = tuple(
            i.name for i in config.input
            if i.is_shape_tensor or (not i.allow_ragged_batch and -1 in i.dims)
        )
        self._optional = any(i.optional for i in config.input)
        # False: any requests may batch together, nothing is compared.
        self.active = bool(self._names) or self._optional

    def key(self, request: InferenceRequest) -> Hashable:
        """What must be equal: the compared inputs' shapes past the batch dimension (and, with
        optional inputs, the names of the inputs given)."""
        inputs = request.inputs
        names = self._names
        if len(names) == 1 and not self._optional:  # the usual case, without a generator
            tensor = inputs.get(names[0])
            return (tensor.shape[1:] if tensor is not None else None,)
        key = tuple(inputs[name].shape[1:] if name in inputs else None for name in names)
        if self._optional:
            return key, frozenset(inputs)
        return key

    def match(self, request: InferenceRequest, first: InferenceRequest,
              first_key: Hashable) -> bool:
        """Whether `request` may join the batch `first` (whose key is `first_key`) starts."""
        return _same_form(request, first) or self.key(request) == first_key


def _same_form(request: InferenceRequest, other: InferenceRequest) -> bool:
    """Whether both requests were decoded from one template: then their inputs have the same
    names and shapes, and comparing their keys can be skipped."""
    return request.form is not None and request.form is other.form

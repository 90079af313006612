"""Sequence control inputs: the START, END, READY and CORRID tensors a stateful model asks for.

Triton's SequenceBatchScheduler::CreateBooleanControlTensors and SetControlTensors: the
configuration names a tensor per control kind, with the values that mean false and true
(`int32_false_true`, `fp32_false_true`, `bool_false_true`) or, for CORRID, a datatype. The
scheduler adds them to every request it hands to the model, shaped [1] (or [1, 1] when the model
batches), so the model sees them as ordinary inputs.
"""

from __future__ import annotations

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from ..request import SEQUENCE_END, SEQUENCE_START, InferenceRequest
from ..tensor import Tensor, numpy_dtype, wire_datatype

_Control = mc.ModelSequenceBatching.Control


class _BooleanControl:
    """One boolean control tensor: its name and its prebuilt false and true tensors' data."""

    __slots__ = ("name", "datatype", "false", "true")

    def __init__(
        self, name: str, control: mc.ModelSequenceBatching.Control, shape: tuple[int, ...]
    ) -> None:
        self.name = name
        if control.int32_false_true:
            self.datatype, values = "INT32", control.int32_false_true
        elif control.fp32_false_true:
            self.datatype, values = "FP32", control.fp32_false_true
        else:
            self.datatype, values = "BOOL", control.bool_false_true
        dtype = numpy_dtype(self.datatype)
        self.false = np.full(shape, values[0], dtype=dtype)
        self.true = np.full(shape, values[1], dtype=dtype)

    def tensor(self, value: bool) -> Tensor:
        # A fresh Tensor per request (backends may reshape their inputs); the data is shared
        # and never written.
        data = self.true if value else self.false
        return Tensor(self.name, self.datatype, data.shape, data)


class SequenceControls:
    """The control tensors a model's `sequence_batching.control_input` asks for."""

    def __init__(self, config: mc.ModelConfig) -> None:
        self._shape: tuple[int, ...] = (1, 1) if config.max_batch_size > 0 else (1,)
        self._start: _BooleanControl | None = None
        self._end: _BooleanControl | None = None
        self._ready: _BooleanControl | None = None
        self._corrid: tuple[str, str] | None = None
        for control_input in config.sequence_batching.control_input:
            for control in control_input.control:
                if control.kind == _Control.CONTROL_SEQUENCE_START:
                    self._start = _BooleanControl(control_input.name, control, self._shape)
                elif control.kind == _Control.CONTROL_SEQUENCE_END:
                    self._end = _BooleanControl(control_input.name, control, self._shape)
                elif control.kind == _Control.CONTROL_SEQUENCE_READY:
                    self._ready = _BooleanControl(control_input.name, control, self._shape)
                elif control.kind == _Control.CONTROL_SEQUENCE_CORRID:
                    self._corrid = (control_input.name, wire_datatype(control.data_type))

    def apply(self, request: InferenceRequest, *, ready: bool = True) -> None:
        """Add the control inputs to `request`; `ready=False` for a null (filler) request,
        whose START/END/READY are all false and CORRID zero, as in Triton."""
        flags = request.flags if ready else 0
        inputs = request.inputs
        if self._start is not None:
            inputs[self._start.name] = self._start.tensor(bool(flags & SEQUENCE_START))
        if self._end is not None:
            inputs[self._end.name] = self._end.tensor(bool(flags & SEQUENCE_END))
        if self._ready is not None:
            inputs[self._ready.name] = self._ready.tensor(ready)
        if self._corrid is not None:
            name, datatype = self._corrid
            inputs[name] = self._corrid_tensor(
                name, datatype, request.correlation_id if ready else 0
            )

    def _corrid_tensor(self, name: str, datatype: str, correlation_id: int | str) -> Tensor:
        if datatype == "BYTES":
            # An integer id given to a TYPE_STRING control arrives as its decimal text.
            data = np.full(self._shape, str(correlation_id).encode(), dtype=object)
        else:
            # Triton copies the id's low bytes; a string id has no integer value (zero).
            value = correlation_id if isinstance(correlation_id, int) else 0
            dtype = numpy_dtype(datatype)
            data = np.array(value & 0xFFFF_FFFF_FFFF_FFFF, dtype=np.uint64).astype(dtype)
            data = np.full(self._shape, data, dtype=dtype)
        return Tensor(name, datatype, self._shape, data)

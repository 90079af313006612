"""The pytorch backend: TorchScript models (`model.pt`, `platform: "pytorch_libtorch"`) run by
torch on the CPU, one `torch.jit.load` per instance, as Triton's libtorch backend.

torch is the optional extra `tritium[torch]`: without it the backend fails to initialize, so each
pytorch model is UNAVAILABLE with the install command, and everything else serves. TorchScript
keeps no tensor metadata, so there is no auto-complete (Triton neither): the configuration names
the inputs and outputs, matched to forward() by Triton's naming conventions (naming.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import (
    Backend,
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
    TritonError,
)
from tritium.tensor import wire_datatype

from ..framework import import_framework, utf8_strings
from ..sequence_io import SequenceTensors
from .naming import forward_signature, input_indices, output_indices
from .settings import TorchSettings, apply_thread_counts

log = logging.getLogger("tritium.backend.pytorch")

DEFAULT_MODEL_FILENAME = "model.pt"

# Model configuration types torch tensors can hold (ModelConfigDataTypeToTorchType).
_TORCH_TYPES = {
    mc.TYPE_BOOL: "bool",
    mc.TYPE_UINT8: "uint8",
    mc.TYPE_INT8: "int8",
    mc.TYPE_INT16: "int16",
    mc.TYPE_INT32: "int32",
    mc.TYPE_INT64: "int64",
    mc.TYPE_FP16: "float16",
    mc.TYPE_FP32: "float32",
    mc.TYPE_FP64: "float64",
}


class TorchModelState(ModelState):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.torch = model.backend.state
        if model.auto_complete:
            log.warning(
                "skipping model configuration auto-complete for '%s': not supported for "
                "pytorch backend", self.name,
            )
        self.settings = TorchSettings.from_config(self.config)
        apply_thread_counts(self.torch, self.config)
        self._shared: Any = None
        self._lock = threading.Lock()

    def load(self) -> Any:
        """The TorchScript module for one instance (the same one with weight sharing)."""
        with self._lock:
            if self._shared is not None:
                return self._shared
            module = self._load(self._path())
            if self.settings.weight_sharing:
                self._shared = module
            return module

    def _path(self) -> Path:
        path = self.model.version_path / (
            self.config.default_model_filename or DEFAULT_MODEL_FILENAME
        )
        if not path.exists():
            raise TritonError.unavailable(
                f"unable to find '{path}' for model instance '{self.name}'"
            )
        return path

    def _load(self, path: Path) -> Any:
        torch = self.torch
        try:
            with torch.inference_mode(self.settings.inference_mode):
                module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:
            raise TritonError.internal(f"failed to load model '{self.name}': {exc}") from None
        module.eval()
        return module


class TorchInstanceState(ModelInstanceState):
    model_state: TorchModelState

    def __init__(self, instance: ModelInstance) -> None:
        super().__init__(instance)
        config = instance.model.config
        self.torch = self.model_state.torch
        self.module = self.model_state.load()
        sequence = SequenceTensors.of(config)
        _check_controls(sequence)
        expected = len(config.input) + len(config.batch_input) + len(sequence)
        self.signature = forward_signature(self.module, config.name, expected)
        self.input_index = input_indices(config, self.signature, sequence)
        # The state outputs are read on every execution: the sequence batcher keeps them as the
        # sequence's next state (and never returns them to the client).
        self.output_index = output_indices(config, sequence)
        _check_datatypes(config, self.model_state.max_batch_size > 0)
        self.string_inputs = {i.name for i in config.input if i.data_type == mc.TYPE_STRING}
        self.output_types = {o.name: o.data_type for o in config.output}
        self.output_types.update({s.output_name: s.data_type for s in sequence.states})

    def execute(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        torch = self.torch
        settings = self.model_state.settings
        with torch.inference_mode(settings.inference_mode), torch.no_grad():
            arguments = [self._argument(name, data) for name, data in inputs.items()]
            settings.apply_jit(torch)
            try:
                if self.signature.dict_input:
                    result = self.module(dict(zip(inputs, arguments, strict=True)))
                else:
                    ordered: list[Any] = [None] * len(self.signature.arguments)
                    for name, argument in zip(inputs, arguments, strict=True):
                        ordered[self.input_index[name]] = argument
                    result = self.module(*ordered)
            except Exception as exc:
                raise TritonError.internal(f"PyTorch execute failure: {exc}") from None
            values = _outputs(result)
            return {name: self._output(name, values) for name in self.output_index}

    def _argument(self, name: str, data: np.ndarray) -> Any:
        if name in self.string_inputs:  # a 1-D List[str]
            return utf8_strings(name, data, "TorchScript")
        if not data.flags.writeable:  # torch wants memory it may write; requests are read-only
            data = data.copy()
        return self.torch.from_numpy(data)

    def _output(self, name: str, values: list[Any]) -> np.ndarray:
        index = self.output_index[name]
        if not 0 <= index < len(values):
            raise TritonError.invalid_arg(
                f"The output {name} in the model configuration refers to an output index which "
                f"doesn't exist. This model has {len(values)} outputs"
            )
        value = values[index]
        if isinstance(value, list):  # List[str]
            return np.array([str(s).encode("utf-8") for s in value], dtype=np.object_)
        if value.dim() == 0:
            raise TritonError.invalid_arg(f"output '{name}' is a scalar which is not supported.")
        array = value.detach().cpu().contiguous().numpy()
        expected = self.output_types[name]
        provided = _config_type(array.dtype)
        if provided != expected:
            raise TritonError.invalid_arg(
                f"configuration expects datatype TYPE_{wire_datatype(expected)} for output "
                f"'{name}', model provides TYPE_{wire_datatype(provided)}"
            )
        return array


def _outputs(result: Any) -> list[Any]:
    """forward()'s result as a list: a Tensor, a List[str], or a tuple of those."""
    values = list(result) if isinstance(result, tuple) else [result]
    for index, value in enumerate(values):
        if isinstance(value, list) and not all(isinstance(s, str) for s in value):
            raise TritonError.internal(
                f"PyTorch execute failure: output at index {index} must be of type Tensor or "
                "List[str]"
            )
        if not isinstance(value, list) and not hasattr(value, "dim"):
            raise TritonError.internal(
                "PyTorch execute failure: output must be of type Tensor, List[str] or Tuple "
                "containing one of these two types. It should not be a List / Dictionary of "
                "Tensors or a Scalar"
            )
    return values


def _config_type(dtype: np.dtype) -> int:
    for config_type, name in _TORCH_TYPES.items():
        if np.dtype(name) == dtype:
            return config_type
    return mc.TYPE_INVALID


def _check_controls(sequence: SequenceTensors) -> None:
    """ValidateTypedSequenceControl: a CORRID control of a type torch cannot hold is refused."""
    for control in sequence.controls:
        if control.data_type not in _TORCH_TYPES:
            raise TritonError.internal(
                f"input '{control.name}' type '{mc.DataType.Name(control.data_type)}' is not "
                "supported by PyTorch."
            )


def _check_datatypes(config: mc.ModelConfig, batching: bool) -> None:
    """Types torch cannot hold are refused; strings only as a 1-D List[str]."""
    for kind, ios in (("input", config.input), ("output", config.output)):
        for io in ios:
            type_name = mc.DataType.Name(io.data_type)
            if io.data_type == mc.TYPE_STRING:
                dims = list(io.reshape.shape) if io.HasField("reshape") else list(io.dims)
                if len(dims) + (1 if batching else 0) > 1:
                    raise TritonError.internal(
                        f"Triton only supports 1 dimensional List of String as {kind} for "
                        f"'{io.name}' for model '{config.name}'"
                    )
            elif io.data_type not in _TORCH_TYPES:
                raise TritonError.internal(
                    f"unsupported datatype {type_name} for {kind} '{io.name}' for model "
                    f"'{config.name}'"
                )


def initialize(backend: Backend) -> None:
    backend.state = import_framework("torch", "pytorch", "torch")


def model_initialize(model: Model) -> None:
    TorchModelState.create(model)


def model_instance_initialize(instance: ModelInstance) -> None:
    TorchInstanceState.create(instance)


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    instance.state.process_requests(requests)

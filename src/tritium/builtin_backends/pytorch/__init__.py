"""The pytorch backend: TorchScript models (`model.pt`, `platform: "pytorch_libtorch"`) run by
torch, one `torch.jit.load` per instance, as Triton's libtorch backend: a KIND_GPU instance on
`cuda:<device_id>`, a KIND_CPU one on the CPU, a KIND_MODEL one where the module puts itself
(device.py).

torch is the optional extra `tritium[torch]`: without it the backend fails to initialize, so each
pytorch model is UNAVAILABLE with the install command, and everything else serves. A torch built
without CUDA makes models that configure no instance group KIND_CPU even on a machine with GPUs
(the backend's preferred group), and refuses KIND_GPU ones. TorchScript
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
    BackendAttributes,
    Model,
    ModelInstance,
    ModelInstanceState,
    ModelState,
    Request,
    TritonError,
)
from tritium.tensor import wire_datatype

from ..framework import TritonBackendLog, import_framework, op_libraries, utf8_strings
from ..sequence_io import SequenceTensors
from .device import TorchDevice
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
        self.settings.log(self.config)
        apply_thread_counts(self.torch, self.config)
        for library in op_libraries(model):
            self._load_op_library(library)
        self._shared: dict[str, Any] = {}  # device -> module, with weight sharing
        self._lock = threading.Lock()

    def _load_op_library(self, library: Path) -> None:
        """A custom operator library (`model_operations`): its TORCH_LIBRARY registrations
        make the operators TorchScript models call. Triton's libtorch backend takes these only
        through LD_PRELOAD; Tritium reads the field as its onnxruntime backend does."""
        try:
            self.torch.ops.load_library(str(library))
        except Exception as exc:
            raise TritonError.invalid_arg(
                f"failed to load custom operator library '{library}' for model "
                f"'{self.name}': {exc}") from None

    def load(self, device: TorchDevice) -> Any:
        """The TorchScript module for one instance on its device (with weight sharing, the
        one module of every instance on that device)."""
        key = str(device.device)
        with self._lock:
            if key in self._shared:
                log.info("Reusing TorchScript model for instance '%s'", self.name)
                return self._shared[key]
            module = self._load(self._path(), device)
            if self.settings.weight_sharing:
                self._shared[key] = module
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

    def _load(self, path: Path, device: TorchDevice) -> Any:
        torch = self.torch
        try:
            with torch.inference_mode(self.settings.inference_mode):
                module = torch.jit.load(str(path), map_location=device.load_location)
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
        self.device = TorchDevice(self.torch, instance)
        self.module = self.model_state.load(self.device)
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

    def inputs_to_device(self, inputs: dict[str, np.ndarray]) -> dict[str, Any]:
        with self.device.running():
            arguments = {name: self._argument(name, data) for name, data in inputs.items()}
            self.device.synchronize()
        return arguments

    def execute(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """forward() on the batch; the configured outputs the batch asked for (and the state
        outputs), still on the device once the device is done with them."""
        torch = self.torch
        settings = self.model_state.settings
        with self.device.running(), torch.inference_mode(settings.inference_mode), \
                torch.no_grad():
            settings.apply(torch)
            try:
                if self.signature.dict_input:
                    result = self.module(inputs)
                else:
                    ordered: list[Any] = [None] * len(self.signature.arguments)
                    for name, argument in inputs.items():
                        ordered[self.input_index[name]] = argument
                    result = self.module(*ordered)
            except Exception as exc:
                raise TritonError.internal(f"PyTorch execute failure: {exc}") from None
            values = _outputs(result)
            outputs = {name: self._output(name, values) for name in self.output_index}
            self.device.synchronize()  # so that compute infer ends when the GPU has finished
        wanted = self.requested_outputs
        return {name: value for name, value in outputs.items() if not wanted or name in wanted}

    def outputs_to_host(self, outputs: dict[str, Any]) -> dict[str, np.ndarray]:
        with self.device.running():
            arrays = {name: _host_array(value) for name, value in outputs.items()}
        if self.model_state.settings.cache_cleaning:
            self.device.empty_cache()
        return arrays

    def _argument(self, name: str, data: np.ndarray) -> Any:
        if name in self.string_inputs:  # a 1-D List[str]
            return utf8_strings(name, data, "TorchScript")
        return self.device.tensor(data)

    def _output(self, name: str, values: list[Any]) -> Any:
        """The value forward() returned for output `name`, checked against its configuration."""
        index = self.output_index[name]
        if not 0 <= index < len(values):
            raise TritonError.invalid_arg(
                f"The output {name} in the model configuration refers to an output index which "
                f"doesn't exist. This model has {len(values)} outputs"
            )
        value = values[index]
        if isinstance(value, list):  # List[str]
            return value
        if value.dim() == 0:
            raise TritonError.invalid_arg(f"output '{name}' is a scalar which is not supported.")
        expected = self.output_types[name]
        provided = _config_type(str(value.dtype).removeprefix("torch."))
        if provided != expected:
            raise TritonError.invalid_arg(
                f"configuration expects datatype TYPE_{wire_datatype(expected)} for output "
                f"'{name}', model provides TYPE_{wire_datatype(provided)}"
            )
        return value


def _host_array(value: Any) -> np.ndarray:
    """An output as the server carries it: a List[str] as BYTES, a tensor copied to the host
    (once, from the GPU)."""
    if isinstance(value, list):
        return np.array([str(s).encode("utf-8") for s in value], dtype=np.object_)
    return value.detach().contiguous().cpu().numpy()


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


def _config_type(torch_type: str) -> int:
    """The configuration type of a torch dtype named without its `torch.` prefix."""
    for config_type, name in _TORCH_TYPES.items():
        if name == torch_type:
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


# Triton's pytorch backend logs its configuration itself (at INFO).
LOGS_CONFIGURATION = True
_lines = TritonBackendLog(log)


def initialize(backend: Backend) -> None:
    _lines.initialize(backend)
    backend.state = import_framework("torch", "pytorch", "torch")


def get_backend_attribute(backend: Backend, attributes: BackendAttributes) -> None:
    # Without CUDA, a model that configures no instance group runs on the CPU rather than
    # failing on a machine's GPUs; with it, the server's default (KIND_GPU where GPUs exist).
    torch = backend.state
    if not torch.cuda.is_available():
        log.info(
            "torch %s has no usable CUDA: pytorch models without an instance_group run on the "
            "CPU", torch.__version__,
        )
        attributes.add_preferred_instance_group("KIND_CPU")


def model_initialize(model: Model) -> None:
    _lines.model_initialize(model)
    TorchModelState.create(model)


def model_finalize(model: Model) -> None:
    _lines.model_finalize()


def model_instance_initialize(instance: ModelInstance) -> None:
    _lines.instance_initialize(instance)
    TorchInstanceState.create(instance)


def model_instance_finalize(instance: ModelInstance) -> None:
    _lines.instance_finalize()


def model_instance_execute(instance: ModelInstance, requests: Sequence[Request]) -> None:
    _lines.execute(instance, len(requests))
    instance.state.process_requests(requests)

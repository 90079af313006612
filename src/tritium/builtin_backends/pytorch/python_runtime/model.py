"""The pytorch backend's Python-based runtime: PyTorch 2 models served by the python backend.

A model whose configuration says `backend: "pytorch"` and `runtime: "model.py"` (Triton's
experimental "PyTorch 2.0 backend") is run by the python backend with this file as its
`model.py` (the backend manager finds it here when no `--backend-directory` has a
`pytorch/model.py`). The model's version folder holds, looked for in this order after any
`default_model_filename`:
- `model.py`: a class deriving `torch.nn.Module`, built without arguments, its weights loaded
  from the `state_dict` in `model.pt` beside it when there is one, and wrapped in
  `torch.compile` with the JSON object of the TORCH_COMPILE_OPTIONAL_PARAMETERS parameter;
- `model.pt`: a TorchScript module (`torch.jit.load`), run as it is.

forward() takes the configuration's inputs in their order and returns its outputs in their order
(a tensor, or a tuple or list of them). A batching model's requests run as one batch: their inputs
are concatenated along the batch dimension and the outputs split back. A KIND_GPU instance runs
on `cuda:<device_id>`, KIND_CPU on the CPU, KIND_MODEL where the module's first parameter is.
NUM_THREADS and NUM_INTEROP_THREADS set torch's thread counts (1 and 1 unless given), which is
why each instance's stub process is its own.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

import triton_python_backend_utils as pb_utils

try:
    import torch
except ModuleNotFoundError as error:  # the stub's environment has no torch
    raise pb_utils.TritonModelException(
        "the pytorch backend's Python runtime (runtime: \"model.py\") needs torch in the "
        "model's Python environment: pip install 'tritium[torch]'"
    ) from error

_DEFAULT_FILENAMES = ("model.py", "model.pt")
_THREAD_SETTINGS = (("NUM_THREADS", torch.set_num_threads, torch.get_num_threads),
                    ("NUM_INTEROP_THREADS", torch.set_num_interop_threads,
                     torch.get_num_interop_threads))


class TritonPythonModel:
    """One instance of a PyTorch 2 (or TorchScript) model."""

    def initialize(self, args: dict[str, str]) -> None:
        self._name = args["model_name"]
        self._for = f"for '{self._name}'"
        pb_utils.Logger.log_info(f"Initializing model instance {self._for}")
        config = json.loads(args["model_config"])
        parameters = {key: value.get("string_value", "")
                      for key, value in config.get("parameters", {}).items()}
        self._batching = config.get("max_batch_size", 0) > 0
        self._inputs = [entry["name"] for entry in config.get("input", [])]
        self._outputs = [entry["name"] for entry in config.get("output", [])]
        pb_utils.Logger.log_verbose(
            f"Torch parallelism settings {self._for}: {_set_thread_counts(parameters)}")
        compile_options = _compile_options(parameters)
        pb_utils.Logger.log_verbose(
            f"'torch.compile' optional parameter(s) {self._for}: {compile_options}")
        path = _model_file(config.get("default_model_filename", ""))
        device = _device(args["model_instance_kind"], args["model_instance_device_id"])
        if not path.endswith(".py"):
            pb_utils.Logger.log_info(f"Loading '{self._name}' as TorchScript")
            module = torch.jit.load(path, map_location=device)
            self._device = device or _parameter_device(module)
            self._model: Any = module.to(self._device).eval()
            return
        module = _model_class(self._name, path)()
        self._device = device or _parameter_device(module)
        weights = os.path.splitext(path)[0] + ".pt"
        if os.path.exists(weights):
            module.load_state_dict(torch.load(weights, map_location=self._device))
        else:
            pb_utils.Logger.log_info(f"Model parameter file not found {self._for}")
        self._model = torch.compile(module.to(self._device).eval(), **compile_options)

    def execute(self, requests: list[Any]) -> list[Any]:
        with torch.inference_mode():
            inputs = [self._request_inputs(request) for request in requests]
            if not self._batching:
                return [self._response(self._forward(tensors)) for tensors in inputs]
            sizes = [tensors[0].shape[0] if tensors else 0 for tensors in inputs]
            batch = [torch.cat(column) if len(column) > 1 else column[0]
                     for column in zip(*inputs, strict=True)]
            outputs = self._forward(batch)
            per_request = zip(*(torch.split(output, sizes) for output in outputs), strict=True)
            return [self._response(list(tensors)) for tensors in per_request]

    def _request_inputs(self, request: Any) -> list[Any]:
        tensors = []
        for name in self._inputs:
            tensor = pb_utils.get_input_tensor_by_name(request, name)
            if tensor is None:
                raise pb_utils.TritonModelException(
                    f"model '{self._name}': the request has no input '{name}'; forward() takes "
                    "every configured input")
            tensors.append(torch.from_dlpack(tensor.to_dlpack()).to(self._device))
        return tensors

    def _forward(self, inputs: Sequence[Any]) -> list[Any]:
        outputs = self._model(*inputs)
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        if len(outputs) < len(self._outputs):
            raise pb_utils.TritonModelException(
                f"model '{self._name}' returned {len(outputs)} output(s) for the "
                f"{len(self._outputs)} in its configuration")
        return outputs

    def _response(self, tensors: Sequence[Any]) -> Any:
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor.from_dlpack(name, tensor.detach().contiguous())
            for name, tensor in zip(self._outputs, tensors, strict=False)  # extra results unused
        ])

    def finalize(self) -> None:
        pb_utils.Logger.log_info(f"Removing model instance {self._for}")


def _set_thread_counts(parameters: dict[str, str]) -> str:
    """Apply NUM_THREADS / NUM_INTEROP_THREADS; Triton's words for the log."""
    said = ""
    for key, setter, getter in _THREAD_SETTINGS:
        value = parameters.get(key, "1")
        try:
            count = int(value)
        except ValueError:
            raise pb_utils.TritonModelException(
                f"parameter {key} must be an integer, got '{value}'") from None
        if getter() != count:  # torch refuses a second set of the inter-op count
            setter(count)
        said += f"{key} = {value}; "
    return said


def _compile_options(parameters: dict[str, str]) -> dict[str, Any]:
    """TORCH_COMPILE_OPTIONAL_PARAMETERS: keyword arguments of torch.compile, as JSON."""
    text = parameters.get("TORCH_COMPILE_OPTIONAL_PARAMETERS")
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as exc:
        raise pb_utils.TritonModelException(
            f"TORCH_COMPILE_OPTIONAL_PARAMETERS is not valid JSON: {exc}") from None
    if not isinstance(options, dict):
        raise pb_utils.TritonModelException(
            "TORCH_COMPILE_OPTIONAL_PARAMETERS must be a JSON object of torch.compile's "
            "keyword arguments")
    if "model" in options:
        raise pb_utils.TritonModelException(
            "'model' is not an optional parameter for 'torch.compile'")
    return options


def _model_file(default_filename: str) -> str:
    folder = pb_utils.get_model_dir()
    names = [default_filename, *_DEFAULT_FILENAMES] if default_filename else \
        list(_DEFAULT_FILENAMES)
    for name in names:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise pb_utils.TritonModelException(f"No model found in {folder}/{names}")


def _device(kind: str, device_id: str) -> Any:
    """The instance's device; None for KIND_MODEL (the module's own)."""
    if kind == "GPU":
        return torch.device(f"cuda:{device_id}")
    if kind == "CPU":
        return torch.device("cpu")
    return None


def _parameter_device(module: Any) -> Any:
    for parameter in module.parameters():
        return parameter.device
    raise pb_utils.TritonModelException(
        "Cannot determine model device: a KIND_MODEL instance runs where the model's first "
        "parameter is, and this model has none; use KIND_CPU or KIND_GPU")


def _model_class(model_name: str, path: str) -> Any:
    """The torch.nn.Module class of `path`: among the classes the file defines, the first by
    name (Triton takes the first by name among everything the file holds, imports included)."""
    module_name = "tritium_pytorch_model_" + re.sub(r"\W", "_", model_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # dataclasses and torch.compile look modules up
    spec.loader.exec_module(module)
    classes = [value for _, value in sorted(vars(module).items())
               if isinstance(value, type) and issubclass(value, torch.nn.Module)]
    own = [cls for cls in classes if cls.__module__ == module_name]
    if own or classes:
        return (own or classes)[0]
    raise pb_utils.TritonModelException(
        f"Cannot find a subclass of torch.nn.Module in {path}")

"""``InferenceResponse``: the output tensors (or the error) and parameters a model answers a
request with."""

from __future__ import annotations

from .errors import TritonError
from .parameters import _parameters_json
from .pybind_args import IncompatibleArguments, pybind_constructor
from .tensor import Tensor, _tensor_list


class InferenceResponse:
    """The response to one request: output tensors, or an error, and parameters."""

    @pybind_constructor(
        "c_python_backend_utils.InferenceResponse(output_tensors: "
        "List[c_python_backend_utils.Tensor] = [], error: c_python_backend_utils.TritonError "
        "= None)"
    )
    def __init__(
        self,
        output_tensors: list[Tensor] | tuple[Tensor, ...] = (),
        error: TritonError | None = None,
        parameters: dict | None = None,
    ) -> None:
        tensors = _tensor_list(
            output_tensors,
            "InferenceResponse()",
            "Output tensor for inference response should not be empty.",
        )
        if error is not None and not isinstance(error, TritonError):
            raise IncompatibleArguments()
        self._output_tensors = tensors
        self._error = error
        self._parameters = _parameters_json(parameters)

    def output_tensors(self) -> list[Tensor]:
        return list(self._output_tensors)

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error

    def parameters(self) -> str:
        """The response parameters as a JSON string."""
        return self._parameters

    def _prune_output_tensors(self, requested_output_names: set[str]) -> None:
        """Drop the outputs the request did not ask for (Triton's PruneOutputTensors)."""
        self._output_tensors = [
            t for t in self._output_tensors if t.name() in requested_output_names
        ]



def get_output_tensor_by_name(
    inference_response: InferenceResponse, name: str
) -> Tensor | None:
    """The response's output Tensor called ``name``, or None."""
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None

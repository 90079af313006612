"""Check a request against its model's configuration before it is queued.

Triton's InferenceRequest::Normalize: required inputs present, no unknown inputs or outputs,
datatypes and shapes as configured, one batch size within max_batch_size, reshape applied. The
messages follow Triton's wording, prefixed with the request id as Triton does.

What the checks read from the configuration is gathered once per model (`RequestSpec`): reading
protobuf fields costs more than the checks themselves. A request decoded from a frontend's
template carries its `form`; a form that passed once passes again (the checks read nothing
else), so the spec remembers it with its batch size.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import islice

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError
from ..request import InferenceRequest, log_prefix
from ..tensor import dims_string, wire_datatype


class InputSpec:
    """One configured input: its wire datatype, dims (without the batch dimension) and its
    reshape (None without one)."""

    __slots__ = ("datatype", "dims", "reshape")

    def __init__(self, spec: mc.ModelInput) -> None:
        self.datatype = wire_datatype(spec.data_type)
        self.dims = tuple(spec.dims)
        self.reshape = tuple(spec.reshape.shape) if spec.HasField("reshape") else None


class RequestSpec:
    """What normalization needs from a model configuration."""

    __slots__ = ("model", "inputs", "names", "required", "required_names", "outputs",
                 "max_batch_size", "passed")

    def __init__(self, config: mc.ModelConfig) -> None:
        self.model = config.name
        self.inputs = {i.name: InputSpec(i) for i in config.input}
        self.required = [i.name for i in config.input if not i.optional]
        # As sets too: a request's names are checked against them in one comparison.
        self.names = frozenset(self.inputs)
        self.required_names = frozenset(self.required)
        self.outputs = frozenset(o.name for o in config.output)
        self.max_batch_size = config.max_batch_size
        # Request forms that passed, with their batch size; not kept when an input reshapes
        # (the reshape is applied to each request's tensors). Bounded.
        self.passed: dict[object, int] | None = None if any(
            spec.reshape is not None for spec in self.inputs.values()) else {}


_PASSED_LIMIT = 64


def normalize_request(request: InferenceRequest, spec: RequestSpec | mc.ModelConfig) -> None:
    """Check `request` (TritonError with Triton's message if it fails), set its batch size and
    apply the configured reshapes."""
    if not isinstance(spec, RequestSpec):
        spec = RequestSpec(spec)
    form = request.form
    passed = spec.passed
    if form is not None and passed is not None:
        batch_size = passed.get(form)
        if batch_size is None:
            batch_size = _checked_batch_size(request, spec)
            if len(passed) >= _PASSED_LIMIT:
                passed.clear()
            passed[form] = batch_size
    else:
        batch_size = _checked_batch_size(request, spec)
    request.batch_size = batch_size


def _checked_batch_size(request: InferenceRequest, spec: RequestSpec) -> int:
    """The request's batch size (1 for a model without batching), once every check passed;
    reshapes applied."""
    model = spec.model
    inputs = spec.inputs
    given = request.inputs

    # Requested outputs first, as Triton's Normalize checks them before the inputs.
    if request.requested_outputs:
        outputs = spec.outputs
        for out in request.requested_outputs:
            if out.name not in outputs:
                raise TritonError.invalid_arg(
                    f"unexpected inference output '{out.name}' for model '{model}'"
                )
    required = spec.required
    # As Triton's ValidateRequestInputs: the count first (all names listed), then each input.
    if len(given) < len(required) or len(given) > len(inputs):
        raise _count_error(request, spec)
    names = given.keys()
    if not names <= spec.names:
        # Triton walks the inputs in its unordered_map's order, the reverse of the order they
        # were added in: with several wrong inputs, the last one given is the one reported.
        for name in reversed(given):
            if name not in inputs:
                raise TritonError.invalid_arg(
                    f"unexpected inference input '{name}' for model '{model}'"
                )
    if not names >= spec.required_names:
        raise _count_error(request, spec)

    max_batch_size = spec.max_batch_size
    batching = max_batch_size > 0
    batch_size = 0
    for name, tensor in reversed(given.items()):
        input_spec = inputs[name]
        if tensor.datatype != input_spec.datatype:
            raise TritonError.invalid_arg(
                f"{log_prefix(request.id)}inference input '{name}' data-type is "
                f"'{tensor.datatype}', but model '{model}' expects '{input_spec.datatype}'"
            )
        shape = tensor.shape
        if batching:
            if not shape:
                raise TritonError.invalid_arg(
                    f"{log_prefix(request.id)}input '{name}' has no shape but model requires "
                    f"batch dimension for '{model}'"
                )
            if batch_size == 0:
                batch_size = shape[0]
            elif shape[0] != batch_size:
                raise TritonError.invalid_arg(
                    f"{log_prefix(request.id)}input '{name}' batch size does not match other "
                    f"inputs for '{model}'"
                )
            shape = shape[1:]
        dims = input_spec.dims
        if shape != dims and not _matches(shape, dims):
            wanted = [-1, *dims] if batching else list(dims)
            raise TritonError.invalid_arg(
                f"{log_prefix(request.id)}unexpected shape for input '{name}' for model "
                f"'{model}'. Expected {dims_string(wanted)}, got {dims_string(tensor.shape)}."
                + (_BATCH_NOTE if batching else "")
            )
        if input_spec.reshape is not None:
            new_shape = ((batch_size,) if batching else ()) + input_spec.reshape
            tensor.data = tensor.data.reshape(new_shape)
            tensor.shape = tuple(tensor.data.shape)

    if batching:
        if batch_size < 1 or batch_size > max_batch_size:
            raise TritonError.invalid_arg(
                f"{log_prefix(request.id)}inference request batch-size must be <= "
                f"{max_batch_size} for '{model}'"
            )
        return batch_size
    return 1


_BATCH_NOTE = (
    " NOTE: Setting a non-zero max_batch_size in the model config requires a batch dimension to"
    " be prepended to each input shape. If you want to specify the full shape including the"
    " batch dim in your input dims config, try setting max_batch_size to zero. See the model"
    " configuration docs for more info on max_batch_size."
)


def _matches(shape: Sequence[int], dims: Sequence[int]) -> bool:
    if len(shape) != len(dims):
        return False
    # A loop: all() over a generator costs twice as much for the one or two dims of a request.
    for s, d in zip(shape, dims, strict=True):  # noqa: SIM110
        if d != s and d != -1:
            return False
    return True


def _count_error(request: InferenceRequest, spec: RequestSpec) -> TritonError:
    given, required = request.inputs, spec.required
    missing = [n for n in required if n not in given]
    expected = f"{len(required)} inputs"
    if len(required) != len(spec.inputs):  # some inputs are optional: Triton gives the range
        expected = f"number of inputs between {len(required)} and {len(spec.inputs)}"
    return TritonError.invalid_arg(
        f"{log_prefix(request.id)}expected {expected} but got {len(given)} inputs for "
        f"model '{spec.model}'. Got input(s) {_names(given)}, but missing required "
        f"input(s) {_missing_names(missing)}. Please provide all required input(s)."
    )


# The most names a list in a message shows; the rest are counted. Triton lists them all: for a
# request of 100,000 inputs that is 1.2 MB of text, which a gRPC client refuses as trailing
# metadata (RESOURCE_EXHAUSTED) instead of reading the INVALID_ARGUMENT it is.
LISTED_NAMES = 16


def _names(names: Collection[object]) -> str:
    """A name list as Triton writes it: ['A','B'] (no space); past LISTED_NAMES names, the
    first of them and how many more: ['A',...,'P'] and 99984 more."""
    text = "[" + ",".join(f"'{n}'" for n in islice(names, LISTED_NAMES)) + "]"
    if len(names) > LISTED_NAMES:
        text += f" and {len(names) - LISTED_NAMES} more"
    return text


def _missing_names(names: list[str]) -> str:
    """Triton's missing-inputs list: as `_names`, but an empty one prints as `]` (its
    builder drops the last character, the `[` when nothing was added)."""
    return _names(names) if names else "]"

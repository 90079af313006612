"""`tritium infer MODEL --input NAME=VALUE ...`: run one request from the shell, as `mlserver
infer` offers.

The model is served in-process from `--repository` (only that model is loaded) or asked of a
running server at `--url` (HTTP, or gRPC for `grpc://host:port`). An input is given as JSON
(`INPUT0=[1,2,3,4]`, `TEXT='"hello"'`; text that is not JSON is a BYTES string), or read from a
file (`INPUT0=@a.npy`, `INPUT0=@a.json`); its datatype is the model's, and its shape follows
`batch_dimension.shape_for_input` (a model that batches gets a batch of one when the value has
no batch dimension). Outputs are printed as
numpy's repr, or with `--json` as KServe-v2 JSON, one line per response (decoupled models
print each response as it comes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .batch_dimension import shape_for_input
from .datatypes import NUMPY_DTYPES


def add_parser(commands: Any) -> None:
    infer = commands.add_parser("infer", help="run one inference request and print the outputs")
    infer.add_argument("model")
    infer.add_argument("--input", "-i", action="append", default=[], metavar="NAME=VALUE",
                       help="VALUE is JSON, @file.npy or @file.json; repeatable")
    source = infer.add_mutually_exclusive_group(required=True)
    source.add_argument("--repository", action="append", type=Path,
                        help="serve MODEL in-process from this model repository (repeatable)")
    source.add_argument("--url", help="ask a running server: host:port (HTTP) or grpc://host:port")
    infer.add_argument("--model-version", default="", help="default: the version policy's")
    infer.add_argument("--backend-directory", default=None)
    infer.add_argument("--json", action="store_true", help="print KServe-v2 JSON, not numpy")


class InputError(ValueError):
    """An --input that cannot be read (named in the message)."""


class LoadError(RuntimeError):
    """The model did not load in-process (the message says why)."""


def parse_inputs(specs: list[str], metadata: dict[str, Any],
                 max_batch_size: int) -> dict[str, np.ndarray]:
    """`NAME=VALUE` specs -> arrays of the model's datatypes (and a batch of one if needed)."""
    declared = {t["name"]: t for t in metadata["inputs"]}
    arrays: dict[str, np.ndarray] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name:
            raise InputError(f"--input must be NAME=VALUE, got '{spec}'")
        if name not in declared:
            raise InputError(f"model '{metadata['name']}' has no input '{name}' "
                             f"(inputs: {', '.join(declared) or 'none'})")
        datatype = declared[name]["datatype"]
        array = _read_value(name, value, datatype)
        shape = declared[name]["shape"]  # the metadata's: with the batch dimension, if any
        dims = shape[1:] if max_batch_size > 0 else shape
        arrays[name] = shape_for_input(array, dims, max_batch_size)
    return arrays


def _read_value(name: str, value: str, datatype: str) -> np.ndarray:
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            if path.suffix == ".npy":
                return _typed(name, np.load(path, allow_pickle=False), datatype)
            return _typed(name, json.loads(path.read_text()), datatype)
        except (OSError, ValueError) as exc:
            raise InputError(f"--input {name}: cannot read {path}: {exc}") from None
    try:
        data: Any = json.loads(value)
    except ValueError:
        if datatype != "BYTES":
            raise InputError(f"--input {name}: '{value}' is not JSON") from None
        data = value
    return _typed(name, data, datatype)


def _typed(name: str, data: Any, datatype: str) -> np.ndarray:
    if datatype == "BYTES":
        array = np.array(data, dtype=np.object_)
        flat = [item if isinstance(item, bytes) else str(item).encode("utf-8")
                for item in array.reshape(-1).tolist()]
        out = np.empty(len(flat), np.object_)
        out[:] = flat
        return out.reshape(array.shape)
    try:
        return np.asarray(data).astype(NUMPY_DTYPES[datatype], casting="unsafe")
    except (TypeError, ValueError) as exc:
        raise InputError(f"--input {name}: not {datatype} data: {exc}") from None


def _print(model: str, outputs: dict[str, np.ndarray], as_json: bool, out: TextIO) -> None:
    if as_json:
        print(json.dumps({"model_name": model, "outputs": [
            {"name": name, "datatype": _datatype(array), "shape": list(array.shape),
             "data": [item.decode("utf-8", "replace") if isinstance(item, bytes) else item
                      for item in array.reshape(-1).tolist()]}
            for name, array in outputs.items()]}), file=out)
    else:
        for name, array in outputs.items():
            print(f"{name}: {array!r}", file=out)
    out.flush()


def _datatype(array: np.ndarray) -> str:
    if array.dtype == np.object_:
        return "BYTES"
    return next(name for name, dtype in NUMPY_DTYPES.items() if dtype == array.dtype)


def _in_process(args: argparse.Namespace) -> Iterator[dict[str, np.ndarray]]:
    from . import inprocess

    options: dict[str, Any] = {}
    if args.backend_directory:
        options["backend_directory"] = args.backend_directory
    # exit_on_error off: a model that fails to load is explained below with its reason, not
    # with the server's "failed to load all models".
    server = inprocess.Server(
        model_repository=[str(r) for r in args.repository],
        model_control_mode=inprocess.ModelControlMode.EXPLICIT, startup_models=[args.model],
        exit_on_error=False, **options).start()
    try:
        version = int(args.model_version) if args.model_version else -1
        model = server.model(args.model, version)
        if not model.ready():
            raise LoadError(_load_failure(server, args))
        config = model.config()
        arrays = parse_inputs(args.input, model.metadata(), config.get("max_batch_size", 0))
        for response in model.infer(inputs=arrays):
            if response.outputs:
                yield {name: (t.to_bytes_array() if t.data_type.name == "BYTES"
                              else np.from_dlpack(t)) for name, t in response.outputs.items()}
    finally:
        server.stop()


def _load_failure(server: Any, args: argparse.Namespace) -> str:
    """Why the model is not ready: its versions' reasons, or that the repository lacks it. A
    model whose configuration cannot be read has no version (the server only logs why, as
    Triton's start-up does): a load request brings the reason back."""
    versions = {key[1]: found for key, found in server.models().items()
                if key[0] == args.model}
    where = ", ".join(str(r) for r in args.repository)
    if not versions:
        return f"model '{args.model}' is not found in the model repository ({where})"
    reasons = "; ".join(f"version {number}: {found.reason}"
                        for number, found in sorted(versions.items()) if found.reason)
    if not reasons:
        try:
            server.load(args.model)
        except Exception as exc:
            reasons = str(exc)
    return f"failed to load model '{args.model}': {reasons or 'not ready'}"


def _remote(args: argparse.Namespace) -> Iterator[dict[str, np.ndarray]]:
    if args.url.startswith("grpc://"):
        import tritonclient.grpc as client_module

        url = args.url[len("grpc://"):]
    else:
        import tritonclient.http as client_module

        url = args.url.removeprefix("http://")
    client = client_module.InferenceServerClient(url)
    try:
        metadata = client.get_model_metadata(args.model, args.model_version)
        config = client.get_model_config(args.model, args.model_version)
        if not isinstance(metadata, dict):  # gRPC answers in protobuf messages
            from google.protobuf.json_format import MessageToDict

            metadata = MessageToDict(metadata, preserving_proto_field_name=True)
            config = MessageToDict(config, preserving_proto_field_name=True)
        config = config.get("config", config)
        for tensor in metadata["inputs"]:
            tensor["shape"] = [int(d) for d in tensor["shape"]]
        arrays = parse_inputs(args.input, metadata, int(config.get("max_batch_size", 0)))
        inputs = []
        for name, array in arrays.items():
            tensor = client_module.InferInput(
                name, list(array.shape),
                next(t["datatype"] for t in metadata["inputs"] if t["name"] == name))
            tensor.set_data_from_numpy(array)
            inputs.append(tensor)
        result = client.infer(args.model, inputs, model_version=args.model_version)
        yield {t["name"]: result.as_numpy(t["name"]) for t in metadata["outputs"]
               if result.as_numpy(t["name"]) is not None}
    finally:
        client.close()


def run(args: argparse.Namespace) -> int:
    from tritonclient.utils import InferenceServerException

    from .errors import TritonError

    out = sys.stdout
    if not args.url:
        # Model processes inherit file descriptor 1: send what they print to stderr, so that
        # stdout carries only the outputs.
        sys.stdout.flush()
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
    try:
        responses = _remote(args) if args.url else _in_process(args)
        for outputs in responses:
            _print(args.model, outputs, args.json, out)
    except (TritonError, InferenceServerException, InputError, LoadError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        if not args.url:
            raise
        # HTTP's refused or unresolvable address: one line, not the client's traceback.
        print(f"error: cannot reach a server at '{args.url}' (--url): "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        if out is not sys.stdout:
            os.dup2(out.fileno(), 1)
            out.close()
    return 0

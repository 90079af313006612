"""Tiny ONNX models built with onnx's helper API, for the onnxruntime backend tests and the
benchmark (nothing is downloaded: every model is made here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]

Dims = Sequence["int | str"]


def _value(name: str, elem_type: int, dims: Dims) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem_type, list(dims))


def _model(
    nodes: list, inputs: list, outputs: list, initializers: Sequence = ()
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "tritium_test", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=OPSET)
    model.ir_version = 8  # readable by every onnxruntime release of the last years
    onnx.checker.check_model(model)
    return model


def add_sub(
    batch: int | str = "batch", width: int = 4, elem_type: int = TensorProto.FLOAT
) -> onnx.ModelProto:
    """OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1 (Triton's classic `simple`)."""
    dims = [batch, width]
    return _model(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        [_value("INPUT0", elem_type, dims), _value("INPUT1", elem_type, dims)],
        [_value("OUTPUT0", elem_type, dims), _value("OUTPUT1", elem_type, dims)],
    )


def mlp(features: int = 64, hidden: int = 128, classes: int = 16, seed: int = 0) -> onnx.ModelProto:
    """A two-layer perceptron: logits = relu(x @ W1 + b1) @ W2 + b2, batch dimension symbolic."""
    rng = np.random.default_rng(seed)
    weights = {
        "W1": rng.standard_normal((features, hidden)).astype(np.float32),
        "b1": rng.standard_normal(hidden).astype(np.float32),
        "W2": rng.standard_normal((hidden, classes)).astype(np.float32),
        "b2": rng.standard_normal(classes).astype(np.float32),
    }
    return _model(
        [helper.make_node("Gemm", ["x", "W1", "b1"], ["h"]),
         helper.make_node("Relu", ["h"], ["a"]),
         helper.make_node("Gemm", ["a", "W2", "b2"], ["logits"])],
        [_value("x", TensorProto.FLOAT, ["batch", features])],
        [_value("logits", TensorProto.FLOAT, ["batch", classes])],
        [numpy_helper.from_array(w, name) for name, w in weights.items()],
    )


def strings(batch: int | str = "batch") -> onnx.ModelProto:
    """TEXT_OUT = TEXT_IN, ONNX strings."""
    return _model(
        [helper.make_node("Identity", ["TEXT_IN"], ["TEXT_OUT"])],
        [_value("TEXT_IN", TensorProto.STRING, [batch, 2])],
        [_value("TEXT_OUT", TensorProto.STRING, [batch, 2])],
    )


def scalar() -> onnx.ModelProto:
    """HALF = VALUE / 2 on scalars (shape []): Triton's configs carry them as dims [1]."""
    two = numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")
    return _model(
        [helper.make_node("Div", ["VALUE", "two"], ["HALF"])],
        [_value("VALUE", TensorProto.FLOAT, [])],
        [_value("HALF", TensorProto.FLOAT, [])],
        [two],
    )


def accumulator(batch: int | str = "batch", corrid: int = TensorProto.UINT64) -> onnx.ModelProto:
    """A stateful model for the sequence batcher: OUTPUT = INPUT + STATE_IN, the sum restarting
    when START is 1; STATE_OUT = OUTPUT; the controls START (int32), END (fp32), READY (bool)
    and CORRID (`corrid`) echoed as <name>_OUT so tests see what the scheduler sent."""
    dims = [batch, 1]
    controls = (("START", TensorProto.INT32), ("END", TensorProto.FLOAT),
                ("READY", TensorProto.BOOL), ("CORRID", corrid))
    one = helper.make_tensor("one_value", TensorProto.INT32, [], [1])
    nodes = [
        helper.make_node("Constant", [], ["one"], value=one),
        helper.make_node("Sub", ["one", "START"], ["carry"]),
        helper.make_node("Mul", ["STATE_IN", "carry"], ["kept"]),
        helper.make_node("Add", ["INPUT", "kept"], ["OUTPUT"]),
        helper.make_node("Identity", ["OUTPUT"], ["STATE_OUT"]),
    ] + [helper.make_node("Identity", [name], [f"{name}_OUT"]) for name, _ in controls]
    return _model(
        nodes,
        [_value("INPUT", TensorProto.INT32, dims)]
        + [_value(name, kind, dims) for name, kind in controls]
        + [_value("STATE_IN", TensorProto.INT32, dims)],
        [_value("OUTPUT", TensorProto.INT32, dims)]
        + [_value(f"{name}_OUT", kind, dims) for name, kind in controls]
        + [_value("STATE_OUT", TensorProto.INT32, dims)],
    )


def batch_inputs(reports: Sequence[tuple[str, int, int]]) -> onnx.ModelProto:
    """A model fed a ragged input and batch inputs, which shows each request what it was fed:
    RAGGED_OUT = RAGGED (the flat [-1] input), and for each (NAME, type, rank) of `reports`,
    input NAME comes back flattened as NAME_OUT [items, elements] and its shape as NAME_SHAPE
    [items, rank], a copy for each batch item. The batch items are counted by the first
    dimension of input ITEM_SHAPE (a BATCH_ITEM_SHAPE batch input), which must be among
    `reports`."""
    one = helper.make_tensor("one_value", TensorProto.INT64, [1], [1])
    row = helper.make_tensor("row_value", TensorProto.INT64, [2], [1, -1])
    nodes = [
        helper.make_node("Constant", [], ["one"], value=one),
        helper.make_node("Constant", [], ["row"], value=row),
        helper.make_node("Shape", ["ITEM_SHAPE"], ["items"], end=1),
        helper.make_node("Concat", ["items", "one"], ["rows"], axis=0),
        helper.make_node("Identity", ["RAGGED"], ["RAGGED_OUT"]),
    ]
    inputs = [_value("RAGGED", TensorProto.FLOAT, [-1])]
    outputs = [_value("RAGGED_OUT", TensorProto.FLOAT, [-1])]
    for name, elem_type, rank in reports:
        nodes += [
            helper.make_node("Reshape", [name, "row"], [f"{name}_row"]),
            helper.make_node("Expand", [f"{name}_row", "rows"], [f"{name}_OUT"]),
            helper.make_node("Shape", [name], [f"{name}_dims"]),
            helper.make_node("Reshape", [f"{name}_dims", "row"], [f"{name}_dims_row"]),
            helper.make_node("Expand", [f"{name}_dims_row", "rows"], [f"{name}_SHAPE"]),
        ]
        inputs.append(_value(name, elem_type, [f"{name}_{i}" for i in range(rank)]))
        outputs += [_value(f"{name}_OUT", elem_type, [-1, -1]),
                    _value(f"{name}_SHAPE", TensorProto.INT64, [-1, -1])]
    return _model(nodes, inputs, outputs)


def save(model: onnx.ModelProto, path: Path, external_data: bool = False) -> Path:
    """Write `model` to `path`; with `external_data`, `path` is a directory holding
    `model.onnx` and its weights in a separate file, as large models are shipped."""
    if external_data:
        path.mkdir(parents=True, exist_ok=True)
        onnx.save_model(model, str(path / "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="weights.bin",
                        size_threshold=0)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        onnx.save_model(model, str(path))
    return path

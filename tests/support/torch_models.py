"""Tiny TorchScript models for the pytorch backend tests, scripted with torch.jit.script (which
needs their source, hence a module of their own) and saved as `model.pt`."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from support.models import infer_arrays


class AddSub(torch.nn.Module):
    """Inputs by the <name>__<index> convention: OUTPUT__0 = a + b, OUTPUT__1 = a - b."""

    def forward(self, a: torch.Tensor, b: torch.Tensor):
        return a + b, a - b


class Difference(torch.nn.Module):
    """Inputs by forward argument name: the configuration may list them in any order."""

    def forward(self, minuend: torch.Tensor, subtrahend: torch.Tensor) -> torch.Tensor:
        return minuend - subtrahend


class Doubler(torch.nn.Module):
    """One Dict[str, Tensor] argument: every configured input arrives by name."""

    def forward(self, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        return inputs["x"] * 2 + inputs["y"]


class Accumulator(torch.nn.Module):
    """The stateful accumulator of onnx_models.accumulator, arguments by position: the sum of
    `value` restarts when `start` is 1, the controls are echoed, the new state comes last."""

    def forward(self, value: torch.Tensor, start: torch.Tensor, end: torch.Tensor,
                ready: torch.Tensor, corrid: torch.Tensor, state: torch.Tensor):
        total = value + state * (1 - start)
        return total, start, end, ready, corrid, total


class Shout(torch.nn.Module):
    """Strings: a List[str] in, a List[str] out."""

    def forward(self, words: list[str]) -> list[str]:
        return [w.upper() for w in words]


class BatchInputReport(torch.nn.Module):
    """onnx_models.batch_inputs for TorchScript, arguments in configuration order: the ragged
    input, then the batch inputs COUNT, ACC, ACC_ZERO, MAX_SHAPE, ITEM_SHAPE, ITEM_FLAT. Returns
    the ragged input, then for each batch input its values and its shape, a row per batch item
    (the first dimension of ITEM_SHAPE)."""

    def forward(self, ragged: torch.Tensor, count: torch.Tensor, acc: torch.Tensor,
                acc_zero: torch.Tensor, max_shape: torch.Tensor, item_shape: torch.Tensor,
                item_flat: torch.Tensor):
        items = item_shape.size(0)
        count_out, count_shape = self.report(count, items)
        acc_out, acc_shape = self.report(acc, items)
        acc_zero_out, acc_zero_shape = self.report(acc_zero, items)
        max_out, max_shape_shape = self.report(max_shape, items)
        item_out, item_shape_shape = self.report(item_shape, items)
        flat_out, flat_shape = self.report(item_flat, items)
        return (ragged.clone(), count_out, count_shape, acc_out, acc_shape, acc_zero_out,
                acc_zero_shape, max_out, max_shape_shape, item_out, item_shape_shape, flat_out,
                flat_shape)

    def report(self, tensor: torch.Tensor, items: int) -> tuple[torch.Tensor, torch.Tensor]:
        shape = torch.tensor(tensor.shape, dtype=torch.int64)
        return (tensor.reshape(1, -1).expand(items, -1).contiguous(),
                shape.reshape(1, -1).expand(items, -1).contiguous())


def mlp(features: int = 64, hidden: int = 128, classes: int = 16) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
    ).eval()


def square_mlp(width: int = 2048, layers: int = 4) -> torch.nn.Module:
    """`layers` Linear(width, width) with a ReLU between each two, FP32: issue 29's GPU
    benchmark model at its defaults (enough work per batch for a GPU to beat 16 CPU cores 20x),
    small and quick for a GPU test at width 64."""
    torch.manual_seed(0)
    modules: list[torch.nn.Module] = []
    for index in range(layers):
        if index:
            modules.append(torch.nn.ReLU())
        modules.append(torch.nn.Linear(width, width))
    return torch.nn.Sequential(*modules).eval()


def save(module: torch.nn.Module, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # TorchScript is deprecated, and what Triton serves
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(module).save(str(path))
    return path


class WhereAmI(torch.nn.Module):
    """Where forward() ran: per row, 1 if the input was on a CUDA device (else 0), and that
    device's index (-1 on the CPU)."""

    def forward(self, x: torch.Tensor):
        rows = x.size(0)
        on_gpu = torch.full([rows, 1], 1 if x.is_cuda else 0, dtype=torch.int64)
        device = torch.full([rows, 1], x.get_device(), dtype=torch.int64)
        return on_gpu, device


class Placed(torch.nn.Module):
    """A module that places itself (for KIND_MODEL): forward() moves its inputs to the device its
    `anchor` buffer was saved on, prints that device (a TorchScript print, which lands in the
    server's log), and returns a + b and a - b there, and per row that device's index (-1 for
    the CPU)."""

    def __init__(self, device: str = "cpu") -> None:
        super().__init__()
        self.register_buffer("anchor", torch.zeros(1, device=device))

    def forward(self, a: torch.Tensor, b: torch.Tensor):
        a = a.to(self.anchor.device)
        b = b.to(self.anchor.device)
        print(f"Placed - inputs on {a.device}")
        where = torch.full([a.size(0), 1], a.get_device(), dtype=torch.int64)
        return a + b + self.anchor, a - b, where


def assert_mlp_served(module: Any, url: str, model: str, seed: int, tolerance: float) -> None:
    """A served `mlp()` model answers what torch computes on the CPU, at batch 1 and 8."""
    rng = np.random.default_rng(seed)
    reference = mlp()
    for batch in (1, 8):
        x = rng.standard_normal((batch, 64)).astype(np.float32)
        with torch.no_grad():
            expected = reference(torch.from_numpy(x)).numpy()
        got = infer_arrays(module, url, model, {"x__0": x}).as_numpy("logits__0")
        assert got.shape == (batch, 16)
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)

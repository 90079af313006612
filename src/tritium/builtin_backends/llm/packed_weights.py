"""Linear layers on weights packed once for oneDNN's matrix multiply, on the CPU.

Every engine step multiplies a few dozen rows (one token per decoding sequence) or a few
hundred (a prompt chunk) by every weight matrix of the model. torch's default CPU path packs
blocks of the weight into its kernel's layout on every call; oneDNN can take the weight packed
once, at load (what torch.compile's CPU backend and Intel's extension do). Measured on one core
with the bench's model (hidden 512): a [32, 512] x [512, 2752] product 13 % faster, a
[256, 512] one 24 % faster, a decode step of 32 sequences 5 % faster.

The packed copy replaces the weight. A weight another module also uses (an lm_head tied to the
input embeddings) is left alone, and so is any layer that is not a plain `torch.nn.Linear`
(quantized or adapter layers keep their own forward).

transformers loads a checkpoint's weights as views of the safetensors file, mapped in memory:
a packed weight's pages of that file would stay mapped (and counted in the process's resident
memory, once packing has read them) as long as any other weight still points into the file.
So the weights left unpacked (embeddings, norms) are copied out, and the mapping goes: the
model then holds its weights once, as a model loaded by copying them would.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch


class PackedLinear(torch.nn.Module):
    """A `torch.nn.Linear` whose weight oneDNN has packed. `weight` keeps the original's shape
    and dtype on the meta device, for model code that reads them; it holds no values."""

    def __init__(self, linear: torch.nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        weight = linear.weight.detach()
        # The second argument is the batch size oneDNN tunes the layout for (any size runs).
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, 32)
        self.weight = torch.empty(weight.shape, dtype=weight.dtype, device="meta")
        # A copy: the original may be a view of the checkpoint file, which it would keep mapped.
        self.bias = None if linear.bias is None else linear.bias.detach().clone()

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(inputs, self.packed, self.bias, "none", [], "")


def available() -> bool:
    """Whether this torch build has oneDNN (x86 and most ARM builds do)."""
    return torch.backends.mkldnn.is_available() and \
        hasattr(torch.ops.mkldnn, "_reorder_linear_weight")


def pack_linear_layers(model: Any) -> int:
    """Replace `model`'s plain linear layers by packed ones, in place, on a CPU model; returns
    how many were packed."""
    shared = _shared_parameters(model)
    packed = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and id(child.weight) not in shared:
                setattr(parent, name, PackedLinear(child))
                packed += 1
    if packed:
        _copy_out(model)
    return packed


def _copy_out(model: Any) -> None:
    """Every parameter and buffer in memory of its own (none a view of the checkpoint file)."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.data = parameter.data.clone()
        for module in model.modules():
            for name, buffer in list(module.named_buffers(recurse=False)):
                setattr(module, name, buffer.clone())


def _shared_parameters(model: Any) -> set[int]:
    """The parameters held by more than one module (tied weights)."""
    held = Counter(id(parameter)
                   for _, parameter in model.named_parameters(remove_duplicate=False))
    return {key for key, count in held.items() if count > 1}

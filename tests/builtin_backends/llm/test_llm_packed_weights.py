"""The llm backend's CPU linear layers on oneDNN-packed weights (packed_weights.py): the same
outputs as torch's own linear, the original weights freed, tied weights left alone, and a
model the runner loads on the CPU runs packed (its greedy tokens are checked against
transformers by test_llm_engine_steps.py and the architecture tests)."""

from __future__ import annotations

import copy
import gc
import weakref
from pathlib import Path

import pytest

from support.llm_models import build_model

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tritium.builtin_backends.llm import packed_weights  # noqa: E402

pytestmark = pytest.mark.skipif(not packed_weights.available(),
                                reason="this torch build has no oneDNN")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_packed_layer_gives_the_linear_outputs(bias: bool, dtype: str) -> None:
    torch.manual_seed(0)
    linear = torch.nn.Linear(96, 160, bias=bias).to(getattr(torch, dtype))
    packed = packed_weights.PackedLinear(linear)
    assert packed.weight.shape == linear.weight.shape and packed.weight.dtype == linear.weight.dtype
    assert packed.weight.is_meta  # shape and dtype only: the values live in the packed copy
    tolerance = 1e-4 if dtype == "float32" else 2e-2
    with torch.inference_mode():
        for shape in [(1, 96), (7, 96), (32, 96), (300, 96), (1, 13, 96)]:
            inputs = torch.randn(shape).to(linear.weight.dtype)
            expected = linear(inputs)
            found = packed(inputs)
            assert found.shape == expected.shape
            torch.testing.assert_close(found.float(), expected.float(), rtol=tolerance,
                                       atol=tolerance)
        strided = torch.randn(1, 26, 96).to(linear.weight.dtype)[:, ::2]  # not contiguous
        torch.testing.assert_close(packed(strided).float(), linear(strided).float(),
                                   rtol=tolerance, atol=tolerance)


def _tiny_llama(tied: bool):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         tie_word_embeddings=tied)
    return LlamaForCausalLM(config).eval()


@pytest.mark.parametrize("tied", [True, False])
def test_packing_a_model_keeps_its_logits_and_frees_the_weights(tied: bool) -> None:
    model = _tiny_llama(tied)
    reference = copy.deepcopy(model)
    originals = [weakref.ref(module.weight) for module in model.modules()
                 if type(module) is torch.nn.Linear and module is not model.lm_head]
    linears = sum(type(module) is torch.nn.Linear for module in model.modules())

    packed = packed_weights.pack_linear_layers(model)
    gc.collect()

    # Each layer's q, k, v, o, gate, up and down projections, and lm_head unless it is tied.
    assert packed == 7 * 2 + (0 if tied else 1) == linears - (1 if tied else 0)
    assert all(ref() is None for ref in originals), "a packed layer's weight is still held"
    assert (type(model.lm_head) is torch.nn.Linear) == tied
    if tied:
        assert model.lm_head.weight is model.model.embed_tokens.weight
    ids = torch.randint(0, 128, (1, 21))
    with torch.inference_mode():
        expected = reference(input_ids=ids).logits
        found = model(input_ids=ids).logits
    torch.testing.assert_close(found, expected, rtol=1e-4, atol=1e-4)
    assert torch.equal(found.argmax(-1), expected.argmax(-1))


@pytest.mark.parametrize("family", ["llama", "qwen2"])  # Qwen2's q/k/v projections have biases
def test_the_runner_packs_a_model_it_loads_on_the_cpu(tmp_path: Path, family: str) -> None:
    from tritium.builtin_backends.llm.runner import Checkpoint, ModelRunner

    folder = build_model(tmp_path / family, family)
    runner = ModelRunner.load(Checkpoint.open(folder, folder, None), "auto",
                              torch.device("cpu"))
    kinds = {type(module) for module in runner.model.modules()}
    assert packed_weights.PackedLinear in kinds
    plain = [name for name, module in runner.model.named_modules()
             if type(module) is torch.nn.Linear]
    # Only an lm_head tied to the embeddings stays a plain layer.
    assert plain in ([], ["lm_head"])
    # The weights left unpacked were copied out of the checkpoint file, which is no longer
    # mapped (its pages would otherwise count twice: there and packed).
    weights = str(folder / "model.safetensors")
    assert not any(line.endswith(weights) for line in Path("/proc/self/maps").read_text()
                   .splitlines()), "the checkpoint file is still mapped"

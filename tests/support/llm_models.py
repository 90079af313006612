"""Tiny decoder-only models in the Hugging Face layout, made here (no downloads), for the llm
backend's tests and benchmark.

Each family (Llama, Qwen2, Mistral, GPT-2, and the ARCHITECTURES below) gets a transformers
config with 2 layers and a small hidden size, random weights from a fixed seed
(`initializer_range` wide enough that greedy decoding never meets near-ties), saved with
`save_pretrained` as safetensors, next to a byte-level BPE tokenizer trained here with the
`tokenizers` library (with a chat template) and saved as a `PreTrainedTokenizerFast`.
"""

from __future__ import annotations

import json
from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Tritium serves models like Triton does, over HTTP and gRPC.",
    "Continuous batching admits new requests between decode steps.",
    "Héllo wörld, ça va? Grüße aus Köln. 你好，世界。 日本語のテキスト。 🙂🚀✨",
    "Once upon a time there was a tiny language model that could count: one two three four.",
    "def add(a, b):\n    return a + b\n",
] * 20
FAMILIES = ("llama", "qwen2", "mistral", "gpt2")
_LLAMA_SHAPE = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512)
# Architectures whose attention differs from Llama's, each as transformers' own config class
# with its dimensions: sliding windows (all layers, or alternating with full attention),
# logit soft-capping, tied embeddings, q/k norms, partial rotary with parallel residuals,
# learned positions, a mixture of experts. SLIDING_WINDOW is shorter than the tests' prompts.
SLIDING_WINDOW = 8
ARCHITECTURES: dict[str, tuple[str, dict]] = {
    "mistral_sliding": ("MistralConfig", {**_LLAMA_SHAPE, "sliding_window": SLIDING_WINDOW}),
    "phi3_sliding": ("Phi3Config", {**_LLAMA_SHAPE, "sliding_window": SLIDING_WINDOW,
                                    "original_max_position_embeddings": 512}),
    "gemma2": ("Gemma2Config", {**_LLAMA_SHAPE, "head_dim": 32, "query_pre_attn_scalar": 32,
                                "sliding_window": SLIDING_WINDOW, "tie_word_embeddings": False}),
    "qwen3": ("Qwen3Config", {**_LLAMA_SHAPE, "head_dim": 16, "tie_word_embeddings": True}),
    "gpt_neox": ("GPTNeoXConfig", {"hidden_size": 64, "intermediate_size": 128,
                                   "num_hidden_layers": 2, "num_attention_heads": 4,
                                   "max_position_embeddings": 512, "rotary_pct": 0.25,
                                   "use_parallel_residual": True}),
    "opt": ("OPTConfig", {"hidden_size": 64, "ffn_dim": 128, "num_hidden_layers": 2,
                          "num_attention_heads": 4, "max_position_embeddings": 512,
                          "word_embed_proj_dim": 64}),
    "mixtral": ("MixtralConfig", {**_LLAMA_SHAPE, "num_local_experts": 4,
                                  "num_experts_per_tok": 2}),
}


def train_tokenizer(folder: Path) -> None:
    """A byte-level BPE tokenizer with special tokens and a chat template, saved in `folder`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|begin|>", "<|user|>", "<|assistant|>", "<|system|>",
                "<|end|>", "<|pad|>"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|begin|>", eos_token="<|endoftext|>",
        pad_token="<|pad|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)


def _config(family: str, vocab_size: int, eos: int, bos: int, pad: int, sizes: dict):
    import transformers

    common = dict(vocab_size=vocab_size, eos_token_id=eos, bos_token_id=bos, pad_token_id=pad,
                  initializer_range=0.5, tie_word_embeddings=False)
    if family == "gpt2":
        return transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=512, **common)
    if family in ARCHITECTURES:
        name, shape = ARCHITECTURES[family]
        return getattr(transformers, name)(**{**common, **shape, **sizes})
    classes = {"llama": transformers.LlamaConfig, "qwen2": transformers.Qwen2Config,
               "mistral": transformers.MistralConfig}
    return classes[family](**{**_LLAMA_SHAPE, **common, **sizes})


def build_model(folder: Path, family: str = "llama", seed: int = 0, dtype: str = "float32",
                device: str = "cpu", **sizes: float) -> Path:
    """A tiny `family` model and its tokenizer in `folder` (config.json, model.safetensors,
    tokenizer files, generation_config.json); returns `folder`. `sizes` replace the Llama-shaped
    families' dimensions (hidden_size, num_key_value_heads, ..., initializer_range); the
    weights are made in `dtype` on `device` (a large model initialises faster on a GPU)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    train_tokenizer(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = _config(family, len(tokenizer), tokenizer.eos_token_id, tokenizer.bos_token_id,
                     tokenizer.pad_token_id, sizes)
    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.save_pretrained(folder, safe_serialization=True)
    return folder


def llm_repository(root: Path, models: dict[str, dict], weights: dict[str, Path]) -> Path:
    """A model repository of llm-backend models: {name: {"family": ..., "engine": {...model.json},
    "config": extra config.pbtxt text, "backend": the name config.pbtxt gives (llm)}}; weights
    are symlinked from `weights[family]`."""
    for name, spec in models.items():
        version = root / name / "1"
        version.mkdir(parents=True, exist_ok=True)
        for item in weights[spec.get("family", "llama")].iterdir():
            (version / item.name).symlink_to(item)
        if "engine" in spec:
            (version / "model.json").write_text(json.dumps(spec["engine"]))
        (root / name / "config.pbtxt").write_text(
            f'backend: "{spec.get("backend", "llm")}"\n' + spec.get("config", ""))
    return root

"""The model runner: a Hugging Face decoder-only model and its forward passes over the KV slots.

It plays the part of vLLM's model runner (or MindIE's model executor) under Triton's LLM
backends: it loads the model version folder as transformers saves it (config.json,
*.safetensors, tokenizer files), then runs the engine's steps: one forward pass over the next
token of every decoding sequence and prompt chunks of others, flattened into one sequence axis,
with the model's attention switched to one that keeps the sequences apart over the KV slots
(slot_attention.py, with the masks of attention_masks.py: each row sees its own positions and
nothing past its own length). transformers supplies the layers and the attention
implementation; scheduling, caching and sampling stay in the engine.

A runner lives on one device: the CPU for KIND_CPU (and KIND_MODEL) instances, `cuda:<device_id>`
for KIND_GPU ones, with its weights, its KV slots and every tensor of a pass there. What crosses
between host and device is what the engine must see or say: a step's tokens, positions and rows
(one copy), and the sampled tokens (one copy back, sampling.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tritium.backend import TritonError

from . import packed_weights
from .attention_masks import AttentionMasks
from .guided_decoding import Grammars
from .kv_cache import SlotCache, SlotStore
from .slot_attention import PLAN_KEYWORD, Segment, SlotAttention, StepPlan

_DTYPES = {"float32": torch.float32, "float": torch.float32, "bfloat16": torch.bfloat16,
           "float16": torch.float16, "half": torch.float16}
# What a KIND_GPU instance on a CPU-only torch is told to install.
CUDA_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cu130"
# The forward passes hand transformers the KV cache as `cache=`, a name it takes from 5.24 on
# (older releases ignore it silently and never use the cache).
TRANSFORMERS_MIN = (5, 24)
# transformers' from_pretrained is not safe in parallel threads (--model-load-thread-count):
# two at once have left a tied lm_head uninitialised. Loads of weights take turns.
_LOAD_LOCK = threading.Lock()


def check_transformers() -> None:
    """UNAVAILABLE, saying what to install, when transformers is older than the runner needs."""
    import transformers

    found = transformers.__version__
    parts = tuple(int(p) for p in found.split(".")[:2] if p.isdigit())
    if parts < TRANSFORMERS_MIN:
        wanted = ".".join(map(str, TRANSFORMERS_MIN))
        raise TritonError.unavailable(
            f"the llm backend needs transformers>={wanted}, found {found}: "
            f"pip install 'transformers>={wanted}'"
        )


class Checkpoint:
    """What every runner of one model shares, whatever its device: the model folder, its
    configuration and tokenizer, and the longest sequence served (prompt plus output)."""

    def __init__(self, folder: Path, config: Any, tokenizer: Any, max_model_len: int) -> None:
        self.folder = folder
        self.config = config
        self.tokenizer = tokenizer
        self.max_model_len = max_model_len
        # The most characters one token stands for: its string (with markers such as byte-level
        # BPE's) is at least as long as its text. Bounds the text a prompt can fit (prompt.py).
        self.longest_token = max((len(token) for token in tokenizer.get_vocab()), default=1)
        # The model's vocabulary (its embedding's rows): token ids a request gives are checked
        # against it.
        self.vocab_size: int = config.get_text_config(decoder=True).vocab_size
        self.grammars = Grammars(tokenizer, self.vocab_size)

    @classmethod
    def open(cls, folder: Path, tokenizer_folder: Path, max_model_len: int | None
             ) -> Checkpoint:
        from transformers import AutoConfig, AutoTokenizer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no progress bars in the server's log
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder, local_files_only=True)
        text = config.get_text_config(decoder=True)
        limit = (getattr(text, "max_position_embeddings", None)
                 or getattr(text, "n_positions", None) or 2048)
        return cls(folder, config, tokenizer, min(max_model_len or limit, limit))


def instance_device(kind: str, device_id: int) -> torch.device:
    """Where an instance's engine runs: `cuda:<device_id>` for KIND_GPU, else the CPU; a GPU
    torch cannot use is UNAVAILABLE, saying what to install or check."""
    if kind != "KIND_GPU":
        return torch.device("cpu")
    if torch.version.cuda is None:
        raise TritonError.unavailable(
            f"a KIND_GPU instance needs PyTorch built with CUDA, but the installed torch "
            f"{torch.__version__} is CPU-only; install a CUDA build: {CUDA_TORCH}"
        )
    if not torch.cuda.is_available():
        raise TritonError.unavailable(
            f"a KIND_GPU instance needs a GPU, but torch {torch.__version__} (CUDA "
            f"{torch.version.cuda}) finds none: check the NVIDIA driver with nvidia-smi"
        )
    if device_id >= torch.cuda.device_count():
        raise TritonError.unavailable(
            f"GPU {device_id} is not visible to torch, which sees {torch.cuda.device_count()} "
            "GPU(s) (CUDA_VISIBLE_DEVICES)"
        )
    return torch.device("cuda", device_id)


@dataclass
class Chunk:
    """A run of one sequence's prompt in a step: `tokens` at positions start.. of `row`; the
    logits of its `keep` last positions are wanted (1: it ends the prompt; all of them: the
    prompt's logprobs; 0: neither)."""

    row: int
    tokens: list[int]
    start: int
    keep: int


class ModelRunner:
    """A loaded model on one device (shared by the model's instances on that device: weights
    are read-only). Its passes run under torch.inference_mode, which the engine thread holds."""

    def __init__(self, checkpoint: Checkpoint, model: Any, device: torch.device) -> None:
        self.model = model
        self.tokenizer = checkpoint.tokenizer
        self.config = model.config
        self.max_model_len = checkpoint.max_model_len
        self.device = device
        self.dtype = next(model.parameters()).dtype
        text = self.config.get_text_config(decoder=True)
        heads = text.num_attention_heads
        self.layers = text.num_hidden_layers
        self.kv_heads = getattr(text, "num_key_value_heads", None) or heads
        self.head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
        self.vocab_size = text.vocab_size
        # The masks' format follows the model's own attention implementation: read it before
        # the model is switched to the slots' attention.
        self.masks = AttentionMasks(self.config, self.dtype)
        self.attention = SlotAttention(model, self.masks.layer_kinds)
        self._placeholder_mask = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=device)

    @classmethod
    def load(cls, checkpoint: Checkpoint, dtype: str, device: torch.device) -> ModelRunner:
        """The checkpoint's weights in `dtype` (`auto`: float32) on `device`."""
        from transformers import AutoModelForCausalLM

        check_transformers()
        torch_dtype = torch.float32 if dtype == "auto" else _DTYPES[dtype]
        with _LOAD_LOCK:
            loaded: Any = AutoModelForCausalLM.from_pretrained(
                checkpoint.folder, config=checkpoint.config, dtype=torch_dtype,
                local_files_only=True, output_loading_info=True,
            )
        model, info = loaded  # (model, loading info) with output_loading_info
        # A weight the checkpoint lacks would be left as initialised at random: the model
        # would answer garbage and report ready. It does not load.
        missing = sorted(info.get("missing_keys") or ())
        mismatched = sorted(str(key) for key in info.get("mismatched_keys") or ())
        if missing or mismatched:
            shown = ", ".join((missing + mismatched)[:5])
            more = len(missing) + len(mismatched) - 5
            raise TritonError.invalid_arg(
                f"the checkpoint in {checkpoint.folder} does not hold every weight of "
                f"{type(model).__name__}: {'missing' if missing else 'mismatched'} {shown}"
                + (f" and {more} more" if more > 0 else "")
                + "; check that the weights files match config.json"
            )
        # nn.Module's `to` (transformers' wrapper is typed for its quantized-model checks only).
        model = torch.nn.Module.to(model, device).eval()
        if device.type == "cpu" and packed_weights.available():
            packed_weights.pack_linear_layers(model)
        return cls(checkpoint, model, device)

    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        """The runner's GPU as the thread's current CUDA device (kernels, cuBLAS handles and
        the caching allocator then all work on it); nothing on the CPU."""
        if self.device.type != "cuda":
            yield
            return
        with torch.cuda.device(self.device):
            yield

    def new_store(self, rows: int) -> SlotStore:
        return SlotStore(self.layers, rows, self.kv_heads, self.head_dim, self.max_model_len,
                         self.dtype, self.device)

    def warm_up(self) -> None:
        """A prefill and a decode pass on a scratch slot, before the first request: the first
        passes of a loaded model do one-time work (kernels chosen, loaded and packed, memory
        pools filled; on a GPU the CUDA libraries' own start-up), which the first request's
        time to first token would otherwise carry. In process, the first request to the tests'
        tiny model on the CPU took 10 ms (later ones 1.5 ms); warmed up, 4.6 ms. vLLM warms its
        engine up at start-up too."""
        if self.max_model_len < 3:
            return
        token = self.tokenizer.eos_token_id or 0
        store = self.new_store(1)
        with torch.inference_mode(), self.on_device():
            self.step(store, [], [Chunk(0, [token, token], 0, 1)])
            self.step(store, [(token, 2)], [])

    def _decode_runs(self, decode: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
        """The decoding rows as attention calls, (first row, row after, positions read).

        On the CPU decode attention runs at the speed of memory (it reads every key and value
        of the rows it covers and does little else), so each row gets a call of its own and
        reads just its own positions. One call over all rows reads each up to the longest: at
        32 rows of 50 to 350 positions, 40 % more than they hold, and a decode step of the
        bench's model took 61 ms that way against 48 ms a row at a time (one core). On a GPU,
        where a call costs a kernel launch and memory is fast, the rows go in one call."""
        if not decode:
            return []
        if self.device.type == "cpu":
            return [(row, row + 1, position + 1) for row, (_, position) in enumerate(decode)]
        return [(0, len(decode), max(position for _, position in decode) + 1)]

    def step(self, store: SlotStore, decode: list[tuple[int, int]], chunks: list[Chunk]
             ) -> torch.Tensor:
        """One forward pass: `decode` holds (last token, its position) of rows [0, len(decode))
        and `chunks` prompt runs of other rows. Returns the logits [kept, vocab] on the
        runner's device: one per decoding row, in row order, then each chunk's `keep` last
        positions, in chunk order."""
        tokens = [token for token, _ in decode]
        positions = [position for _, position in decode]
        rows = list(range(len(decode)))
        kept = list(rows)
        for chunk in chunks:
            if chunk.keep:
                kept += range(len(tokens) + len(chunk.tokens) - chunk.keep,
                              len(tokens) + len(chunk.tokens))
            tokens += chunk.tokens
            positions += range(chunk.start, chunk.start + len(chunk.tokens))
            rows += [chunk.row] * len(chunk.tokens)
        # The pass's one host-to-device copy: its tokens, positions, rows and logits kept.
        count = len(tokens)
        step = torch.tensor(tokens + positions + rows + kept, device=self.device)
        ids, where, written = step[:count], step[count:2 * count], step[2 * count:3 * count]
        segments = [
            Segment(slice(start, stop), slice(start, stop), read_length,
                    self.masks.build(where[start:stop, None], read_length, stop - start == 1))
            for start, stop, read_length in self._decode_runs(decode)
        ]
        offset = len(decode)
        for chunk in chunks:
            end = offset + len(chunk.tokens)
            read_length = chunk.start + len(chunk.tokens)
            segments.append(Segment(slice(offset, end), slice(chunk.row, chunk.row + 1),
                                    read_length, self.masks.build(where[None, offset:end],
                                                                  read_length)))
            offset = end
        store.ensure(max(segment.read_length for segment in segments))
        output = self.model(
            input_ids=ids[None], position_ids=where[None],
            # A placeholder of the right rank: transformers passes a 4-D mask on untouched,
            # and each segment attends with its own (slot_attention.py).
            attention_mask=self._placeholder_mask, cache=SlotCache(store, written, where),
            use_cache=True, logits_to_keep=step[3 * count:],
            **{PLAN_KEYWORD: StepPlan(self.attention, store, segments)},
        )
        return output.logits[0].float()

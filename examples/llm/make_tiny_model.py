"""Writes an llm-backend model repository with a tiny random Llama, made on this machine.

`python examples/llm/make_tiny_model.py DIR` leaves DIR/tiny_llama/ (config.pbtxt and version 1
with config.json, model.safetensors and a byte-level tokenizer with a chat template), to try the
llm backend and the OpenAI frontend offline: nothing is downloaded. Its text is gibberish; the
model is the one the llm backend's tests build (tests/support/llm_models.py), so this script
reuses that builder rather than keeping a second one. Needs the `llm` extra.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from support.llm_models import build_model  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: make_tiny_model.py REPOSITORY_DIR", file=sys.stderr)
        return 2
    model = Path(argv[0]) / "tiny_llama"
    build_model(model / "1")
    (model / "1" / "model.json").write_text('{"max_num_seqs": 16, "max_model_len": 512}\n')
    (model / "config.pbtxt").write_text('backend: "llm"\n')
    print(f"wrote {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

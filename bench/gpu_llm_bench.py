"""The llm backend on a GPU: a random-weight Llama-shaped model of ~1B parameters in bfloat16,
served KIND_GPU by Tritium to 32 concurrent streams, beside transformers' `generate` on the same
GPU one request at a time and as one static batch of 32 (issue 29's GPU benchmark).

The model is made here (config only, random weights, the tests' tiny byte-level tokenizer, so the
vocabulary is ~400 tokens and the lm_head is small next to a real model's), saved with
save_pretrained. Every request has a prompt of ~128 tokens and generates exactly --max-tokens
tokens (greedy, ignore_eos on both sides). Tritium: each stream is a client thread sending its
requests one after another to /v2/models/<m>/generate_stream (closed loop, 32 at once); times are
taken at the client. Tokens/s counts every generated token over the run; time to first token runs
from a request's send (transformers: from the start of its `generate`); inter-token latency is
the gap between a request's consecutive tokens.

    python bench/gpu_llm_bench.py --out gpu_llm.json            # on the GPU machine
    python bench/gpu_llm_bench.py --size tiny --device cpu --out /tmp/x.json   # plumbing check
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from llm_bench import _Clock, _stats  # noqa: E402

from support.llm_models import build_model, llm_repository  # noqa: E402
from support.server_process import ServerProcess  # noqa: E402

# TinyLlama's shape with the tests' ~400-token vocabulary: ~0.97B parameters.
SIZES: dict[str, dict[str, float]] = {
    "1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=22,
               num_attention_heads=32, num_key_value_heads=4, max_position_embeddings=2048,
               initializer_range=0.02),
    "tiny": dict(initializer_range=0.02),
}
MODEL = "bench"


def _prompts(tokenizer: Any, count: int, length: int) -> list[str]:
    words = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "tritium", "serves",
             "models", "like", "triton", "and", "continuous", "batching", "admits", "requests"]
    prompts = []
    for index in range(count):
        text = " ".join(words[(index + 5 * k) % len(words)] for k in range(length))
        ids = tokenizer(text).input_ids[:length]
        prompts.append(tokenizer.decode(ids, skip_special_tokens=True))
    return prompts


def _stream(server: ServerProcess, prompt: str, max_tokens: int) -> tuple[float, list[float]]:
    """One generate_stream request: when it was sent, and when each token arrived (a response
    carrying several tokens, text held back mid-character, spreads them evenly)."""
    host, port = server.http_url.split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=600)
    body = json.dumps({"text_input": prompt, "stream": True, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "return_num_output_tokens": True})
    sent = time.monotonic()
    connection.request("POST", f"/v2/models/{MODEL}/generate_stream", body,
                       {"content-type": "application/json"})
    answer = connection.getresponse()
    if answer.status != 200:
        raise RuntimeError(f"generate_stream answered {answer.status}: {answer.read()!r}")
    times, previous = [], sent
    for line in answer:
        if not line.startswith(b"data: "):
            continue
        now = time.monotonic()
        event = json.loads(line[len(b"data: "):])
        if "error" in event:
            raise RuntimeError(event["error"])
        count = int(event.get("num_output_tokens", 0))
        times += [previous + (now - previous) * (k + 1) / count for k in range(count)]
        previous = now
    connection.close()
    if len(times) != max_tokens:
        raise RuntimeError(f"expected {max_tokens} tokens, got {len(times)}")
    return sent, times


def _tritium(folder: Path, prompts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    kind = "KIND_GPU gpus: [ 0 ]" if args.device == "cuda" else "KIND_CPU"
    with tempfile.TemporaryDirectory() as tmp:
        repo = llm_repository(Path(tmp), {MODEL: {
            "family": "llama", "config": f"instance_group [ {{ kind: {kind} }} ]\n",
            "engine": {"dtype": args.dtype, "max_num_seqs": args.streams,
                       "max_num_batched_tokens": 2048}}}, {"llama": folder})
        server = ServerProcess([repo])
        server.start(timeout=600)
        try:
            server.wait_live(600, endpoint="ready")  # every model loaded (strict readiness)
            _stream(server, prompts[0], 4)  # first-call costs (kernels, allocator) off the clock
            results: list[tuple[float, list[float]]] = []
            errors: list[BaseException] = []

            def one_stream(index: int) -> None:
                try:
                    for round_ in range(args.rounds):
                        prompt = prompts[(index + round_ * args.streams) % len(prompts)]
                        results.append(_stream(server, prompt, args.max_tokens))
                except BaseException as exc:  # reported after the run
                    errors.append(exc)

            threads = [threading.Thread(target=one_stream, args=(i,))
                       for i in range(args.streams)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise RuntimeError(f"a stream failed: {errors[0]}\n{server.log()[-3000:]}")
        finally:
            server.stop()
    return _stats(f"Tritium llm backend ({args.device}), {args.streams} concurrent streams",
                  [sent for sent, _ in results], [times for _, times in results])


def _transformers(folder: Path, prompts: list[str], args: argparse.Namespace
                  ) -> list[dict[str, Any]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(
        folder, dtype=getattr(torch, args.dtype)).to(args.device).eval()

    def run(batch: list[str]) -> tuple[float, list[float]]:
        tokenizer.padding_side = "left"
        inputs = tokenizer(batch, return_tensors="pt", padding=True).to(args.device)
        clock = _Clock()
        start = time.monotonic()
        with torch.inference_mode():
            model.generate(**inputs, do_sample=False, max_new_tokens=args.max_tokens,
                           min_new_tokens=args.max_tokens, streamer=clock,
                           pad_token_id=tokenizer.pad_token_id)
        return start, clock.times

    run(prompts[:1])  # warm-up
    single = [run([p]) for p in prompts[: args.single]]
    batch = prompts[: args.streams]
    run(batch)  # warm-up at the batch's shape
    start, times = run(batch)
    return [
        _stats(f"transformers.generate ({args.device}), one request at a time",
               [s for s, _ in single], [t for _, t in single]),
        _stats(f"transformers.generate ({args.device}), static batch of {len(batch)}",
               [start] * len(batch), [times] * len(batch)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="1b")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3, help="requests per stream")
    parser.add_argument("--single", type=int, default=4,
                        help="requests transformers runs one at a time")
    parser.add_argument("--prompt-tokens", type=int, default=128)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True, help="where the JSON goes")
    parser.add_argument("--markdown", type=Path, help="where the table goes, as Markdown")
    args = parser.parse_args()

    import torch
    import transformers

    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "llama", "llama", dtype=args.dtype, device=args.device,
                             **SIZES[args.size])
        from transformers import AutoConfig, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        prompts = _prompts(tokenizer, args.streams * args.rounds, args.prompt_tokens)
        config = AutoConfig.from_pretrained(folder)
        rows = [_tritium(folder, prompts, args), *_transformers(folder, prompts, args)]

    parameters = _parameters(config)
    device = torch.cuda.get_device_name(0) if args.device == "cuda" else "CPU"
    title = (f"### llm backend on {device}: random Llama-shaped model, {parameters / 1e9:.2f}B "
             f"parameters, {args.dtype}, prompts of ~{args.prompt_tokens} tokens, "
             f"{args.max_tokens} generated (torch {torch.__version__}, transformers "
             f"{transformers.__version__})")
    base = rows[1]["tps"]
    lines = [title, "",
             "| serving | output tokens | tokens/s | vs one at a time | TTFT p50 (ms) "
             "| TTFT p99 (ms) | ITL p50 (ms) | ITL p99 (ms) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(
            f"| {row['name']} | {row['tokens']} | {row['tps']:.0f} | {row['tps'] / base:.1f}x "
            f"| {row['ttft50'] * 1e3:.1f} | {row['ttft99'] * 1e3:.1f} "
            f"| {row['itl50'] * 1e3:.2f} | {row['itl99'] * 1e3:.2f} |")
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    args.out.write_text(json.dumps({
        "device": device, "parameters": parameters, "dtype": args.dtype,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "streams": args.streams, "prompt_tokens": args.prompt_tokens,
        "max_tokens": args.max_tokens, "seconds": time.monotonic() - began,
        "rows": [{k: float(v) if k != "name" else v for k, v in row.items()} for row in rows],
    }, indent=2))


def _parameters(config: Any) -> int:
    """The Llama-shaped model's parameter count, from its configuration."""
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    head = hidden // config.num_attention_heads
    kv = config.num_key_value_heads * head
    per_layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * inner + 2 * hidden
    return layers * per_layer + 2 * config.vocab_size * hidden + hidden


if __name__ == "__main__":
    main()

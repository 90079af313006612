"""Unit tests of the llm backend's pieces that need no server: incremental detokenization and
the sampling parameters (the server tests cover them end to end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.llm_fixtures import llm_weights  # noqa: F401
from tritium.backend import TritonError
from tritium.builtin_backends.llm.detokenizer import IncrementalDetokenizer, StopStrings
from tritium.builtin_backends.llm.sampling import MAX_STOP_CHARACTERS, parse_sampling_parameters

TEXTS = ["Héllo wörld, ça va? Grüße aus Köln.", "你好，世界。 日本語のテキスト。",
         "🙂🚀✨ emoji 🙂"]


@pytest.fixture(scope="module")
def tokenizer(llm_weights: dict[str, Path]):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(llm_weights["llama"])


@pytest.mark.parametrize("text", TEXTS)
def test_streamed_text_never_splits_a_utf8_character(tokenizer, text):
    ids = tokenizer(text).input_ids
    # The byte-level tokenizer does split characters across tokens: what is being tested.
    assert any("\ufffd" in tokenizer.decode([i]) for i in ids)
    detokenizer = IncrementalDetokenizer(tokenizer, [], [], False, True)
    pieces = []
    for token in ids:
        detokenizer.add(token)
        pieces.append(detokenizer.release(False))
    pieces.append(detokenizer.release(True))
    assert all("\ufffd" not in piece for piece in pieces)
    assert "".join(pieces) == text


def test_text_that_may_begin_a_stop_string_is_held_back(tokenizer):
    text = "one two three four"
    detokenizer = IncrementalDetokenizer(tokenizer, [], ["three"], False, True)
    released, stopped = "", False
    for token in tokenizer(text).input_ids:
        stopped = detokenizer.add(token)
        released += detokenizer.release(stopped)
        assert "thre" not in released
        if stopped:
            break
    assert stopped and released == "one two "


def test_the_first_stop_string_ending_in_the_new_text_is_found_among_thousands():
    # Thousands of strings, few distinct lengths: each is looked up, none scanned for.
    decoys = [f"z{i:05d}" for i in range(20000)]
    stops = StopStrings([*decoys, "two", "o t", "e t"])
    # Both "e t" and "o t" end in the new text; "e t" starts first.
    assert stops.earliest("one two", 4) == (2, "e t")
    # Only strings ending at or after new_from count: "e t" ended before it.
    assert stops.earliest("one two", 6) == (4, "two")
    assert stops.earliest("one two z01234", 14) is None
    assert stops.earliest("one two z01234", 13) == (8, "z01234")
    # Two starting at the same place: the smaller string, as before.
    assert StopStrings(["ab", "abc"]).earliest("xabc", 2) == (1, "ab")
    assert StopStrings(["ab", "abc"]).earliest("xabc", 3) == (1, "abc")
    assert StopStrings([]).earliest("anything", 0) is None


def test_a_stop_string_among_thousands_cuts_the_stream(tokenizer):
    text = "one two three four"
    stops = [f"never{i}" for i in range(5000)] + ["three"]
    detokenizer = IncrementalDetokenizer(tokenizer, [], stops, False, True)
    released, stopped = "", False
    for token in tokenizer(text).input_ids:
        stopped = detokenizer.add(token)
        released += detokenizer.release(stopped)
        if stopped:
            break
    assert stopped and released == "one two "


def test_stop_strings_are_bounded_in_total_length():
    at_limit = ["x" * 1024] * (MAX_STOP_CHARACTERS // 1024)
    assert parse_sampling_parameters({"stop": at_limit}).stop == at_limit
    with pytest.raises(TritonError, match=f"at most {MAX_STOP_CHARACTERS} characters in all, "
                                          f"got {MAX_STOP_CHARACTERS + 1}"):
        parse_sampling_parameters({"stop": [*at_limit, "y"]})


def test_sampling_parameters_as_the_vllm_backend_reads_them():
    params = parse_sampling_parameters(
        '{"temperature": "0.5", "top_k": "40", "max_tokens": 8.0, "ignore_eos": "true", '
        '"stop": "END"}')
    assert (params.temperature, params.top_k, params.max_tokens) == (0.5, 40, 8)
    assert params.ignore_eos and params.stop == ["END"]
    defaults = parse_sampling_parameters({})
    assert (defaults.temperature, defaults.max_tokens, defaults.greedy) == (1.0, 16, False)
    assert parse_sampling_parameters({"temperature": 0}).greedy
    with pytest.raises(TritonError, match="top_k must be -1"):
        parse_sampling_parameters({"top_k": 0})
    with pytest.raises(TritonError, match="must be a JSON object"):
        parse_sampling_parameters("[1, 2]")


def test_the_step_token_budget_defaults_by_device(tmp_path):
    from tritium.builtin_backends.llm.settings import read_settings

    def settings(values):
        (tmp_path / "model.json").write_text(json.dumps(values))
        return read_settings(tmp_path)

    # A CPU step's time grows with its tokens; a GPU's barely does (vLLM's default there).
    assert settings({}).step_tokens("cpu") == 192
    assert settings({}).step_tokens("cuda") == 2048
    # Room for a token of every decoding sequence, whatever the device.
    assert settings({"max_num_seqs": 300}).step_tokens("cpu") == 300
    assert settings({"max_num_batched_tokens": 64}).step_tokens("cuda") == 64


def test_a_decoding_row_attended_alone_needs_a_mask_only_past_its_window():
    import torch
    from transformers import MistralConfig

    from tritium.builtin_backends.llm.attention_masks import AttentionMasks

    config = MistralConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, sliding_window=8,
                           layer_types=["full_attention", "sliding_attention"])
    config._attn_implementation = "sdpa"  # boolean masks (eager's are additive)
    masks = AttentionMasks(config, torch.float32)
    # One query at the row's last position sees every key: no mask for full attention, nor
    # for a window that still covers the row.
    assert masks.build(torch.tensor([[4]]), 5, last=True) == {
        "full_attention": None, "sliding_attention": None}
    long = masks.build(torch.tensor([[19]]), 20, last=True)
    assert long["full_attention"] is None
    assert long["sliding_attention"][0, 0, 0].tolist() == [False] * 12 + [True] * 8
    # Rows attended together keep their masks (shorter rows hide the positions past them).
    together = masks.build(torch.tensor([[4], [9]]), 10)
    assert together["full_attention"][0, 0, 0].tolist() == [True] * 5 + [False] * 5

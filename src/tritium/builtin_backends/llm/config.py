"""Auto-completing an llm model's configuration, as Triton's vLLM backend does.

A `config.pbtxt` holding only `backend: "llm"` is enough: the backend adds the inputs and
outputs it serves (those of Triton's vLLM backend: text_input, stream, sampling_parameters,
exclude_input_in_output, the return_* switches; text_output, finish_reason, num_input_tokens,
num_output_tokens), plus its own optional apply_chat_template, check_max_tokens, prompt_options,
prompt_token_ids, tokenize and detokenize inputs and logprobs, prompt_logprobs, prompt_text,
token_ids and token_strs outputs, sets the decoupled transaction policy (responses stream as
tokens come) and max_batch_size 0 (the engine batches, not Triton). Once the checkpoint is open,
the parameter `max_model_len` says the longest sequence served (the OpenAI frontend's /v1/models
and /tokenize report it, as vLLM's do). With auto-complete off, the configuration must already
be decoupled.
"""

from __future__ import annotations

from tritonclient.grpc import model_config_pb2 as mc

from tritium.backend import Model, TritonError

_INPUTS = [
    ("text_input", mc.TYPE_STRING, [1], False),
    ("stream", mc.TYPE_BOOL, [1], True),
    ("sampling_parameters", mc.TYPE_STRING, [1], True),
    ("exclude_input_in_output", mc.TYPE_BOOL, [1], True),
    ("return_finish_reason", mc.TYPE_BOOL, [1], True),
    ("return_logprobs", mc.TYPE_BOOL, [1], True),
    ("return_num_input_tokens", mc.TYPE_BOOL, [1], True),
    ("return_num_output_tokens", mc.TYPE_BOOL, [1], True),
    ("apply_chat_template", mc.TYPE_BOOL, [1], True),
    ("check_max_tokens", mc.TYPE_BOOL, [1], True),
    ("prompt_options", mc.TYPE_STRING, [1], True),
    ("prompt_token_ids", mc.TYPE_INT64, [-1], True),
    ("tokenize", mc.TYPE_BOOL, [1], True),
    ("detokenize", mc.TYPE_BOOL, [1], True),
]
_OUTPUTS = [
    ("text_output", mc.TYPE_STRING, [-1]),
    ("finish_reason", mc.TYPE_STRING, [-1]),
    ("num_input_tokens", mc.TYPE_UINT32, [1]),
    ("num_output_tokens", mc.TYPE_UINT32, [-1]),
    ("logprobs", mc.TYPE_STRING, [-1]),
    ("prompt_logprobs", mc.TYPE_STRING, [-1]),
    ("prompt_text", mc.TYPE_STRING, [-1]),
    ("token_ids", mc.TYPE_INT64, [-1]),
    ("token_strs", mc.TYPE_STRING, [-1]),
]


def complete_config(model: Model) -> None:
    """Fill in what the configuration leaves out (when auto-complete is on), then check it."""
    config = model.config
    if model.auto_complete:
        config = mc.ModelConfig()
        config.CopyFrom(model.config)
        present = {i.name for i in config.input}
        for name, data_type, dims, optional in _INPUTS:
            if name not in present:
                config.input.add(name=name, data_type=data_type, dims=dims, optional=optional)
        present = {o.name for o in config.output}
        for name, data_type, dims in _OUTPUTS:
            if name not in present:
                config.output.add(name=name, data_type=data_type, dims=dims)
        config.model_transaction_policy.decoupled = True
        config.max_batch_size = 0
        model.set_config(config)
    if not config.model_transaction_policy.decoupled:
        raise TritonError.invalid_arg(
            f"model '{model.name}': the llm backend must be configured to use the decoupled "
            "model transaction policy"
        )
    if config.max_batch_size != 0:
        raise TritonError.invalid_arg(
            f"model '{model.name}': the llm backend batches by itself; max_batch_size must be 0"
        )
    if "text_input" not in {i.name for i in config.input}:
        raise TritonError.invalid_arg(f"model '{model.name}': the llm backend needs input "
                                      "'text_input'")


def publish_max_model_len(model: Model, max_model_len: int) -> None:
    """The `max_model_len` parameter, for frontends (when auto-complete is on)."""
    if not model.auto_complete:
        return
    config = mc.ModelConfig()
    config.CopyFrom(model.config)
    config.parameters["max_model_len"].string_value = str(max_model_len)
    model.set_config(config)

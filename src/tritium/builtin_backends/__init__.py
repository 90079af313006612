"""Built-in backends, each written on the backend API (`tritium.backend`) alone.

`identity`, `repeat`, `square` (Triton's example backends of those names), `python/` (Triton's
python backend: `server/`, `stub/`, `wire/`), `onnxruntime/` and `pytorch/`, with what both
framework backends share: `framework` (importing the framework when first needed) and
`sequence_io` (the sequence batcher's control and state tensors).
BackendManager finds them as `tritium.builtin_backends.<name>`, after `--backend-directory`
and installed entry points.
"""

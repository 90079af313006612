"""Triton's C backend API: compiled `libtriton_<name>.so` backends run on Tritium unmodified.

- `include/tritium_triton_api.h`: Tritium's declarations of the API (server 1.34, backend 1.19).
- `csrc/`: the C++ library implementing it (Tritium's libtritonserver.so); `build` compiles it.
- `library`: the loaded library and its ctypes prototypes; `host`: its callbacks into Python.
- `requests`: server requests <-> TRITONBACKEND_Request/Response; `batch`: one Execute batch,
  through the hot-path extension (`csrc/python/hotpath.cc`, built by `build`) or ctypes;
  `server_calls`: BLS, model control, metrics; `backend`: a backend library as Tritium entry
  points (NativeBackend); `repo_agent`: repository agents; `batch_strategy`: custom batching
  strategy libraries.
"""

from .backend import NativeBackend

__all__ = ["NativeBackend"]

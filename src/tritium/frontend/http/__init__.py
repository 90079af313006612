"""The HTTP/REST frontend: KServe v2 with Triton's extensions, as Triton's http_server.cc.

`connection` is the HTTP/1.1 connection (httptools, in the server's event loop) and `endpoint`
its listener (accepting, sweeping idle connections, stopping), `limits` what a client may make
it hold; `routes` maps each path to its answer (`HttpFrontend` is the endpoint `tritium serve`
starts); `request` and `response` are the infer body codecs (with `json_data` for tensors
written as JSON, `json_spans` and `json_cuts` for the large arrays of a large body, read in
slices, and `bulk_decode` for what is decoded and encoded off the loop); `generate` is the
generate extension; `repository`, `shared_memory` and `extension_routes` answer the
repository, shared-memory, statistics, logging and trace endpoints; `compression` is the
gzip/deflate content coding.
"""

from .routes import HttpFrontend

__all__ = ["HttpFrontend"]

"""Tritium's ``tritonfrontend``: Triton's Python bindings of its KServe frontends, by their own
name (``from tritonfrontend import KServeHttp, KServeGrpc``), over ``tritonserver.Server``.
Everything lives in ``tritium.inprocess.tritonfrontend``; this package only re-exports it.
"""

from tritium.inprocess.tritonfrontend import KServeGrpc, KServeHttp, Metrics

__all__ = ["KServeGrpc", "KServeHttp", "Metrics"]

"""Pieces of KServe-v2 HTTP infer requests for the identity models of tests/support/models.py.

Shared by the HTTP tests that build request documents by hand, to say exactly what goes on the
wire.
"""

from __future__ import annotations

import struct

from support.raw_http import post


def f32_input(data: list, shape: list[int] | None = None, name: str = "INPUT0") -> dict:
    return {"name": name, "datatype": "FP32", "shape": shape or [1, len(data)], "data": data}


def binary_input(name: str, datatype: str, shape: list[int], size: int) -> dict:
    return {"name": name, "datatype": datatype, "shape": shape,
            "parameters": {"binary_data_size": size}}


def bytes_elements(*items: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(i)) + i for i in items)


FP32 = "/v2/models/identity_fp32/infer"
INT32 = "/v2/models/identity_int32/infer"
BYTES = "/v2/models/identity_bytes/infer"
NOBATCH = "/v2/models/identity_nobatch/infer"


def assert_still_serving(server) -> None:
    reply = post(server, FP32, {"inputs": [f32_input([1, 2, 3])]})
    assert reply.status == 200, reply.body
    assert reply.json()["outputs"][0]["data"] == [1.0, 2.0, 3.0]

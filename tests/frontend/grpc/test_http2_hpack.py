"""HPACK on Tritium's HTTP/2 layer, driven by encoders that index (hpack's Encoder, the `h2`
library as a client), as Go, Java/Netty and h2-based gRPC clients do.

An indexed field means what the dynamic table holds at that moment: the same bytes can name
another header after insertions, evictions and size updates. Every block must decode to what
its encoder meant, whatever the connection decoded before it (issue 13: byte-identical blocks
were answered from a cache of an older table state, so ServerLive ran as ModelInfer).
"""

from __future__ import annotations

import random
import socket

import h2.config
import h2.connection
import h2.events
import hpack
import pytest
from tritonclient.grpc import service_pb2 as pb

from support.h2_frames import (
    END_HEADERS,
    END_STREAM,
    HEADERS,
    PREFACE,
    Harness,
    frame,
    grpc_message,
    request_headers,
)

SERVICE = "/inference.GRPCInferenceService/"


def _headers_frame(stream_id: int, block: bytes) -> bytes:
    return frame(HEADERS, END_HEADERS | END_STREAM, stream_id, block)


def test_the_same_bytes_after_the_table_changed_decode_to_the_new_entry() -> None:
    # The recipe: an encoder that indexes :path; the second ModelInfer block and the
    # second ServerLive block are the same bytes (index 62), meaning different paths.
    harness = Harness()
    harness.feed(PREFACE)
    encoder = hpack.Encoder()
    blocks = []
    for stream_id, method in zip((1, 3, 5, 7), ("ModelInfer", "ModelInfer", "ServerLive",
                                               "ServerLive"), strict=True):
        block = encoder.encode([(":method", "POST"), (":path", SERVICE + method)])
        blocks.append(block)
        harness.feed(_headers_frame(stream_id, block))
    assert blocks[1] == blocks[3], "the recipe needs byte-identical blocks"
    paths = [dict(h.headers)[":path"] for h in harness.handlers]
    assert paths == [SERVICE + m for m in ("ModelInfer", "ModelInfer", "ServerLive",
                                           "ServerLive")]


@pytest.mark.parametrize("seed", range(6))
def test_blocks_from_an_indexing_encoder_decode_through_insertions_evictions_and_resizes(
        seed: int) -> None:
    rng = random.Random(seed)
    harness = Harness()
    harness.feed(PREFACE)
    encoder = hpack.Encoder()
    methods = ["ModelInfer", "ServerLive", "ServerReady", "ModelMetadata", "ModelReady"]
    values = ["a", "b", "x" * 100, "y" * 1500, "z" * 3000]  # the big ones evict the table
    sent = []
    for index in range(300):
        if rng.random() < 0.05:
            # A size update at the start of the next block (down, to zero, back up).
            encoder.header_table_size = rng.choice([0, 64, 512, 4096])
        headers = request_headers(SERVICE + rng.choice(methods),
                                  *[(f"meta-{rng.randrange(4)}", rng.choice(values))
                                    for _ in range(rng.randrange(3))])
        sent.append(headers)
        harness.feed(_headers_frame(2 * index + 1, encoder.encode(headers)))
    assert not harness.closed_by_server and not harness.transport.closed
    assert [h.headers for h in harness.handlers] == sent


def test_the_h2_library_as_a_client_is_understood_on_every_call() -> None:
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    harness = Harness()
    rng = random.Random(7)
    sent = []
    for _ in range(200):
        stream_id = client.get_next_available_stream_id()
        headers = request_headers(SERVICE + rng.choice(["ModelInfer", "ServerLive"]),
                                  ("x-big", rng.choice(["v" * 2000, "w" * 3500, "small"])),
                                  ("x-id", str(rng.randrange(5))))
        sent.append(headers)
        client.send_headers(stream_id, headers)
        client.send_data(stream_id, grpc_message(b""), end_stream=True)
        harness.feed(client.data_to_send())
        for event in client.receive_data(bytes(harness.transport.written)):
            assert not isinstance(event, h2.events.StreamReset), event
        harness.transport.written.clear()
        harness._seen = 0
    assert [h.headers for h in harness.handlers] == sent
    assert all(h.ended for h in harness.handlers)


# -- the measurement, against the live server ----------------------------------------


def _call(sock: socket.socket, client: h2.connection.H2Connection, path: str, body: bytes,
          metadata: list[tuple[str, str]]) -> tuple[bytes, dict[str, str]]:
    stream_id = client.get_next_available_stream_id()
    client.send_headers(stream_id, request_headers(path, *metadata))
    client.send_data(stream_id, grpc_message(body), end_stream=True)
    sock.sendall(client.data_to_send())
    data, trailers = b"", {}
    while True:
        chunk = sock.recv(1 << 16)
        assert chunk, "the server closed the connection"
        for event in client.receive_data(chunk):
            if isinstance(event, h2.events.DataReceived) and event.stream_id == stream_id:
                data += event.data
                client.acknowledge_received_data(event.flow_controlled_length, stream_id)
            elif isinstance(event, (h2.events.ResponseReceived, h2.events.TrailersReceived)) \
                    and event.stream_id == stream_id:
                trailers = {k.decode(): v.decode() for k, v in event.headers}
            if isinstance(event, h2.events.StreamEnded) and event.stream_id == stream_id:
                sock.sendall(client.data_to_send())
                return data[5:], trailers
        sock.sendall(client.data_to_send())


def test_mixed_calls_from_an_indexing_client_are_each_answered_by_their_method(server) -> None:
    calls = [
        ("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse,
         lambda r: r.live is True),
        ("ServerReady", pb.ServerReadyRequest(), pb.ServerReadyResponse,
         lambda r: r.ready is True),
        ("ServerMetadata", pb.ServerMetadataRequest(), pb.ServerMetadataResponse,
         lambda r: r.name == "triton"),
        ("ModelReady", pb.ModelReadyRequest(name="identity_fp32"), pb.ModelReadyResponse,
         lambda r: r.ready is True),
        ("ModelMetadata", pb.ModelMetadataRequest(name="identity_fp32"),
         pb.ModelMetadataResponse, lambda r: r.name == "identity_fp32"),
    ]
    host, port = server.grpc_url.rsplit(":", 1)
    client = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    client.initiate_connection()
    rng = random.Random(13)
    wrong = []
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(client.data_to_send())
        for index in range(164):
            method, request, response_type, check = calls[index % len(calls)]
            # Now and then a large indexed value evicts the whole table; the next calls refill
            # it in the same order, making byte-identical blocks that mean other methods.
            metadata = [("x-trace", "t" * 3900)] if rng.random() < 0.1 else [("x-n", "1")]
            body, trailers = _call(sock, client, SERVICE + method, request.SerializeToString(),
                                   metadata)
            status = trailers.get("grpc-status")
            if status != "0" or not check(response_type.FromString(body)):
                wrong.append((index, method, trailers))
    assert wrong == []

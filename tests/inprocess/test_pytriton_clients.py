"""PyTriton's FuturesModelClient, AsyncioModelClient and AsyncioDecoupledModelClient, and the
errors of `tritium.pytriton.client.exceptions`, against models bound with `Triton()`: results,
a failing model, a timeout, a closed client, a full queue, a decoupled stream."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from tritium.pytriton.client import (
    AsyncioDecoupledModelClient,
    AsyncioModelClient,
    FuturesModelClient,
    ModelClient,
)
from tritium.pytriton.client.exceptions import (
    PyTritonClientClosedError,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientInvalidUrlError,
    PyTritonClientQueueFullError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor
from tritium.pytriton.triton import Triton, TritonConfig

X = Tensor(name="x", dtype=np.float32, shape=(1,))
Y = Tensor(name="y", dtype=np.float32, shape=(1,))


class Gate:
    """Holds the "held" model's requests until the test opens it."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Triton, list[Gate]]]:
    gates = [Gate()]

    @batch
    def double(x):
        if (x < 0).any():
            raise ValueError("negative input refused")
        return {"y": x * 2}

    @batch
    def held(x):
        gate = gates[-1]
        gate.entered.set()
        gate.opened.wait(60)
        return {"y": x}

    @batch
    def count(x):
        if (x < 0).any():
            raise ValueError("cannot count below zero")
        for i in range(int(x[0][0])):
            yield {"y": np.array([[i]], np.float32)}

    with Triton(config=TritonConfig(http_port=0, grpc_port=0, metrics_port=0)) as triton:
        triton.bind("double", double, inputs=[X], outputs=[Y],
                    config=ModelConfig(max_batch_size=8))
        triton.bind("held", held, inputs=[X], outputs=[Y], config=ModelConfig(max_batch_size=8))
        triton.bind("count", count, inputs=[X], outputs=[Y],
                    config=ModelConfig(max_batch_size=8, decoupled=True))
        yield triton, gates


@pytest.fixture
def gate(server: tuple[Triton, list[Gate]]) -> Iterator[Gate]:
    """A fresh gate for the "held" model, opened when the test ends."""
    gates = server[1]
    gates.append(Gate())
    yield gates[-1]
    gates[-1].opened.set()


def urls(server: tuple[Triton, list[Gate]]) -> list[str]:
    return [str(server[0].http_url), str(server[0].grpc_url)]


def test_client_errors_module_and_hierarchy():
    assert issubclass(PyTritonClientInvalidUrlError, PyTritonClientValueError)
    for error in (PyTritonClientClosedError, PyTritonClientTimeoutError,
                  PyTritonClientQueueFullError, PyTritonClientInferenceServerError):
        assert issubclass(error, PyTritonClientError)
    with pytest.raises(PyTritonClientInvalidUrlError, match="Invalid scheme ftp"):
        ModelClient("ftp://localhost:8000", "double")
    with pytest.raises(PyTritonClientInvalidUrlError):
        FuturesModelClient("localhost:notaport", "double")
    with pytest.raises(PyTritonClientInvalidUrlError):
        AsyncioModelClient("https://localhost", "double")


def test_closed_model_client_refuses_requests(server):
    client = ModelClient(urls(server)[0], "double")
    assert client.infer_sample(x=np.array([1], np.float32))["y"].tolist() == [2]
    client.close()
    with pytest.raises(PyTritonClientClosedError):
        client.infer_sample(x=np.array([1], np.float32))


@pytest.mark.parametrize("scheme", [0, 1], ids=["http", "grpc"])
def test_futures_client_runs_requests_on_its_workers(server, scheme):
    with FuturesModelClient(urls(server)[scheme], "double", max_workers=3) as client:
        futures = [client.infer_sample(x=np.array([i], np.float32)) for i in range(12)]
        batch_future = client.infer_batch(np.array([[5], [6]], np.float32))
        assert client.wait_for_model(10).result() is None
        assert [f.result()["y"].tolist() for f in futures] == [[2 * i] for i in range(12)]
        assert batch_future.result()["y"].tolist() == [[10], [12]]
        # Alone: the dynamic batcher would fail the requests batched with it too.
        failed = client.infer_sample(x=np.array([-1], np.float32))
        with pytest.raises(PyTritonClientInferenceServerError, match="negative input refused"):
            failed.result()
    with pytest.raises(PyTritonClientClosedError):
        client.infer_sample(x=np.array([1], np.float32))


def test_futures_client_times_out_and_reports_a_full_queue(server, gate):
    grpc_url = urls(server)[1]
    with FuturesModelClient(grpc_url, "held", max_workers=1, max_queue_size=1,
                            non_blocking=True, inference_timeout_s=0.5) as client:
        first = client.infer_sample(x=np.array([1], np.float32))
        assert gate.entered.wait(60)  # the only worker is busy with it
        queued = client.infer_sample(x=np.array([2], np.float32))
        with pytest.raises(PyTritonClientQueueFullError):
            client.infer_sample(x=np.array([3], np.float32))
        with pytest.raises(PyTritonClientTimeoutError):
            first.result()
        gate.opened.set()
        assert queued.result()["y"].tolist() == [2]


def test_futures_client_close_without_waiting_still_runs_queued_requests(server):
    client = FuturesModelClient(urls(server)[0], "double", max_workers=1)
    future = client.infer_sample(x=np.array([4], np.float32))
    client.close(wait=False)
    assert future.result()["y"].tolist() == [8]


@pytest.mark.parametrize("scheme", [0, 1], ids=["http", "grpc"])
def test_asyncio_client_awaits_results_errors_and_closes(server, scheme):
    url = urls(server)[scheme]

    async def scenario() -> None:
        async with AsyncioModelClient(url, "double", lazy_init=False) as client:
            results = await asyncio.gather(
                *(client.infer_sample(x=np.array([i], np.float32)) for i in range(6)))
            assert [r["y"].tolist() for r in results] == [[2 * i] for i in range(6)]
            batched = await client.infer_batch(x=np.array([[1], [2]], np.float32))
            assert batched["y"].tolist() == [[2], [4]]
            with pytest.raises(PyTritonClientInferenceServerError, match="negative input"):
                await client.infer_sample(x=np.array([-3], np.float32))
        with pytest.raises(PyTritonClientClosedError, match="AsyncioModelClient is closed"):
            await client.infer_sample(x=np.array([1], np.float32))

    asyncio.run(scenario())


def test_asyncio_client_times_out_over_grpc(server, gate):
    async def scenario() -> None:
        async with AsyncioModelClient(urls(server)[1], "held", inference_timeout_s=0.5) as client:
            with pytest.raises(PyTritonClientTimeoutError):
                await client.infer_sample(x=np.array([1], np.float32))
            gate.opened.set()

    asyncio.run(scenario())


def test_asyncio_decoupled_client_streams_responses(server):
    http_url, grpc_url = urls(server)

    async def scenario() -> None:
        async with AsyncioDecoupledModelClient(grpc_url, "count") as client:
            counted = [r["y"].tolist() async for r in client.infer_sample(
                x=np.array([3], np.float32))]
            assert counted == [[0], [1], [2]]
            async for first in client.infer_batch(x=np.array([[5]], np.float32)):
                assert first["y"].tolist() == [[0]]
                break  # abandoned early: the client keeps serving
            again = [r["y"].tolist() async for r in client.infer_batch(
                x=np.array([[2]], np.float32))]
            assert again == [[[0]], [[1]]]
            with pytest.raises(PyTritonClientInferenceServerError, match="below zero"):
                async for _ in client.infer_sample(x=np.array([-1], np.float32)):
                    pass
        async with AsyncioDecoupledModelClient(grpc_url, "double") as coupled:
            with pytest.raises(PyTritonClientInferenceServerError, match="coupled"):
                async for _ in coupled.infer_sample(x=np.array([1], np.float32)):
                    pass
        with pytest.raises(PyTritonClientClosedError):
            async for _ in client.infer_sample(x=np.array([1], np.float32)):
                pass
        with pytest.raises(PyTritonClientValueError, match="only supported for grpc"):
            AsyncioDecoupledModelClient(http_url, "count")

    asyncio.run(scenario())

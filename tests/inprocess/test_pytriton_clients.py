"""PyTriton's FuturesModelClient, AsyncioModelClient and AsyncioDecoupledModelClient, and the
errors of `tritium.pytriton.client.exceptions`, against models bound with `Triton()`: results,
a failing model, a timeout, a closed client, a full queue, a decoupled stream; every client's
model_config, clients made from others, waiting for a missing model or server, argument
checks, model control, and `pytriton.client.utils` / `.auth`."""

from __future__ import annotations

import asyncio
import socket
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
from tritium.pytriton.client.auth import create_auth_headers, extract_access_token_from_headers
from tritium.pytriton.client.exceptions import (
    PyTritonClientClosedError,
    PyTritonClientError,
    PyTritonClientInferenceServerError,
    PyTritonClientInvalidUrlError,
    PyTritonClientModelDoesntSupportBatchingError,
    PyTritonClientQueueFullError,
    PyTritonClientTimeoutError,
    PyTritonClientValueError,
)
from tritium.pytriton.client.utils import (
    ModelState,
    TritonUrl,
    create_client_from_url,
    get_model_config,
    get_model_state,
    wait_for_model_ready,
    wait_for_server_ready,
)
from tritium.pytriton.decorators import batch
from tritium.pytriton.model_config import ModelConfig, Tensor, TritonModelConfig
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
        triton.bind("spare", batch(lambda x: {"y": x}), inputs=[X], outputs=[Y],
                    config=ModelConfig(max_batch_size=8))
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


def test_http_clients_apply_the_inference_timeout(server, gate):
    http_url = urls(server)[0]
    with ModelClient(http_url, "held", inference_timeout_s=0.5) as client, \
            pytest.raises(PyTritonClientTimeoutError,
                          match=r"during inference request. Timeout: 0.5 s Message: "):
        client.infer_sample(x=np.array([1], np.float32))
    with FuturesModelClient(http_url, "held", inference_timeout_s=0.5) as futures, \
            pytest.raises(PyTritonClientTimeoutError):
        futures.infer_sample(x=np.array([1], np.float32)).result()

    async def scenario() -> None:
        async with AsyncioModelClient(http_url, "held", inference_timeout_s=0.5) as client:
            with pytest.raises(PyTritonClientTimeoutError):
                await client.infer_sample(x=np.array([1], np.float32))

    asyncio.run(scenario())
    gate.opened.set()
    with ModelClient(http_url, "double", inference_timeout_s=5) as client:  # still serving
        assert client.infer_sample(x=np.array([1], np.float32))["y"].tolist() == [2]


def expect_double_config(config: TritonModelConfig) -> None:
    assert (config.model_name, config.max_batch_size, config.batching, config.decoupled) == \
        ("double", 8, True, False)
    assert [(t.name, t.dtype, t.shape) for t in config.inputs] == [("x", np.float32, (1,))]
    assert [t.name for t in config.outputs] == ["y"]


@pytest.mark.parametrize("scheme", [0, 1], ids=["http", "grpc"])
def test_every_client_answers_the_model_config(server, scheme):
    url = urls(server)[scheme]
    with ModelClient(url, "double") as client:
        expect_double_config(client.model_config)
        assert client.is_batching_supported
    with FuturesModelClient(url, "double") as futures:
        expect_double_config(futures.model_config().result())

    async def scenario() -> None:
        async with AsyncioModelClient(url, "double", lazy_init=False) as client:
            expect_double_config(await client.model_config)
        if scheme:
            async with AsyncioDecoupledModelClient(url, "count") as decoupled:
                assert (await decoupled.model_config).decoupled

    asyncio.run(scenario())


def test_a_client_made_from_another_reuses_its_config(server):
    http_url, grpc_url = urls(server)
    with ModelClient(grpc_url, "double", lazy_init=False) as first, \
            ModelClient.from_existing_client(first) as second:
        assert second.model_config is first.model_config
        assert second.infer_batch(np.array([[3]], np.float32))["y"].tolist() == [[6]]
    # A configuration handed in is believed: this one says the model does not batch.
    unbatched = TritonModelConfig(model_name="double", batching=False, max_batch_size=0,
                                  inputs=[X], outputs=[Y])
    with ModelClient(http_url, "double", model_config=unbatched,
                     ensure_model_is_ready=False) as client, \
            pytest.raises(PyTritonClientModelDoesntSupportBatchingError,
                          match="Model double doesn't support batching"):
        client.infer_batch(np.array([[3]], np.float32))

    async def scenario() -> None:
        config_client = AsyncioModelClient(http_url, "double")
        expect_double_config(await config_client.model_config)
        async with AsyncioModelClient.from_existing_client(config_client) as client:
            assert (await client.model_config) is (await config_client.model_config)
            assert (await client.infer_sample(np.array([4], np.float32)))["y"].tolist() == [8]
        await config_client.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("scheme", [0, 1], ids=["http", "grpc"])
def test_waiting_for_a_missing_model_or_server_times_out(server, scheme):
    url = urls(server)[scheme]
    with ModelClient(url, "missing", init_timeout_s=0.3) as client:
        client.wait_for_server(5)
        with pytest.raises(PyTritonClientTimeoutError,
                           match="Waiting for model missing/<latest> to be ready timed out"):
            client.wait_for_model(0.3)
        with pytest.raises(PyTritonClientTimeoutError, match="Waiting for model missing"):
            client.infer_sample(x=np.array([1], np.float32))
    with pytest.raises(PyTritonClientTimeoutError, match="Waiting for model missing/2"):
        ModelClient(url, "missing", "2", lazy_init=False, init_timeout_s=0.3)
    with socket.socket() as unused:  # bound, never listening: connections are refused
        unused.bind(("127.0.0.1", 0))
        nowhere = f"{url.split('://')[0]}://127.0.0.1:{unused.getsockname()[1]}"
        with ModelClient(nowhere, "double") as client, \
                pytest.raises(PyTritonClientTimeoutError,
                              match="Waiting for server to be ready timed out"):
            client.wait_for_model(0.3)

    async def scenario() -> None:
        client = AsyncioModelClient(url, "missing", init_timeout_s=0.3)
        with pytest.raises(PyTritonClientTimeoutError, match="Timeout while waiting for model"):
            await client.model_config
        with pytest.raises(PyTritonClientTimeoutError, match="Timeout while waiting for model"):
            await client.infer_sample(x=np.array([1], np.float32))
        await client.close()
        with pytest.raises(PyTritonClientTimeoutError, match="Timeout while waiting for model"):
            async with AsyncioModelClient(url, "missing", init_timeout_s=0.3, lazy_init=False):
                pass

    asyncio.run(scenario())


def test_bad_arguments_are_refused_before_anything_is_sent(server):
    one = np.array([1], np.float32)
    refusals = [
        ((), {}, "Provide input data"),
        ((one,), {"x": one}, "Use either positional either keyword"),
        ((), {"x": one, "parameters": ["p"]}, "Parameters and headers must be a dictionary"),
        ((), {"x": one, "headers": {"h": 1.5}}, "value must be a string, integer or boolean"),
        ((), {"x": one, "parameters": {1: "p"}}, "key must be a string"),
    ]
    with ModelClient(urls(server)[0], "double") as client:
        for args, kwargs, message in refusals:
            with pytest.raises(PyTritonClientValueError, match=message):
                client.infer_sample(*args, **kwargs)
            with pytest.raises(PyTritonClientValueError, match=message):
                client.infer_batch(*args, **kwargs)
        # An input the model does not have is the server's to refuse.
        with pytest.raises(PyTritonClientInferenceServerError, match="unknown"):
            client.infer_sample(x=one, unknown=one)

    async def scenario() -> None:
        async with AsyncioModelClient(urls(server)[1], "double") as client:
            for args, kwargs, message in refusals:
                with pytest.raises(PyTritonClientValueError, match=message):
                    await client.infer_sample(*args, **kwargs)
        async with AsyncioDecoupledModelClient(urls(server)[1], "count") as decoupled:
            with pytest.raises(PyTritonClientValueError, match="Provide input data"):
                async for _ in decoupled.infer_sample():
                    pass

    asyncio.run(scenario())


@pytest.mark.parametrize("scheme", [0, 1], ids=["http", "grpc"])
def test_clients_unload_and_load_their_model(server, scheme):
    url = urls(server)[scheme]
    # Model control is a restricted endpoint of Triton(): the client sends the token.
    with ModelClient(url, "spare", access_token=server[0].get_access_token()) as client:
        assert client.infer_sample(x=np.array([2], np.float32))["y"].tolist() == [2]
        client.unload_model()
        with pytest.raises(PyTritonClientTimeoutError):
            client.wait_for_model(0.3)
        client.load_model()
        client.wait_for_model(30)
        assert client.infer_sample(x=np.array([3], np.float32))["y"].tolist() == [3]


def test_client_utilities_and_auth_headers(server):
    http_url, grpc_url = urls(server)
    for url, protocol in ((http_url, "http"), (grpc_url, "grpc")):
        tritonclient_client = create_client_from_url(url, network_timeout_s=5)
        # The repository index is a restricted endpoint of Triton().
        auth = create_auth_headers(server[0].get_access_token(), protocol)
        try:
            wait_for_server_ready(tritonclient_client, timeout_s=5)
            wait_for_model_ready(tritonclient_client, "double", timeout_s=5)
            expect_double_config(get_model_config(tritonclient_client, "double", timeout_s=5))
            assert get_model_state(tritonclient_client, "double", headers=auth) is \
                ModelState.READY
            assert get_model_state(tritonclient_client, "double", "7", headers=auth) is \
                ModelState.UNAVAILABLE
            assert get_model_state(tritonclient_client, "missing", headers=auth) is \
                ModelState.UNAVAILABLE
        finally:
            tritonclient_client.close()
    assert TritonUrl.from_url("localhost").with_scheme == "http://localhost:8000"
    assert TritonUrl.from_url("grpc://example").without_scheme == "example:8001"
    assert create_auth_headers("t", "grpc") == {"triton-grpc-protocol-triton-access-token": "t"}
    assert extract_access_token_from_headers(create_auth_headers("t", "http")) == "t"
    with pytest.raises(ValueError, match="Invalid protocol"):
        create_auth_headers("t", "ftp")

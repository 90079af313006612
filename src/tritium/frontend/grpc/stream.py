"""ModelStreamInfer: Triton's bidirectional streaming inference RPC.

Every ModelInferRequest read off a stream is decoded as ModelInfer decodes it and run at once,
in a task of its own, so the requests of one stream run concurrently. Each response goes back
as a ModelStreamInferResponse, as Triton's src/grpc/stream_infer_handler.cc writes them:

- a response carries the parameter `triton_final_response` (true on the request's last one),
  for decoupled and ordinary models alike;
- an error response carries `error_message` and an infer_response holding only the request's
  id, model name and version (as the client sent them) and `triton_final_response`; a request
  that fails before it runs (unknown model, bad input, ...) gets `error_message` and its id
  only. Either way the stream stays open and later requests are served;
- a decoupled model's final flag sent without a response reaches the client only when the
  request set `triton_enable_empty_final_response`: then as an empty response with
  `triton_final_response: true`;
- responses of decoupled models are written as they are produced; the one response of each
  request for an ordinary model (or one that failed before the model was known to be
  decoupled) is written in the order the requests arrived, after the earlier ones'. An
  ordinary model that sends several responses to a request (through a response sender)
  answers with the first one, written once the request is complete, as Triton writes it;
- when the client half-closes, the stream ends with OK once every request has finished; a
  message that does not parse ends the reading the same way (Triton's failed Read);
- when the client goes away or cancels, every request still running is cancelled
  (`loop_bridge.responses` marks it) and the server carries on;
- with the header `triton_grpc_error: true`, the first error response a model sends ends the
  stream with that error's gRPC status instead (Triton 24.08+); errors before a request runs
  still arrive as error messages.

Triton's testing hook TRITONSERVER_DELAY_GRPC_RESPONSE=<ms> holds back each response message
written to a stream by that long, logging "Delaying the write of the response by N ms..." (its
QA uses it to make responses queue up behind a slow write).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from functools import partial
from time import perf_counter_ns
from typing import Any, NamedTuple

import grpc
from tritonclient.grpc import service_pb2 as pb

from ...errors import Code, TritonError
from ...request import InferenceRequest, InferenceResponse
from ...scheduler.delay_hook import delay_count
from ...server import InferenceServer, ResolvedModel
from ...trace import Trace
from .. import loop_bridge
from ..bulk_work import bulky_bytes, bulky_input, off_loop
from ..extensions.header_forward import HeaderPattern, forward_headers
from ..extensions.infer_failed import log_infer_failed
from ..extensions.shared_memory import OutputRegion, end_region_use
from .infer_parameters import enable_empty_final_response
from .infer_request import ParsedInferRequest, decode_infer_request
from .infer_response import encode_infer_response, encode_stream_head, encode_stream_response

log = logging.getLogger("tritium.frontend.grpc")

DELAY_VARIABLE = "TRITONSERVER_DELAY_GRPC_RESPONSE"

_STATUS: dict[Code, grpc.StatusCode] = {code: grpc.StatusCode[code.grpc_name] for code in Code}

# The header that asks for errors as the stream's gRPC status (Triton's ExtractStateFromHeaders).
_GRPC_ERROR_HEADER = "triton_grpc_error"


class _Finish:
    """Queued in place of a message: end the stream, with `error` as its status if given."""

    __slots__ = ("error",)

    def __init__(self, error: TritonError | None = None) -> None:
        self.error = error


class StreamInferHandler:
    """The ModelStreamInfer handler: `handle(request_iterator, context)` is the RPC's body."""

    def __init__(self, server: InferenceServer,
                 header_forward: HeaderPattern | None = None) -> None:
        self.server = server
        self.header_forward = header_forward  # --grpc-header-forward-pattern
        self.delay_ms = delay_count(DELAY_VARIABLE)  # Triton's testing hook (0: off)

    async def handle(
        self, request_iterator: AsyncIterator[ParsedInferRequest | None], context: Any
    ) -> AsyncIterator[bytes]:
        stream = _Stream(self.server, grpc_errors=_wants_grpc_errors(context))
        if self.header_forward is not None:
            stream.header_forward = self.header_forward
            stream.metadata = tuple(context.invocation_metadata() or ())
        reader = asyncio.create_task(stream.read(request_iterator))
        try:
            while True:
                item = await stream.outbox.get()
                if isinstance(item, _Finish):
                    if item.error is not None:
                        await context.abort(_STATUS[item.error.code], item.error.message)
                    break
                if self.delay_ms:
                    log.info("Delaying the write of the response by %d ms...", self.delay_ms)
                    await asyncio.sleep(self.delay_ms / 1000)
                yield item
        finally:
            # Client gone, stream cancelled, or finished: nothing may keep running for it.
            reader.cancel()
            stream.cancel_all()


def _wants_grpc_errors(context: Any) -> bool:
    try:
        metadata = context.invocation_metadata() or ()
    except Exception:  # pragma: no cover - a context without metadata
        return False
    return any(key == _GRPC_ERROR_HEADER and value == "true" for key, value in metadata)


_contexts = itertools.count(1)


class _Stream:
    """One ModelStreamInfer call: its requests in flight and the messages waiting to be written."""

    def __init__(self, server: InferenceServer, *, grpc_errors: bool) -> None:
        self.server = server
        self.grpc_errors = grpc_errors
        # The call's metadata that --grpc-header-forward-pattern makes request parameters.
        self.header_forward: HeaderPattern | None = None
        self.metadata: tuple[tuple[str, Any], ...] = ()
        # Encoded ModelStreamInferResponse messages, and a _Finish last; one writer takes them.
        self.outbox: asyncio.Queue[bytes | _Finish] = asyncio.Queue()
        self._tasks: set[asyncio.Task[None]] = set()
        # Completes once the latest in-order request (not decoupled) has queued its response.
        self._last_turn: asyncio.Future[None] | None = None

    async def read(self, request_iterator: AsyncIterator[ParsedInferRequest | None]) -> None:
        try:
            async for parsed in request_iterator:
                if parsed is None:
                    # Triton's Read fails on a message that does not parse: reading ends.
                    break
                await self._start(parsed)
        except asyncio.CancelledError:
            raise
        except Exception:  # the transport failed under us; finish what is in flight
            log.debug("ModelStreamInfer: reading the stream failed", exc_info=True)
        while self._tasks:
            await asyncio.wait(list(self._tasks))
        self.outbox.put_nowait(_Finish())

    def cancel_all(self) -> None:
        if not self._tasks:
            return
        # Triton's verbose line for a stream that ends with requests in flight (its QA
        # greps the log for it).
        context = next(_contexts)
        log.debug("Cancellation notification received for ModelStreamInferHandler, rpc_ok=1, "
                  "context %d, %d step ISSUED", context, context)
        for task in list(self._tasks):
            task.cancel()

    async def _start(self, parsed: ParsedInferRequest) -> None:
        """Decode one request (in arrival order) and start the task that runs it. A request
        with a BYTES input of many elements is decoded on the bulk thread, the stream's next
        message read once it is (`frontend/bulk_work.py`); other streams go on meanwhile."""
        message, raws, key = parsed
        decoupled = False
        model: ResolvedModel | None = None
        request: InferenceRequest | None = None
        regions: dict[str, OutputRegion] | None = None
        error: TritonError | None = None
        try:
            # As in ModelInfer (and Triton), the model is settled before the tensors are read,
            # once: decode, inference and encode see the same version.
            model = self.server.resolve(message.model_name, message.model_version)
            decoupled = model.decoupled
            decode: Callable[[], tuple[InferenceRequest, dict[str, OutputRegion] | None]] = \
                partial(decode_infer_request, message, raws, self.server.shared_memory, key)
            if any(bulky_input(io.datatype, io.shape) for io in message.inputs):
                decode = await off_loop(decode)
            request, regions = decode()
            forward_headers(request, self.header_forward, self.metadata)
            if self.server.trace_settings.active:
                # Its message was read whole before it was decoded.
                now = perf_counter_ns()
                self.server.trace_settings.start(request, "GRPC_WAITREAD", now, now)
        except TritonError as err:
            log_infer_failed(message.id, err)
            error = err
        except asyncio.CancelledError:
            if model is not None:
                model.close()
            raise
        except Exception as exc:  # a bug, not the client's fault: say INTERNAL, keep serving
            log.exception("ModelStreamInfer: decoding a request for '%s' failed",
                          message.model_name)
            error = TritonError.internal(str(exc) or type(exc).__name__)
        if error is not None and model is not None:
            model.close()
            model = None

        previous: asyncio.Future[None] | None = None
        turn: asyncio.Future[None] | None = None
        if not decoupled:
            previous = self._last_turn
            turn = asyncio.get_running_loop().create_future()
            self._last_turn = turn

        encoding = (_NO_ENCODING if model is None
                    else _Encoding(regions, model.config, model.labels))
        task = asyncio.get_running_loop().create_task(self._run(
            message, model, request, encoding, error, decoupled, previous, turn
        ))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if model is not None:  # a task cancelled before it submitted gives the model back
            task.add_done_callback(_closing(model))

    async def _run(
        self,
        message: pb.ModelInferRequest,
        model: ResolvedModel | None,
        request: InferenceRequest | None,
        encoding: _Encoding,
        error: TritonError | None,
        decoupled: bool,
        previous: asyncio.Future[None] | None,
        turn: asyncio.Future[None] | None,
    ) -> None:
        held: list[bytes | _Finish] = []
        # Decoupled responses go out as they come; an in-order request's wait for its turn.
        emit = self.outbox.put_nowait if turn is None else held.append
        try:
            if model is None or request is None:
                assert error is not None
                emit(encode_stream_head(message, None, error.message))
            else:
                await self._infer(message, model, request, encoding, decoupled, emit)
            if turn is not None:
                if previous is not None:
                    await asyncio.wait([previous])
                for item in held:
                    self.outbox.put_nowait(item)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug: tell this request's client, keep the stream
            log.exception("ModelStreamInfer for model '%s' failed", message.model_name)
            text = str(exc) or type(exc).__name__
            self.outbox.put_nowait(encode_stream_head(message, None, text))
        finally:
            if turn is not None and not turn.done():
                turn.set_result(None)

    async def _infer(
        self,
        message: pb.ModelInferRequest,
        model: ResolvedModel,
        request: InferenceRequest,
        encoding: _Encoding,
        decoupled: bool,
        emit: Any,
    ) -> None:
        empty_final = decoupled and enable_empty_final_response(message)
        answered = False  # an ordinary model's request: its first response is its answer
        trace = request.trace
        responded = False
        if trace is not None:
            emit = _traced(emit, trace)
        try:
            async with aclosing(loop_bridge.responses(model.submit, request)) as responses:
                async for response, final in responses:
                    if trace is not None and not responded:
                        responded = True  # Triton stamps the first callback only
                        trace.responded()
                    if answered and not (self.grpc_errors and response is not None
                                         and response.error is not None):
                        continue
                    answered = not decoupled and response is not None
                    if response is None:
                        if final and empty_final:
                            emit(encode_stream_head(message, True))
                    elif response.error is not None:
                        if self.grpc_errors:
                            # The error becomes the stream's status, not a message.
                            emit(_Finish(response.error))
                            return  # closing the iteration cancels the request
                        emit(encode_stream_head(message, final, response.error.message))
                    else:
                        encode: Callable[[], bytes] = partial(_encode, response, request,
                                                              encoding, final)
                        if bulky_bytes(response.outputs):
                            encode = await off_loop(encode)  # on the bulk thread
                        emit(encode())
        except TritonError as err:
            # Raised before any response: the request could not be issued (Triton's
            # ServerInferAsync failing), so the client gets the error and the id only.
            log_infer_failed(message.id, err)
            emit(encode_stream_head(message, None, err.message))
        finally:
            end_region_use(request)
            if trace is not None:
                trace.capture("GRPC_SEND_END", perf_counter_ns())
                trace.finish()


def _traced(emit: Any, trace: Trace) -> Any:
    """`emit` that stamps GRPC_SEND_START when the request's first message goes out (its
    GRPC_SEND_END is stamped when its last has)."""
    started = False

    def emit_traced(item: Any) -> None:
        nonlocal started
        if not started:
            started = True
            trace.capture("GRPC_SEND_START", perf_counter_ns())
        emit(item)

    return emit_traced


class _Encoding(NamedTuple):
    """What encoding a request's responses needs besides the response: the client regions its
    outputs go to, and the model's configuration and labels (classification reads them)."""

    regions: dict[str, OutputRegion] | None
    config: Any
    labels: dict[str, list[str]]


# A request that failed before its model was known is answered with its error only.
_NO_ENCODING = _Encoding(None, None, {})


def _closing(model: ResolvedModel) -> Callable[[asyncio.Task[None]], None]:
    return lambda _task: model.close()


def _encode(response: InferenceResponse, request: InferenceRequest, encoding: _Encoding,
            final: bool) -> bytes:
    return encode_stream_response(encode_infer_response(
        response, request, final=final, regions=encoding.regions, config=encoding.config,
        labels=encoding.labels,
    ))


__all__ = ["StreamInferHandler"]

"""The stub (Triton's pb_stub.cc): runs one instance of a Triton Python-backend model.

The main thread serves the *exec* socket: INIT (import model.py, `initialize(args)`), EXECUTE
(one batch: `execute(requests)`, answered with the returned responses), FINALIZE and
AUTO_COMPLETE, one at a time, in order. A reader thread serves the *async* socket: replies to
the stub's own calls (BLS, metrics, readiness of other models, cancellation; see
`runtime.py`), readiness queries (`is_ready()`), and the server going away (EOF: the stub
exits at once).

How model.py is imported (`model_import`), what execute returned (`returned_responses`), the
loop async code runs on (`model_event_loop`) and how errors are worded (`stub_errors`) are
modules of their own; this one runs the model's calls in order and answers the server.

Runs in the stub process: standard library, numpy, `triton_python_backend_utils` and the
transport only; it may run under another interpreter (an execution environment).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import threading
import time
import traceback
from typing import Any

from ..wire import messages
from ..wire.shm_ring import Ring
from ..wire.shm_tensors import TensorWriter, open_block
from .cuda_device import make_current
from .model_event_loop import ModelEventLoop
from .model_import import import_model_file
from .returned_responses import RELEASE_RESCHEDULE, held_senders, returned_responses
from .runtime import StubRuntime
from .stub_errors import describe_exception, hide_frames_of

# How long an execution's answer may wait for those of the executions after it in the same
# EXECUTE message (which run one after the other), judged by how long executions usually take.
ANSWER_HOLD_NS = 1_000_000
# Container objects allocated (net) between two young-generation collections once initialized
# (the server's tritium.heap.YOUNG_THRESHOLD; Python's default is 700).
_YOUNG_THRESHOLD = 10_000


class Stub:
    """The model instance in this process, and the two threads that serve it."""

    def __init__(self, exec_conn: messages.Connection, async_conn: messages.Connection,
                 in_ring: Ring, out_ring: Ring, name: str) -> None:
        self.exec_conn = exec_conn
        self.async_conn = async_conn
        self.in_ring = in_ring
        self.writer = TensorWriter(out_ring, f"tritium-{name}")
        self.name = name
        self.pb: Any = None
        self.model: Any = None
        self.decoupled = False
        self.initialized = False
        self.finalizing = False
        self.runtime = StubRuntime(self)
        # Where `async def execute` and `is_ready` run.
        self.loop = ModelEventLoop(self._on_loop_start, self._log_background_error)
        self._from_server: Any = None
        # The GPU of a KIND_GPU instance (None on the CPU): current on the threads that run the
        # model's code.
        self.device_id: int | None = None
        # FORCE_CPU_ONLY_INPUT_TENSORS "no": GPU inputs stay on the GPU.
        self.gpu_inputs = False
        # How long the model's execute usually takes (a moving average, ns).
        self._usual_execution_ns = 0

    # -- main thread: the exec socket ----------------------------------------------------

    def serve(self) -> None:
        conn = self.exec_conn
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                os._exit(0)
            kind = message[0]
            if kind == messages.EXECUTE:
                self.execute(message)
            elif kind == messages.INIT:
                self.initialize(message[1])
            elif kind == messages.FINALIZE:
                self.finalize()
                return
            elif kind == messages.AUTO_COMPLETE:
                self.auto_complete(message[1])
            else:
                conn.send((messages.DONE, f"unknown command {kind}", None))

    def _import_model(self, settings: dict) -> Any:
        """Import model.py; its TritonPythonModel class, with pb_utils' runtime installed."""
        import triton_python_backend_utils as pb

        self.pb = pb
        self._from_server = pb.InferenceRequest._from_server
        hide_frames_of(os.path.dirname(pb.__file__))
        path = settings["model_path"]
        for entry in settings.get("sys_path", []):
            if entry not in sys.path:
                sys.path.append(entry)
        module = import_model_file(path, bool(settings.get("backend_model")))
        if not hasattr(module, "TritonPythonModel"):
            raise AttributeError("module 'model' has no attribute 'TritonPythonModel'")
        pb._set_runtime(self.runtime, settings.get("model_dir"))
        return module.TritonPythonModel

    def initialize(self, settings: dict) -> None:
        self.decoupled = bool(settings.get("decoupled"))
        self.gpu_inputs = bool(settings.get("gpu_inputs"))
        try:
            cls = self._import_model(settings)
            args = settings["args"]
            if args.get("model_instance_kind") == "GPU":
                # After model.py's imports: the framework it imported sets the device.
                self.device_id = int(args["model_instance_device_id"])
                self._use_device()
            self.model = cls()
            if hasattr(self.model, "initialize"):
                self.model.initialize(settings["args"])
            self.initialized = True
        except BaseException as exc:  # reported to the server, which fails the load
            # With the count of async frames sent (what initialize() logged before it
            # failed): the server handles them before it reports the failure.
            self._send_done(describe_exception(exc), {"async_sent": self.async_conn.sent})
            return
        # What is alive now (the model, pb_utils, numpy) lives as long as the stub: frozen, the
        # garbage collector's walks skip it; and young objects are collected less often, since
        # a batch's are all alive until it is answered (as the server's own heap.settle does;
        # identity_fp32 gRPC c=32, batches of 32: 2-8 % more inferences a second).
        gc.collect()
        gc.freeze()
        gc.set_threshold(_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        self._send_done(None, {"has_is_ready": hasattr(self.model, "is_ready"),
                               "async_sent": self.async_conn.sent})

    def _use_device(self) -> None:
        """Make the instance's GPU current on this thread; when it cannot be, the model's CUDA
        work (if any) lands on the device its framework picks, and the log says why."""
        assert self.device_id is not None
        done, what = make_current(self.device_id)
        if done:
            self.runtime.log(3, f"{self.name}: GPU {self.device_id} made current ({what})",
                             __file__, 0)
        else:
            self.runtime.log(3, f"{self.name}: could not make GPU {self.device_id} current "
                             f"(fine if the model does no CUDA work): {what}", __file__, 0)

    def auto_complete(self, settings: dict) -> None:
        try:
            cls = self._import_model(settings)
            result = None
            if hasattr(cls, "auto_complete_config"):
                config = self.pb.ModelConfig(settings["config"])
                returned = cls.auto_complete_config(config)
                if not isinstance(returned, self.pb.ModelConfig):
                    raise TypeError(
                        f"auto_complete_config function in model '{settings['model_name']}' "
                        "must return a valid pb.ModelConfig object."
                    )
                result = json.dumps(returned.as_dict())
        except BaseException as exc:
            self._send_done(describe_exception(exc))
            return
        self._send_done(None, result)

    def finalize(self) -> None:
        self.finalizing = True
        error = None
        self.loop.stop()
        if self.initialized and hasattr(self.model, "finalize"):
            try:
                self.model.finalize()
            except BaseException as exc:
                error = describe_exception(exc)
        try:
            # With the count of async frames sent (log lines of finalize() among them): the
            # server handles them all before it closes the channel.
            self._send_done(error, self.async_conn.sent)
        except OSError:
            pass

    def _send_done(self, error: str | None, value: Any = None) -> None:
        """Answer INIT, AUTO_COMPLETE or FINALIZE."""
        self.exec_conn.send((messages.DONE, error, value))

    def execute(self, message: tuple) -> None:
        """Executions in order, each one call of the model's execute: build its requests
        (inputs are views of the in-ring), run it, answer with what it returned. The server
        sends several when requests queue up for an instance with no batcher, each its own
        execution as Triton runs them, in one message. The hot path: keep it lean."""
        _, executions, block_descriptor = message
        conn = self.exec_conn
        block = (None if block_descriptor is None
                 else open_block(block_descriptor, self.in_ring, conn.fds))
        # Outcomes go back together while executions are fast (one wake-up of the server's
        # thread for several): one waits for the next execution only if that one, taking as
        # long as executions usually do, ends within ANSWER_HOLD_NS of it.
        unsent: list[tuple] = []
        fds: list[int] = []
        first_end = 0
        try:
            for wire_requests in executions:
                if unsent and (time.perf_counter_ns() - first_end + self._usual_execution_ns
                             >= ANSWER_HOLD_NS):
                    self._send_outcomes(unsent, fds)
                    unsent, fds = [], []
                outcome, outcome_fds = self._execute_one(wire_requests, block)
                start, end = outcome[-2], outcome[-1]
                self._usual_execution_ns = (3 * self._usual_execution_ns + end - start) // 4
                if not unsent:
                    first_end = end
                unsent.append(outcome)
                fds += outcome_fds
            self._send_outcomes(unsent, fds)
        finally:
            if block is not None:
                block.release()

    def _send_outcomes(self, outcomes: list[tuple], fds: list[int]) -> None:
        try:
            self.exec_conn.send((messages.DONE, outcomes), fds)
        finally:
            for fd in fds:
                os.close(fd)

    def _execute_one(self, wire_requests: list, block: Any) -> tuple[tuple, list[int]]:
        """One execution -> (its outcome, the fds of its responses' block): (error, responses,
        async frames sent so far, responses' block, held, rescheduled, start and end of the
        model's execute on the perf_counter clock, which the server's shares)."""
        decoupled = self.decoupled
        tensor = self.pb.Tensor._from_server
        from_server = self._from_server
        requests = []
        start = time.perf_counter_ns()
        try:
            for (handle, rid, cid, flags, timeout, params, names, descriptors,
                 on_device) in wire_requests:
                inputs = []
                if descriptors:
                    assert block is not None  # the inputs travel in the block
                    inputs = [tensor(name, block.array(datatype, shape, offset, nbytes, decoupled),
                                     datatype == "BF16")
                              for name, datatype, shape, offset, nbytes in descriptors]
                if on_device:
                    inputs += self._device_inputs(on_device)
                requests.append(from_server(handle, inputs, names, rid, cid, flags, timeout,
                                            params, decoupled))
            if decoupled and block is not None:
                # The inputs were copied, for threads that use them after execute (a decoupled
                # model is sent one execution at a time).
                block.release()
        except BaseException as exc:
            return self._outcome(describe_exception(exc), None, None, (), (), start), []

        responses = out_block = None
        fds: list[int] = []
        error = None
        try:
            returned = self.model.execute(requests)
            if type(returned) is not list and asyncio.iscoroutine(returned):
                if decoupled:
                    self.loop.run_in_background(returned)
                    returned = None
                else:
                    returned = self.loop.run(returned)
            if returned is not None:
                responses, out_block, fds = returned_responses(
                    self.pb, self.writer, self.name, decoupled, requests, returned)
        except BaseException as exc:
            error = (f"Failed to process the request(s) for model '{self.name}', message: "
                     + describe_exception(exc))
            for request in requests:
                request._response_sender._close()
        held: list[int] = []
        # The requests the model released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: the
        # server asks their scheduler to run them again.
        rescheduled = [] if error is not None else [
            index for index, request in enumerate(requests)
            if request._release_flags & RELEASE_RESCHEDULE
        ]
        # A request left unanswered (execute returned None, or None in its place) whose
        # sender the model keeps is answered later through it.
        if not decoupled and error is None and (responses is None or None in responses):
            held = [index for index in held_senders(requests) if index not in rescheduled]
        return self._outcome(error, responses, out_block, held, rescheduled, start), fds

    def _device_inputs(self, on_device: list) -> list:
        """Inputs a BLS caller sent from its GPU: mapped by CUDA IPC, and handed to the model
        on the GPU when it takes GPU inputs, else copied to the host."""
        from .cuda_ipc import open_tensor

        pb = self.pb
        inputs = []
        for name, array in on_device:
            device = open_tensor(array)
            inputs.append(pb.Tensor._on_device(name, device) if self.gpu_inputs
                          else pb.Tensor._from_server(name, device.to_host()))
        return inputs

    def _outcome(self, error: str | None, responses: Any, block: Any, held: Any,
                 rescheduled: Any, start: int) -> tuple:
        """An execution's part of the answer to EXECUTE, saying how many async frames
        (responses sent through a response sender) the server must handle first, which
        requests the model will still answer through their response sender (`held`) and which
        it rescheduled."""
        return (error, responses, self.async_conn.sent, block, list(held), list(rescheduled),
                start, time.perf_counter_ns())

    # -- the async event loop (async def execute) ------------------------------------------

    def _on_loop_start(self) -> None:
        """On the event loop's thread, before the model's coroutines: the instance's GPU."""
        if self.device_id is not None:  # async execute runs on the loop's thread
            self._use_device()

    def _log_background_error(self, text: str) -> None:
        self.runtime.log(2, text, __file__, 0)

    # -- the reader thread: the async socket ---------------------------------------------

    def read_async(self) -> None:
        conn = self.async_conn
        runtime = self.runtime
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                if self.finalizing:
                    return  # the main thread is finishing up
                os._exit(0)  # the server has gone: nothing left to serve
            try:
                kind = message[0]
                if kind == messages.BLS_RESPONSE:
                    runtime.on_bls_response(message)
                elif kind == messages.REPLY:
                    runtime.on_reply(message)
                elif kind == messages.READY_QUERY:
                    threading.Thread(target=self._answer_ready, args=(message[1],),
                                     daemon=True).start()
            except Exception:
                traceback.print_exc()

    def _answer_ready(self, query_id: int) -> None:
        ready = False
        try:
            result = self.model.is_ready()
            if asyncio.iscoroutine(result):
                result = self.loop.run(result)
            ready = result is True or (isinstance(result, (bool,)) and bool(result))
        except BaseException as exc:
            self.runtime.log(2, f"is_ready() raised: {describe_exception(exc)}", __file__, 0)
        try:
            self.async_conn.send((messages.READY_REPLY, query_id, ready))
        except OSError:
            pass

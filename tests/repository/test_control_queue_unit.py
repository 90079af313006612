"""ModelControlQueue: loads and unloads of one model one at a time, identical waiting requests
run once, the latest kind last; other models in parallel; work that submits work runs it."""

from __future__ import annotations

import threading

import pytest

from tritium.errors import TritonError
from tritium.repository.control_queue import ModelControlQueue


class Recorder:
    def __init__(self) -> None:
        self.runs: list[str] = []
        self.running: dict[str, int] = {}
        self.overlap = False
        self.lock = threading.Lock()

    def work(self, model: str, label: str, gate: threading.Event | None = None,
             started: threading.Event | None = None):
        def run() -> None:
            if started is not None:
                started.set()
            with self.lock:
                self.running[model] = self.running.get(model, 0) + 1
                self.overlap |= self.running[model] > 1
            if gate is not None:
                assert gate.wait(30)
            with self.lock:
                self.runs.append(label)
                self.running[model] -= 1
        return run


def test_waiting_requests_run_once_per_kind_latest_kind_last() -> None:
    queue = ModelControlQueue(4)
    recorder = Recorder()
    gate, started = threading.Event(), threading.Event()
    first = queue.submit("m", "load", recorder.work("m", "load-0", gate, started))
    assert started.wait(30)
    # While the first load runs, a storm waits: load, unload, load, unload, load.
    waiting = [queue.submit("m", kind, recorder.work("m", f"{kind}-{i}"))
               for i, kind in enumerate(["load", "unload", "load", "unload", "load"], 1)]
    gate.set()
    for future in [first, *waiting]:
        future.result(30)
    # The five waiting requests ran as two executions: unload (latest at 4), then load (5).
    assert recorder.runs == ["load-0", "unload-2", "load-1"]
    assert not recorder.overlap
    queue.close()


def test_other_models_are_not_held_up() -> None:
    queue = ModelControlQueue(2)
    recorder = Recorder()
    gate = threading.Event()
    slow = queue.submit("a", "load", recorder.work("a", "a", gate))
    queue.submit("b", "load", recorder.work("b", "b")).result(30)  # while `a` still loads
    assert recorder.runs == ["b"]
    gate.set()
    slow.result(30)
    queue.close()


def test_a_failure_reaches_every_waiting_request() -> None:
    queue = ModelControlQueue(1)
    gate = threading.Event()
    first = queue.submit("m", "unload", lambda: gate.wait(30) and None)

    def fail() -> None:
        raise TritonError.invalid_arg("load failed for model 'm'")

    waiting = [queue.submit("m", "load", fail) for _ in range(3)]
    gate.set()
    first.result(30)
    for future in waiting:
        with pytest.raises(TritonError, match="load failed"):
            future.result(30)
    queue.close()


def test_work_that_loads_another_model_runs_it_at_once() -> None:
    queue = ModelControlQueue(1)  # one worker: waiting for another would never end
    done: list[str] = []

    def outer() -> None:
        queue.submit("inner", "load", lambda: done.append("inner")).result(30)
        done.append("outer")

    queue.submit("outer", "load", outer).result(30)
    assert done == ["inner", "outer"]
    queue.close()
    with pytest.raises(TritonError, match="exiting"):
        queue.submit("m", "load", lambda: None).result(30)

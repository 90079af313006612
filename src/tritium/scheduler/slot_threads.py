"""Execution slots, and the thread serving each, as a model's instances come and go.

A slot is an instance (the BLOCKING policy) or the instances sharing a device, taking turns
(DEVICE_BLOCKING); the default and dynamic-batch schedulers run one thread per slot. Triton
updates a loaded model's instance groups in place (Triton's TritonModel::UpdateInstanceGroup):
instances are added and removed while the others go on serving. `SlotThreads` keeps one
thread per slot of the current instances: `update` starts threads for new slots and marks
those whose slot is gone retired; the scheduler wakes them (each finishes the execution it is
in first) and waits for them, after which the removed instances can be finalized.
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence

from ..backend.handles import ExecutionPolicy
from .base import ExecutionInstance

Slot = list[ExecutionInstance]


class SlotWorker:
    """One slot's thread; `retired`: leave at the next chance; `idle`: waiting for work
    (so a retired worker needs waking), not executing."""

    __slots__ = ("idle", "retired", "slot", "thread")

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.thread: threading.Thread | None = None
        self.retired = False
        self.idle = False

    def is_alive(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class SlotThreads:
    def __init__(
        self,
        name: str,
        instances: Sequence[ExecutionInstance],
        policy: ExecutionPolicy,
        serve: Callable[[SlotWorker], None],
    ) -> None:
        self._name = name
        self._policy = policy
        self._serve = serve
        self._instances = list(instances)
        self._workers: dict[tuple[int, ...], SlotWorker] = {}
        self._numbers = itertools.count()

    def start(self) -> None:
        for slot in execution_slots(self._instances, self._policy):
            self._spawn(slot)

    def update(
        self, added: Sequence[ExecutionInstance], removed: Sequence[ExecutionInstance]
    ) -> list[SlotWorker]:
        """Serve the slots of the instances now current (`removed` gone, `added` new); the
        workers whose slot is gone, marked retired, for the caller to wake and wait for."""
        gone = {id(instance) for instance in removed}
        self._instances = [i for i in self._instances if id(i) not in gone] + list(added)
        slots = {_key(slot): slot for slot in execution_slots(self._instances, self._policy)}
        retiring = [worker for key, worker in self._workers.items() if key not in slots]
        for worker in retiring:
            worker.retired = True
            del self._workers[_key(worker.slot)]
        for key, slot in slots.items():
            if key not in self._workers:
                self._spawn(slot)
        return retiring

    def take_all(self) -> list[SlotWorker]:
        """Every worker, forgotten (the scheduler stops them)."""
        workers = list(self._workers.values())
        self._workers.clear()
        return workers

    def __len__(self) -> int:
        return len(self._workers)

    def __iter__(self) -> Iterator[SlotWorker]:
        return iter(list(self._workers.values()))

    def _spawn(self, slot: Slot) -> None:
        worker = SlotWorker(slot)
        worker.thread = threading.Thread(
            target=self._serve, args=(worker,),
            name=f"{self._name}-{next(self._numbers)}", daemon=True,
        )
        self._workers[_key(slot)] = worker
        worker.thread.start()


def execution_slots(
    instances: Sequence[ExecutionInstance], policy: ExecutionPolicy
) -> list[Slot]:
    if policy is ExecutionPolicy.BLOCKING:
        return [[instance] for instance in instances]
    by_device: dict[tuple[str, int], Slot] = defaultdict(list)
    for instance in instances:
        by_device[(instance.handle.kind, instance.handle.device_id)].append(instance)
    return list(by_device.values())


def _key(slot: Slot) -> tuple[int, ...]:
    return tuple(id(instance) for instance in slot)

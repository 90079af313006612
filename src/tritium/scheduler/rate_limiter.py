"""The rate limiter (`--rate-limit execution_count`): Triton's RateLimiter across all models.

An instance whose group names `rate_limiter { resources [...] }` executes only while the
resources it needs are free on its device (or system-wide, for `global` ones); it holds them
for the execute. A resource's count is what `--rate-limit-resource name:count[:device]` says,
else the largest need of any loaded instance, so every instance can run. Among the instances
waiting for resources, the one scheduled least relative to its `priority` goes first: priority 2
gets half the turns of priority 1.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections import defaultdict
from dataclasses import dataclass, field

from tritonclient.grpc import model_config_pb2 as mc

from ..errors import TritonError

log = logging.getLogger("tritium.scheduler")

# (resource name, device id); device None for a global resource.
_Key = tuple[str, "int | None"]
_ALL_DEVICES = -1


@dataclass(eq=False)
class InstanceLimits:
    """What one instance needs, and how often it has been scheduled (weighted by priority)."""

    needs: dict[_Key, int]
    priority: int
    usage: int = 0
    tickets: list[int] = field(default_factory=list)


class RateLimiter:
    def __init__(self, resources: list[tuple[str, int, int]]) -> None:
        # --rate-limit-resource entries: (name, device or -1 for every device) -> count.
        self._explicit = {(name, device): count for name, count, device in resources}
        self._registered: list[InstanceLimits] = []
        self._in_use: dict[_Key, int] = defaultdict(int)
        self._waiting: dict[int, InstanceLimits] = {}
        self._arrivals = itertools.count()
        self._changed = threading.Condition()

    def register(self, device: int, config: mc.ModelRateLimiter) -> InstanceLimits | None:
        """Note an instance's needs (None if it needs nothing); raises INVALID_ARG when a
        resource given on the command line is too small for it, as Triton does."""
        needs: dict[_Key, int] = {}
        for resource in config.resources:
            needs[(resource.name, None if getattr(resource, "global") else device)] = resource.count
        if not needs:
            return None
        for key, count in needs.items():
            explicit = self._explicit_count(key)
            if explicit is not None and explicit < count:
                raise TritonError.invalid_arg(
                    f'Resource count for "{key[0]}" is limited to {explicit} which will prevent '
                    "scheduling of one or more model instances, the minimum required count is "
                    f"{count}"
                )
        limits = InstanceLimits(needs, max(config.priority, 1))
        with self._changed:
            self._registered.append(limits)
            self._log_resources()
        return limits

    def unregister(self, limits: InstanceLimits) -> None:
        with self._changed:
            self._registered.remove(limits)
            self._changed.notify_all()
            self._log_resources()

    def _log_resources(self) -> None:
        """Lock held: the resources available now, per device, as Triton's verbose log shows
        them when instances come and go."""
        if not log.isEnabledFor(logging.DEBUG):
            return
        devices: dict[int | None, set[str]] = defaultdict(set)
        for limits in self._registered:
            for name, device in limits.needs:
                devices[device].add(name)
        text = "\nMax Resource Map===>\n"
        for device in sorted(devices, key=lambda d: -1 if d is None else d):
            text += f"\tDevice: {'GLOBAL' if device is None else device}\n"
            for name in sorted(devices[device]):
                text += f"\t\tResource: {name}\t Count: {self._available((name, device))}\n"
        log.debug("%s", text)

    def acquire(self, limits: InstanceLimits) -> None:
        """Block until `limits` may execute, then take its resources."""
        with self._changed:
            ticket = next(self._arrivals)
            self._waiting[ticket] = limits
            try:
                self._changed.wait_for(lambda: self._next_to_run() == ticket)
            finally:
                del self._waiting[ticket]
            for key, count in limits.needs.items():
                self._in_use[key] += count
            limits.usage += limits.priority
            self._changed.notify_all()  # the next waiter may fit in what is left

    def release(self, limits: InstanceLimits) -> None:
        with self._changed:
            for key, count in limits.needs.items():
                self._in_use[key] -= count
            self._changed.notify_all()

    def _next_to_run(self) -> int | None:
        """The waiting ticket that runs next: among those whose needs are free now, the least
        scheduled for its priority, then the earliest."""
        fitting = [
            (limits.usage, ticket) for ticket, limits in self._waiting.items()
            if all(self._in_use[key] + count <= self._available(key)
                   for key, count in limits.needs.items())
        ]
        return min(fitting)[1] if fitting else None

    def _available(self, key: _Key) -> int:
        explicit = self._explicit_count(key)
        if explicit is not None:
            return explicit
        return max((limits.needs.get(key, 0) for limits in self._registered), default=0)

    def _explicit_count(self, key: _Key) -> int | None:
        name, device = key
        if device is None:
            return self._explicit.get((name, _ALL_DEVICES))
        count = self._explicit.get((name, device))
        return count if count is not None else self._explicit.get((name, _ALL_DEVICES))


def parse_resource(text: str) -> tuple[str, int, int]:
    """`--rate-limit-resource name:count[:device]` (no device: every device)."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or not parts[0]:
            raise ValueError
        return parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else _ALL_DEVICES
    except ValueError:
        raise ValueError(
            f"--rate-limit-resource must be <name>:<count>[:<device>], got '{text}'"
        ) from None

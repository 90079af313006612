"""The rate limiter (`--rate-limit execution_count`): Triton's RateLimiter across all models.

An instance whose group names `rate_limiter { resources [...] }` executes only while the
resources it needs are free on its device (or system-wide, for `global` ones); it holds them
for the execute. Without `--rate-limit-resource`, a resource's count is the largest need of any
loaded instance, so every instance can run. Once any `--rate-limit-resource name:count[:device]`
is given, those are the only resources there are, as in Triton: a device's count of a resource
is the larger of its own entry and the entry for every device (no device), a global resource's
is the largest entry of that name for any device, and a resource named nowhere has none; an
instance needing more than there is fails to load. A resource is global or per device across
all models, never both. Among the instances waiting for resources, the one scheduled least
relative to its `priority` goes first: priority 2 gets half the turns of priority 1.
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
        """Note an instance's needs (None if it needs nothing); raises INVALID_ARG, as Triton
        does, when a resource the command line counts is too small for it (global resources
        reported first, then by device and name) or when it names as global a resource that
        is per device elsewhere, or the other way round."""
        needs: dict[_Key, int] = {}
        for resource in config.resources:
            needs[(resource.name, None if getattr(resource, "global") else device)] = resource.count
        if not needs:
            return None
        if self._explicit:
            for key in sorted(needs, key=_report_order):
                explicit = self._explicit_count(key)
                if explicit < needs[key]:
                    raise TritonError.invalid_arg(
                        f'Resource count for "{key[0]}" is limited to {explicit} which will '
                        "prevent scheduling of one or more model instances, the minimum "
                        f"required count is {needs[key]}"
                    )
        limits = InstanceLimits(needs, max(config.priority, 1))
        with self._changed:
            self._check_kinds(needs)
            self._registered.append(limits)
            self._log_resources()
        return limits

    def _check_kinds(self, needs: dict[_Key, int]) -> None:
        """Lock held: a resource is global for every instance or per device for every one."""
        known = {(name, device is None) for other in self._registered
                 for name, device in other.needs}
        known.update((name, device is None) for name, device in needs)
        for name, device in sorted(needs, key=_report_order):
            if (name, device is not None) in known:
                raise TritonError.invalid_arg(
                    f'Resource "{name}" is present as both global and device-specific '
                    "resource in the model configuration."
                )

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
            self._changed.notify_all()  # the next waiter may fit in what is left

    def release(self, limits: InstanceLimits, executed: bool = True) -> None:
        """Hand back `limits`' resources; an execution counts against its next turns (one
        that found nothing to run does not), as Triton's execution count does."""
        with self._changed:
            for key, count in limits.needs.items():
                self._in_use[key] -= count
            if executed:
                limits.usage += limits.priority
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
        if self._explicit:
            return self._explicit_count(key)
        return max((limits.needs.get(key, 0) for limits in self._registered), default=0)

    def _explicit_count(self, key: _Key) -> int:
        """The count the command line gives (0 for a resource it does not name): a device's is
        the larger of its own entry and the every-device one; a global resource's, the largest
        entry of that name."""
        name, device = key
        return max((count for (entry, on), count in self._explicit.items()
                    if entry == name and (device is None or on in (device, _ALL_DEVICES))),
                   default=0)


def _report_order(key: _Key) -> tuple[int, str]:
    """Triton's order of resources in its checks: global ones first, then by device and name."""
    name, device = key
    return (-2 if device is None else device, name)


def parse_resource(text: str) -> tuple[str, int, int]:
    """`--rate-limit-resource name:count[:device]` (no device: every device)."""
    parts = text.split(":")
    try:
        if len(parts) not in (2, 3) or not parts[0]:
            raise ValueError
        return parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else _ALL_DEVICES
    except ValueError:
        raise ValueError(
            "--rate-limit-resource option format is '<resource_name>:<count>:<device>' or "
            f"'<resource_name>:<count>'. Got {text}"
        ) from None

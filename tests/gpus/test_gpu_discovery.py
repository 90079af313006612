"""tritium.gpus: CUDA_VISIBLE_DEVICES read the way the CUDA runtime reads it."""

from __future__ import annotations

import pytest

from tritium.gpus import GpuDevice, GpuInventory, visible_nvml_indices

UUIDS = ["GPU-aaaa1111-0000", "GPU-bbbb2222-0000", "GPU-aabb3333-0000"]


@pytest.mark.parametrize("visible, expected", [
    (None, [0, 1, 2]),
    ("", []),
    ("-1", []),
    ("2", [2]),
    ("2,0", [2, 0]),
    (" 1 , 2 ", [1, 2]),
    ("0,0", [0]),                    # a repeated device ends the list
    ("1,9,0", [1]),                  # so does one that does not exist
    ("GPU-bbbb", [1]),               # a unique UUID prefix
    ("GPU-aa", []),                  # an ambiguous one names nothing
    ("gpu-aabb3333-0000,0", [2, 0]),
    ("MIG-abc", []),
])
def test_visible_devices(visible: str | None, expected: list[int]) -> None:
    assert visible_nvml_indices(visible, UUIDS) == expected


def test_supported_devices_are_those_at_the_minimum_capability() -> None:
    def device(i: int, cc: tuple[int, int]) -> GpuDevice:
        return GpuDevice(i, i, "gpu", f"GPU-{i}", "bus", cc, 1 << 30)

    inventory = GpuInventory((device(0, (5, 2)), device(1, (6, 0)), device(2, (9, 0))), 6.0)
    assert inventory.supported_ids == (1, 2)
    assert inventory.device(2) is not None and inventory.device(2).capability == 9.0

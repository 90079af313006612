"""``tritonserver._api._dlpack``: DLPack's device types."""

from tritium.inprocess.enums import DLDeviceType

__all__ = ["DLDeviceType"]

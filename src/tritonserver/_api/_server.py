"""``tritonserver._api._server``: the server, its options and their enumerations."""

from tritium.inprocess.enums import (
    InstanceGroupKind,
    LogFormat,
    MetricFormat,
    ModelControlMode,
    RateLimitMode,
)
from tritium.inprocess.server import ModelDictionary, Options, RateLimiterResource, Server

__all__ = ["InstanceGroupKind", "LogFormat", "MetricFormat", "ModelControlMode",
           "ModelDictionary", "Options", "RateLimitMode", "RateLimiterResource", "Server"]

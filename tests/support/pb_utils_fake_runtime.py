"""What the pb_utils unit tests share: a fake runtime in place of the stub, and request and
response builders.

Test modules import the fixtures they use from here, always `no_runtime` (autouse: each test
starts and ends with no runtime set).
"""

from __future__ import annotations

import gc
import json

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils


class FakeRuntime:
    """Records what the module asks of the server."""

    def __init__(self):
        self.calls = []
        self.cancelled = False
        self.bls_response = pb_utils.InferenceResponse(
            output_tensors=[pb_utils.Tensor("OUT", np.array([1.0], np.float32))]
        )
        self.fail_with = None
        self.metric_values = {}

    def _record(self, *call):
        self.calls.append(call)
        if self.fail_with is not None:
            raise pb_utils.TritonModelException(self.fail_with)

    def send_response(self, request_handle, response, flags):
        self._record("send_response", request_handle, response, flags)

    def is_cancelled(self, request_handle):
        self._record("is_cancelled", request_handle)
        return self.cancelled

    def bls_exec(self, request, decoupled):
        self._record("bls_exec", request, decoupled)
        return iter([self.bls_response]) if decoupled else self.bls_response

    def bls_async_exec(self, request, decoupled):
        self._record("bls_async_exec", request, decoupled)

        async def run():
            return self.bls_exec(request, decoupled)

        return run()

    def log(self, level, message, filename, line):
        self._record("log", level, message, filename, line)

    def metric_family_new(self, name, description, kind):
        self._record("metric_family_new", name, description, kind)
        return f"family:{name}"

    def metric_new(self, family_handle, labels, buckets):
        self._record("metric_new", family_handle, labels, buckets)
        handle = f"metric:{family_handle}:{json.dumps(labels, sort_keys=True)}"
        self.metric_values.setdefault(handle, 0.0)
        return handle

    def metric_update(self, metric_handle, op, value):
        self._record("metric_update", metric_handle, op, value)
        if op == "set":
            self.metric_values[metric_handle] = value
        else:
            self.metric_values[metric_handle] += value

    def metric_value(self, metric_handle):
        self._record("metric_value", metric_handle)
        return self.metric_values[metric_handle]

    def metric_family_delete(self, handle):
        self._record("metric_family_delete", handle)

    def metric_delete(self, handle):
        self._record("metric_delete", handle)

    def load_model(self, name, config, files):
        self._record("load_model", name, config, files)

    def unload_model(self, name, unload_dependents):
        self._record("unload_model", name, unload_dependents)

    def is_model_ready(self, name, version):
        self._record("is_model_ready", name, version)
        return True


@pytest.fixture(autouse=True)
def no_runtime():
    pb_utils._set_runtime(None)
    yield
    gc.collect()  # MetricFamily objects of a test are deleted while its runtime is set
    pb_utils._set_runtime(None)


@pytest.fixture
def rt():
    runtime = FakeRuntime()
    pb_utils._set_runtime(runtime, "/models/m/1")
    return runtime


def server_request(decoupled=False, names=("OUT",), handle="h1", **kw):
    args = dict(
        inputs=[pb_utils.Tensor("IN", np.array([1, 2], np.int32))],
        requested_output_names=names,
        request_id="r1",
        correlation_id=7,
        flags=pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
        timeout_us=500,
        parameters_json='{"k":"v"}',
        decoupled=decoupled,
    )
    args.update(kw)
    return pb_utils.InferenceRequest._from_server(handle, **args)


def response(*names):
    return pb_utils.InferenceResponse(
        output_tensors=[pb_utils.Tensor(n, np.array([1], np.int8)) for n in names]
    )

"""Unit tests of triton_python_backend_utils' calls into the server: without a runtime they fail
clearly; with a fake runtime in place of the stub, response senders, cancellation, BLS, logging,
metrics and model control ask the server what they should. Expected messages are Triton 2.51's
words (its stub)."""

from __future__ import annotations

import asyncio
import gc
import logging

import pytest

import triton_python_backend_utils as pb_utils

# `no_runtime` is autouse: every test here starts and ends with no runtime set.
from support.pb_utils_fake_runtime import no_runtime, response, rt, server_request  # noqa: F401

# --- without a runtime ----------------------------------------------------------------------


def test_calls_needing_the_server_fail_clearly_without_runtime():
    request = server_request()
    bls = pb_utils.InferenceRequest(model_name="m", inputs=[], requested_output_names=["a"])
    for call in (
        bls.exec,
        request.is_cancelled,
        lambda: request.get_response_sender().send(response("OUT")),
        pb_utils.get_model_dir,
    ):
        with pytest.raises(pb_utils.TritonModelException, match="not connected to a server|"
                           "only known inside a model instance"):
            call()
    with pytest.raises(pb_utils.TritonModelException, match="^Failed to load model: "):
        pb_utils.load_model("m")
    with pytest.raises(pb_utils.TritonModelException, match="^Error when creating MetricFamily: "):
        pb_utils.MetricFamily("f", "d", pb_utils.MetricFamily.COUNTER)
    # A failed send did not consume the sender.
    assert not request.get_response_sender()._is_closed()


def _line_of(call: str) -> int:
    """The line of this file's first `pb_utils.Logger.<call>(`."""
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if f"Logger.{call}(" in line)


def test_logger_falls_back_to_logging(caplog):
    with caplog.at_level(logging.DEBUG, logger="triton_python_backend_utils"):
        pb_utils.Logger.log_warn("careful")
        pb_utils.Logger.log_verbose("details")
    warning, verbose = caplog.records
    assert warning.levelno == logging.WARNING and verbose.levelno == logging.DEBUG
    assert warning.getMessage() == "careful"
    # The caller's file and line, for the log line's head.
    assert (warning.source_file, warning.source_line) == (__file__, _line_of("log_warn"))


# --- with a (fake) runtime ------------------------------------------------------------------


def test_response_sender_decoupled(rt):
    request = server_request(decoupled=True, names=("OUT",))
    sender = request.get_response_sender()
    first = response("OUT", "NOT_REQUESTED")
    sender.send(first)
    sender.send(response("OUT"))
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [(c[1], c[3]) for c in rt.calls] == [("h1", 0), ("h1", 0), ("h1", 1)]
    assert [t.name() for t in first.output_tensors()] == ["OUT"]  # pruned to the request
    assert rt.calls[2][2] is None
    assert sender._is_closed()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"))
    assert str(e.value) == "Unable to send response. Response sender has been closed."


def test_response_sender_argument_errors(rt):
    sender = server_request(decoupled=True).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"), flags=4)
    assert str(e.value) == "Unable to send response. Unsupported flag provided."
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send()
    assert str(e.value) == (
        "Inference Response object must be provided when the response flags is set to zero."
    )
    with pytest.raises(TypeError):
        sender.send("not a response")
    assert rt.calls == []


def test_response_sender_non_decoupled(rt):
    sender = server_request(decoupled=False).get_response_sender()
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert str(e.value) == (
        "Unable to send response. Non-decoupled model cannot send complete final before "
        "sending a response."
    )
    sender.send(response("OUT"))
    with pytest.raises(pb_utils.TritonModelException) as e:
        sender.send(response("OUT"))
    assert str(e.value) == (
        "Unable to send response. Non-decoupled model cannot send more than one response."
    )
    sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    assert [c[3] for c in rt.calls] == [0, 1]


def test_stub_hooks_for_returned_responses(rt):
    request = server_request(decoupled=False)
    sender = request.get_response_sender()
    returned = response("OUT", "EXTRA")
    sender._update_state(returned, pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
    returned._prune_output_tensors(request.requested_output_names())
    assert sender._is_closed()
    assert [t.name() for t in returned.output_tensors()] == ["OUT"]
    other = server_request(decoupled=True).get_response_sender()
    other._close()
    with pytest.raises(pb_utils.TritonModelException, match="has been closed"):
        other.send(response("OUT"))
    assert rt.calls == []


def test_cancellation(rt):
    request = server_request()
    assert request.is_cancelled() is False
    rt.cancelled = True
    assert request.get_response_sender().is_cancelled() is True
    assert rt.calls == [("is_cancelled", "h1"), ("is_cancelled", "h1")]


def test_bls_exec(rt):
    request = pb_utils.InferenceRequest(
        model_name="other", inputs=[], requested_output_names=["OUT"], model_version=3
    )
    reply = request.exec()
    assert reply is rt.bls_response
    assert pb_utils.get_output_tensor_by_name(reply, "OUT").as_numpy()[0] == 1.0
    assert list(request.exec(decoupled=True)) == [rt.bls_response]
    assert [(c[0], c[1], c[2]) for c in rt.calls] == [
        ("bls_exec", request, False),
        ("bls_exec", request, True),
    ]


def test_bls_async_exec(rt):
    request = pb_utils.InferenceRequest(model_name="o", inputs=[], requested_output_names=["OUT"])

    async def execute():
        return await asyncio.gather(request.async_exec(), request.async_exec(decoupled=True))

    single, stream = asyncio.run(execute())
    assert single is rt.bls_response
    assert list(stream) == [rt.bls_response]
    with pytest.raises(RuntimeError, match="no running event loop"):
        request.async_exec()


def test_logger_with_runtime(rt):
    pb_utils.Logger.log("hello")
    pb_utils.Logger.log("bad", pb_utils.Logger.ERROR)
    pb_utils.Logger.log_info("i")
    pb_utils.Logger.log_verbose("v")
    levels = [c[1] for c in rt.calls]
    assert levels == [0, 2, 0, 3]
    assert pb_utils.Logger.LogLevel.WARNING == pb_utils.Logger.WARNING == 1
    _, _, message, filename, line = rt.calls[0]
    assert message == "hello" and filename == __file__ and line > 0


def test_metrics(rt):
    family = pb_utils.MetricFamily("latency", "help text", pb_utils.MetricFamily.COUNTER)
    metric = family.Metric(labels={"model": "m"})
    metric.increment(2)
    metric.increment(3)
    assert metric.value() == 5.0
    gauges = pb_utils.MetricFamily("g", "d", pb_utils.MetricFamily.GAUGE)
    gauge = gauges.Metric()
    gauge.set(7)
    assert gauge.value() == 7.0
    histogram = pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.HISTOGRAM)
    observed = histogram.Metric(labels={}, buckets=[1, 2.5])
    observed.observe(1.5)
    assert ("metric_family_new", "latency", "help text", 0) in rt.calls
    assert ("metric_new", "family:h", {}, [1.0, 2.5]) in rt.calls
    assert ("metric_update", observed._handle, "observe", 1.5) in rt.calls
    assert ("metric_new", "family:g", {}, None) in rt.calls


def test_metric_errors(rt):
    counter = pb_utils.MetricFamily("c", "d", pb_utils.MetricFamily.COUNTER)
    histogram = pb_utils.MetricFamily("h", "d", pb_utils.MetricFamily.HISTOGRAM)
    cases = [
        (lambda: counter.Metric(labels=[1]), "Labels must be a dictionary."),
        (lambda: histogram.Metric(buckets=(1,)), "Buckets must be a list."),
        (lambda: counter.Metric(buckets=[1.0]), "Unexpected buckets found."),
        (lambda: histogram.Metric(), "Missing required buckets."),
    ]
    for call, reason in cases:
        with pytest.raises(pb_utils.TritonModelException) as e:
            call()
        assert str(e.value) == "Failed to create metric. " + reason
    with pytest.raises(TypeError):
        pb_utils.MetricFamily("x", "d", 0)  # Triton wants a MetricFamily kind
    metric = counter.Metric()
    rt.fail_with = "negative increment"
    with pytest.raises(pb_utils.TritonModelException) as e:
        metric.increment(-1)
    assert str(e.value) == "Failed to increment metric value: negative increment"
    rt.fail_with = None


def test_deleting_a_family_deletes_its_metrics(rt):
    family = pb_utils.MetricFamily("f", "d", pb_utils.MetricFamily.GAUGE)
    metric = family.Metric(labels={"a": "b"})
    del family
    gc.collect()
    assert rt.calls[-2:] == [
        ("metric_delete", metric._handle), ("metric_family_delete", "family:f")
    ]
    with pytest.raises(pb_utils.TritonModelException) as e:
        metric.value()
    assert str(e.value) == (
        "Failed to get metric value: Invalid metric operation as the corresponding "
        "'MetricFamily' has been deleted. The 'MetricFamily' object should be deleted AFTER "
        "its corresponding 'Metric' objects have been deleted."
    )


def test_model_loading(rt):
    pb_utils.load_model("a")
    pb_utils.load_model("b", config='{"backend":"python"}', files={"file:1/model.py": b"x"})
    pb_utils.unload_model("a", unload_dependents=True)
    assert pb_utils.is_model_ready("a", "1") is True
    assert rt.calls == [
        ("load_model", "a", "", {}),
        ("load_model", "b", '{"backend":"python"}', {"file:1/model.py": b"x"}),
        ("unload_model", "a", True),
        ("is_model_ready", "a", "1"),
    ]
    rt.fail_with = "explicit model load / unload is not allowed if polling is enabled"
    for call, prefix in (
        (lambda: pb_utils.load_model("a"), "Failed to load model: "),
        (lambda: pb_utils.unload_model("a"), "Failed to unload model: "),
        (lambda: pb_utils.is_model_ready("a"), "Failed to check model readiness: "),
    ):
        with pytest.raises(pb_utils.TritonModelException) as e:
            call()
        assert str(e.value) == prefix + rt.fail_with


def test_get_model_dir(rt):
    assert pb_utils.get_model_dir() == "/models/m/1"

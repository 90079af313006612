"""Triton's custom_metrics example, smaller: a counter of requests, a gauge of the last VALUE
and a histogram of VALUEs, all labelled with the model; COUNT is the counter read back."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        labels = {"model": args["model_name"], "version": args["model_version"]}
        self.requests_family = pb_utils.MetricFamily(
            name="tritium_test_requests_total",
            description="Requests seen by the custom_metrics test model",
            kind=pb_utils.MetricFamily.COUNTER,
        )
        self.value_family = pb_utils.MetricFamily(
            name="tritium_test_last_value",
            description="The last VALUE",
            kind=pb_utils.MetricFamily.GAUGE,
        )
        self.histogram_family = pb_utils.MetricFamily(
            name="tritium_test_values",
            description="VALUEs seen",
            kind=pb_utils.MetricFamily.HISTOGRAM,
        )
        self.requests = self.requests_family.Metric(labels=labels)
        self.value = self.value_family.Metric(labels=labels)
        self.histogram = self.histogram_family.Metric(labels=labels, buckets=[1.0, 10.0, 100.0])

    def execute(self, requests):
        responses = []
        for request in requests:
            value = float(pb_utils.get_input_tensor_by_name(request, "VALUE").as_numpy()[0])
            self.requests.increment(1)
            self.value.set(value)
            self.histogram.observe(value)
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("COUNT", np.array([self.requests.value()], np.float64)),
            ]))
        return responses

"""The model RemoteTriton loads into the remote server: a Python-backend model (Triton's
`model.py` shape) that forwards each request to the bound function's own process over gRPC.

This file is not imported by Tritium: RemoteTriton sends its text as the model's `1/model.py`,
with `1/forward.json` naming where to forward ({"url", "model", "token"}); the remote server
runs it in its python backend (Tritium's or Triton's: it needs only numpy and tritonclient).
Ordinary models answer each request with the function's response; decoupled ones relay every
response of a gRPC stream, the last flagged final.
"""

import json
import os
import queue
from concurrent.futures import ThreadPoolExecutor

import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException, np_to_triton_dtype

import triton_python_backend_utils as pb_utils

_TOKEN_HEADER = "triton-grpc-protocol-triton-access-token"


class TritonPythonModel:
    def initialize(self, args):
        folder = os.path.join(args["model_repository"], args["model_version"])
        with open(os.path.join(folder, "forward.json")) as file:
            target = json.load(file)
        self.url = target["url"]
        self.model = target["model"]
        self.headers = {_TOKEN_HEADER: target["token"]}
        config = json.loads(args["model_config"])
        self.outputs = [output["name"] for output in config["output"]]
        self.decoupled = pb_utils.using_decoupled_model_transaction_policy(config)
        self.client = grpcclient.InferenceServerClient(self.url)
        self.pool = ThreadPoolExecutor(max_workers=max(config.get("max_batch_size", 1), 8))

    def execute(self, requests):
        if self.decoupled:
            for request in requests:
                self.pool.submit(self._relay, request)
            return None
        futures = [self.pool.submit(self._forward, request) for request in requests]
        return [future.result() for future in futures]

    def _inputs(self, request):
        tensors = []
        for tensor in request.inputs():
            array = tensor.as_numpy()
            given = grpcclient.InferInput(tensor.name(), list(array.shape),
                                          np_to_triton_dtype(array.dtype))
            given.set_data_from_numpy(array)
            tensors.append(given)
        return tensors

    def _response(self, result):
        return pb_utils.InferenceResponse(output_tensors=[
            pb_utils.Tensor(name, result.as_numpy(name)) for name in self.outputs
            if result.as_numpy(name) is not None])

    def _forward(self, request):
        try:
            result = self.client.infer(self.model, self._inputs(request),
                                       parameters=json.loads(request.parameters()) or None,
                                       headers=self.headers)
        except InferenceServerException as exc:
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(exc.message()))
        return self._response(result)

    def _relay(self, request):
        sender = request.get_response_sender()
        results: queue.SimpleQueue = queue.SimpleQueue()
        client = grpcclient.InferenceServerClient(self.url)
        try:
            client.start_stream(callback=lambda result, error: results.put((result, error)),
                                headers=self.headers)
            client.async_stream_infer(self.model, self._inputs(request),
                                      parameters=json.loads(request.parameters()) or None,
                                      enable_empty_final_response=True)
            while True:
                result, error = results.get()
                if error is not None:
                    sender.send(pb_utils.InferenceResponse(
                        error=pb_utils.TritonError(error.message())),
                        flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                    return
                response = result.get_response()
                final = response.parameters["triton_final_response"].bool_param
                flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
                if response.outputs:
                    sender.send(self._response(result), flags=flags)
                elif final:
                    sender.send(flags=flags)
                if final:
                    return
        finally:
            client.stop_stream()
            client.close()

    def finalize(self):
        self.pool.shutdown(wait=True)
        self.client.close()

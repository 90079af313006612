"""Each MODE fails in its own way:

0 answers OUT = 0; 1 answers with a TritonError; 2 answers with a NOT_FOUND TritonError;
3 raises in execute; 4 returns too many responses; 5 returns something not a list;
6 returns None without answering; 7 answers through the response sender (allowed).
"""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            mode = int(pb_utils.get_input_tensor_by_name(request, "MODE").as_numpy()[0])
            ok = pb_utils.InferenceResponse([pb_utils.Tensor("OUT", np.array([mode], np.int32))])
            if mode == 0:
                responses.append(ok)
            elif mode == 1:
                error = pb_utils.TritonError("mode 1 failed")
                responses.append(pb_utils.InferenceResponse(error=error))
            elif mode == 2:
                responses.append(pb_utils.InferenceResponse(
                    error=pb_utils.TritonError("no such thing", pb_utils.TritonError.NOT_FOUND)))
            elif mode == 3:
                raise ValueError("mode 3 raised")
            elif mode == 4:
                return [ok, ok]
            elif mode == 5:
                return (ok,)
            elif mode == 6:
                return None
            elif mode == 7:
                request.get_response_sender().send(
                    ok, flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
                return None
        return responses

"""Triton's bls_decoupled example: streams IN through the decoupled `square` model
(exec(decoupled=True), or async_exec when ASYNC) and sums what comes back. With SINGLE, it
calls `square` without decoupled=True, which must fail. SEEN counts every response the loop
got (the final empty one too), REPLAYED what a second loop over the same iterator gets (as
Triton's, it replays them all)."""

import numpy as np

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    async def execute(self, requests):
        responses = []
        for request in requests:
            value = pb_utils.get_input_tensor_by_name(request, "IN")
            use_async = bool(pb_utils.get_input_tensor_by_name(request, "ASYNC").as_numpy()[0])
            infer_request = pb_utils.InferenceRequest(
                model_name="square", requested_output_names=["OUT"], inputs=[value]
            )
            single = pb_utils.get_input_tensor_by_name(request, "SINGLE")
            if single is not None and single.as_numpy()[0]:
                infer_response = infer_request.exec()
                raise pb_utils.TritonModelException(infer_response.error().message())
            if use_async:
                infer_responses = await infer_request.async_exec(decoupled=True)
            else:
                infer_responses = infer_request.exec(decoupled=True)
            total = count = seen = 0
            for infer_response in infer_responses:
                seen += 1
                if infer_response.has_error():
                    raise pb_utils.TritonModelException(infer_response.error().message())
                if len(infer_response.output_tensors()) > 0:
                    out = pb_utils.get_output_tensor_by_name(infer_response, "OUT")
                    total += int(out.as_numpy()[0])
                    count += 1
            responses.append(pb_utils.InferenceResponse([
                pb_utils.Tensor("SUM", np.array([total], np.int32)),
                pb_utils.Tensor("COUNT", np.array([count], np.int32)),
                pb_utils.Tensor("SEEN", np.array([seen], np.int32)),
                pb_utils.Tensor("REPLAYED", np.array([sum(1 for _ in infer_responses)], np.int32)),
            ]))
        return responses

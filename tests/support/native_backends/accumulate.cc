// Test backend "accumulate" (sequence batcher, implicit state): OUTPUT = STATE_IN + INPUT,
// and the new state (TRITONBACKEND_StateNew "STATE_OUT" + StateUpdate) is that sum.
#include "common.h"

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request** requests, const uint32_t count) {
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Input* input = nullptr;
    TRITONBACKEND_Input* state_in = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT", &input));
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "STATE_IN", &state_in));
    float value = 0, previous = 0;
    RETURN_IF_ERROR(gather(input, 1, reinterpret_cast<char*>(&value)));
    RETURN_IF_ERROR(gather(state_in, 1, reinterpret_cast<char*>(&previous)));
    float sum = value + previous;
    const int64_t shape[1] = {1};
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    void* buffer = nullptr;
    TRITONBACKEND_State* state = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_StateNew(&state, request, "STATE_OUT", TRITONSERVER_TYPE_FP32, shape, 1));
    RETURN_IF_ERROR(TRITONBACKEND_StateBuffer(state, &buffer, 4, &type, &type_id));
    memcpy(buffer, &sum, 4);
    RETURN_IF_ERROR(TRITONBACKEND_StateUpdate(state));
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    TRITONBACKEND_Output* out = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUTPUT", TRITONSERVER_TYPE_FP32, shape, 1));
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id));
    memcpy(buffer, &sum, 4);
    RETURN_IF_ERROR(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr));
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

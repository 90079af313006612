// Test backend "accumulate" (sequence batcher, implicit state): OUTPUT = STATE_IN + INPUT,
// and the new state (TRITONBACKEND_StateNew "STATE_OUT" + StateUpdate) is that sum. With
// config parameter "device_state", the state buffer is asked for in GPU memory of device 0
// and, when given there, written with the CUDA runtime's cudaMemcpy. With "in_place" (for a
// state with use_same_buffer_for_input_output), the state buffer must be STATE_IN's own memory
// ("Input and output state are using different buffers." otherwise), the sum is written there
// and TRITONBACKEND_StateUpdate is not called. The state is made before anything is read, so a
// model without a state configuration fails with the server's error for that.
#include <dlfcn.h>

#include "common.h"

// Writes `sum` into the state buffer, in whatever memory it was given.
static TRITONSERVER_Error* write_state(void* buffer, TRITONSERVER_MemoryType type, float sum) {
  if (type != TRITONSERVER_MEMORY_GPU) {
    memcpy(buffer, &sum, 4);
    return nullptr;
  }
  // Looked up once a device buffer was given: only then has the server opened the runtime.
  using Memcpy = int (*)(void*, const void*, size_t, int);
  auto copy = reinterpret_cast<Memcpy>(dlsym(RTLD_DEFAULT, "cudaMemcpy"));
  if (copy == nullptr || copy(buffer, &sum, 4, 1 /* host to device */) != 0) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "cudaMemcpy to the state failed");
  }
  return nullptr;
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  const std::string config = model_config_json(model);
  const bool device_state = config.find("\"device_state\"") != std::string::npos;
  const bool in_place = config.find("\"in_place\"") != std::string::npos;
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    const int64_t shape[1] = {1};
    TRITONBACKEND_State* state = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_StateNew(&state, request, "STATE_OUT", TRITONSERVER_TYPE_FP32, shape, 1));
    TRITONBACKEND_Input* input = nullptr;
    TRITONBACKEND_Input* state_in = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT", &input));
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "STATE_IN", &state_in));
    float value = 0, previous = 0;
    RETURN_IF_ERROR(gather(input, 1, reinterpret_cast<char*>(&value)));
    RETURN_IF_ERROR(gather(state_in, 1, reinterpret_cast<char*>(&previous)));
    float sum = value + previous;
    TRITONSERVER_MemoryType type = device_state ? TRITONSERVER_MEMORY_GPU : TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    void* buffer = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_StateBuffer(state, &buffer, 4, &type, &type_id));
    if (in_place) {
      const void* state_in_buffer = nullptr;
      uint64_t size = 0;
      TRITONSERVER_MemoryType in_type;
      int64_t in_type_id = 0;
      RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(state_in, 0, &state_in_buffer, &size, &in_type, &in_type_id));
      if (state_in_buffer != buffer) {
        return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                     "Input and output state are using different buffers.");
      }
    }
    TRITONSERVER_BufferAttributes* attributes = nullptr;
    TRITONSERVER_MemoryType attributed = TRITONSERVER_MEMORY_CPU;
    RETURN_IF_ERROR(TRITONBACKEND_StateBufferAttributes(state, &attributes));
    RETURN_IF_ERROR(TRITONSERVER_BufferAttributesMemoryType(attributes, &attributed));
    if (attributed != type) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "state attributes disagree");
    }
    if (device_state && type != TRITONSERVER_MEMORY_GPU) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "no GPU state buffer");
    }
    RETURN_IF_ERROR(write_state(buffer, type, sum));
    if (!in_place) RETURN_IF_ERROR(TRITONBACKEND_StateUpdate(state));
    type = TRITONSERVER_MEMORY_CPU;  // the output: host memory
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

// Test backend "repeat" (decoupled): for input IN (INT32 [n]) sends n responses, OUT = IN[i]
// and IDX = i, from a thread of its own after Execute returned, then a flags-only FINAL.
// Requests are released inside Execute; the response factory outlives them.
#include <mutex>
#include <thread>
#include <vector>

#include "common.h"

struct InstanceState {
  std::mutex lock;
  std::vector<std::thread> threads;
};

static void send_all(TRITONBACKEND_ResponseFactory* factory, std::vector<int32_t> values) {
  for (size_t i = 0; i < values.size(); ++i) {
    TRITONBACKEND_Response* response = nullptr;
    if (TRITONBACKEND_ResponseNewFromFactory(&response, factory) != nullptr) break;
    const int64_t shape[1] = {1};
    TRITONBACKEND_Output* out = nullptr;
    void* buffer = nullptr;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    TRITONBACKEND_ResponseOutput(response, &out, "OUT", TRITONSERVER_TYPE_INT32, shape, 1);
    TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id);
    memcpy(buffer, &values[i], 4);
    TRITONBACKEND_ResponseOutput(response, &out, "IDX", TRITONSERVER_TYPE_UINT32, shape, 1);
    TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id);
    uint32_t idx = static_cast<uint32_t>(i);
    memcpy(buffer, &idx, 4);
    TRITONSERVER_Error* e = TRITONBACKEND_ResponseSend(response, 0, nullptr);
    if (e != nullptr) {
      TRITONSERVER_ErrorDelete(e);
      TRITONBACKEND_ResponseDelete(response);
    }
  }
  TRITONSERVER_Error* e =
      TRITONBACKEND_ResponseFactorySendFlags(factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
  TRITONBACKEND_ResponseFactoryDelete(factory);
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return TRITONBACKEND_ModelInstanceSetState(instance, new InstanceState());
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  void* vstate = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  auto* state = static_cast<InstanceState*>(vstate);
  for (auto& t : state->threads) t.join();
  delete state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  void* vstate = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceState(instance, &vstate));
  auto* state = static_cast<InstanceState*>(vstate);
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(requests[r], "IN", &input));
    uint64_t byte_size = 0;
    uint32_t buffers = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, nullptr, nullptr, nullptr,
                                                  &byte_size, &buffers));
    std::vector<int32_t> values(byte_size / 4);
    RETURN_IF_ERROR(gather(input, buffers, reinterpret_cast<char*>(values.data())));
    TRITONBACKEND_ResponseFactory* factory = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseFactoryNew(&factory, requests[r]));
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL));
    std::lock_guard<std::mutex> guard(state->lock);
    state->threads.emplace_back(send_all, factory, std::move(values));
  }
  return nullptr;
}

}  // extern "C"

// Test backend "iterate": an iterative model. INPUT0 (INT32 [1]) = n; each Execute counts one
// more run of the request (by its correlation id: under sequence_batching { iterative_sequence:
// true } every request has a sequence of its own) and releases it with
// TRITONSERVER_REQUEST_RELEASE_RESCHEDULE until it has run n times; then OUTPUT0 = runs (FINAL).
// When the server refuses to reschedule, the request is answered with the server's error.
// Every run is reported (TRITONBACKEND_ModelInstanceReportStatistics), as Triton counts them,
// after the request is released, as Triton's own iterative_sequence test backend reports.
#include <mutex>
#include <string>
#include <unordered_map>

#include "common.h"

static std::mutex g_lock;
static std::unordered_map<uint64_t, int32_t> g_runs;

static TRITONSERVER_Error* respond(TRITONBACKEND_Request* request, int32_t runs, TRITONSERVER_Error* error) {
  TRITONBACKEND_Response* response = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  if (error == nullptr) {
    const int64_t shape[1] = {1};
    TRITONBACKEND_Output* out = nullptr;
    void* buffer = nullptr;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUTPUT0", TRITONSERVER_TYPE_INT32, shape, 1));
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id));
    memcpy(buffer, &runs, 4);
  }
  TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
  if (error != nullptr) TRITONSERVER_ErrorDelete(error);
  RETURN_IF_ERROR(sent);
  return TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL);
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  const uint64_t start = now_ns();
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT0", &input));
    int32_t wanted = 0;
    RETURN_IF_ERROR(gather(input, 1, reinterpret_cast<char*>(&wanted)));
    uint64_t id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_RequestCorrelationId(request, &id));
    int32_t runs = 0;
    {
      std::lock_guard<std::mutex> guard(g_lock);
      runs = ++g_runs[id];
      if (runs >= wanted) g_runs.erase(id);
    }
    TRITONSERVER_Error* refused = nullptr;
    if (runs < wanted) {
      refused = TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE);
      if (refused != nullptr) {
        std::lock_guard<std::mutex> guard(g_lock);
        g_runs.erase(id);
      }
    }
    if (runs >= wanted || refused != nullptr) RETURN_IF_ERROR(respond(request, runs, refused));
    // Released (to run again, or answered): reported all the same.
    RETURN_IF_ERROR(
        TRITONBACKEND_ModelInstanceReportStatistics(instance, request, true, start, start, start, now_ns()));
  }
  return nullptr;
}

}  // extern "C"

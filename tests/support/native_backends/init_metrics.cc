// Test backend "init_metrics": calls the server's API from TRITONBACKEND_Initialize, before any
// model exists, as Triton's identity backend does (it makes its metric family there). Initialize
// makes a counter family and a gauge, labelled with the backend's name, that it sets to 1
// itself; each model gets a counter of that family, labelled with its name, counting requests.
// Execute answers OUTPUT0 = INPUT0 (INT32 [1]).
#include <cstring>

#include "common.h"

struct BackendState {
  TRITONSERVER_MetricFamily* requests = nullptr;
  TRITONSERVER_MetricFamily* initialized_family = nullptr;
  TRITONSERVER_Metric* initialized = nullptr;
};

static TRITONSERVER_Error* labelled(TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
                                    const char* key, const char* value) {
  TRITONSERVER_Parameter* label = TRITONSERVER_ParameterNew(key, TRITONSERVER_PARAMETER_STRING, value);
  const TRITONSERVER_Parameter* labels[1] = {label};
  TRITONSERVER_Error* error = TRITONSERVER_MetricNew(metric, family, labels, 1);
  TRITONSERVER_ParameterDelete(label);
  return error;
}

static BackendState* backend_state(TRITONBACKEND_Model* model) {
  TRITONBACKEND_Backend* backend = nullptr;
  void* state = nullptr;
  if (TRITONBACKEND_ModelBackend(model, &backend) != nullptr ||
      TRITONBACKEND_BackendState(backend, &state) != nullptr) {
    return nullptr;
  }
  return static_cast<BackendState*>(state);
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  RETURN_IF_ERROR(check_api_version());
  const char* name = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_BackendName(backend, &name));
  auto* state = new BackendState();
  RETURN_IF_ERROR(TRITONSERVER_MetricFamilyNew(&state->requests, TRITONSERVER_METRIC_KIND_COUNTER,
                                               "native_init_requests_total",
                                               "Requests seen, per model"));
  RETURN_IF_ERROR(TRITONSERVER_MetricFamilyNew(&state->initialized_family,
                                               TRITONSERVER_METRIC_KIND_GAUGE,
                                               "native_init_backend_initialized",
                                               "1 once TRITONBACKEND_Initialize ran"));
  RETURN_IF_ERROR(labelled(&state->initialized, state->initialized_family, "backend", name));
  RETURN_IF_ERROR(TRITONSERVER_MetricSet(state->initialized, 1));
  return TRITONBACKEND_BackendSetState(backend, state);
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  void* vstate = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_BackendState(backend, &vstate));
  auto* state = static_cast<BackendState*>(vstate);
  TRITONSERVER_MetricDelete(state->initialized);
  TRITONSERVER_MetricFamilyDelete(state->initialized_family);
  TRITONSERVER_MetricFamilyDelete(state->requests);
  delete state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  const char* name = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  BackendState* state = backend_state(model);
  if (state == nullptr) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "no backend state");
  }
  TRITONSERVER_Metric* requests = nullptr;
  RETURN_IF_ERROR(labelled(&requests, state->requests, "model", name));
  return TRITONBACKEND_ModelSetState(model, requests);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* requests = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &requests));
  TRITONSERVER_MetricDelete(static_cast<TRITONSERVER_Metric*>(requests));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* counter = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &counter));
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT0", &input));
    int32_t value = 0;
    RETURN_IF_ERROR(gather(input, 1, reinterpret_cast<char*>(&value)));
    RETURN_IF_ERROR(TRITONSERVER_MetricIncrement(static_cast<TRITONSERVER_Metric*>(counter), 1));
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    const int64_t shape[1] = {1};
    TRITONBACKEND_Output* out = nullptr;
    void* buffer = nullptr;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUTPUT0", TRITONSERVER_TYPE_INT32, shape, 1));
    RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id));
    memcpy(buffer, &value, 4);
    RETURN_IF_ERROR(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr));
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

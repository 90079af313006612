// Test backend "errors": answers INPUT0 (INT32 [1]) per request, by value:
//   v >= 0 : OUTPUT0 = v (FINAL), then (v == 7) a second send, refused by the server
//   v <  0 : an INVALID_ARG error response for that request only
//   v == -8: released without any response;  v == -9: neither answered nor released
// A model with config parameter "execute_error" fails Execute itself. Custom metrics: a
// counter of requests and a gauge of the last value, labelled with the model name.
#include <string>

#include "common.h"

struct ModelState {
  bool execute_error = false;
  TRITONSERVER_MetricFamily* counter_family = nullptr;
  TRITONSERVER_MetricFamily* gauge_family = nullptr;
  TRITONSERVER_Metric* counter = nullptr;
  TRITONSERVER_Metric* gauge = nullptr;
  std::string refused;  // the server's answer to a send after FINAL
};

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  auto* state = new ModelState();
  state->execute_error = model_config_json(model).find("\"execute_error\"") != std::string::npos;
  const char* name = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  RETURN_IF_ERROR(TRITONSERVER_MetricFamilyNew(&state->counter_family, TRITONSERVER_METRIC_KIND_COUNTER,
                                               "native_test_requests_total", "Requests seen by the errors backend"));
  RETURN_IF_ERROR(TRITONSERVER_MetricFamilyNew(&state->gauge_family, TRITONSERVER_METRIC_KIND_GAUGE,
                                               "native_test_last_value", "Last INPUT0 value"));
  TRITONSERVER_Parameter* label = TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, name);
  const TRITONSERVER_Parameter* labels[1] = {label};
  RETURN_IF_ERROR(TRITONSERVER_MetricNew(&state->counter, state->counter_family, labels, 1));
  RETURN_IF_ERROR(TRITONSERVER_MetricNew(&state->gauge, state->gauge_family, labels, 1));
  TRITONSERVER_ParameterDelete(label);
  return TRITONBACKEND_ModelSetState(model, state);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* vstate = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &vstate));
  auto* state = static_cast<ModelState*>(vstate);
  TRITONSERVER_MetricDelete(state->counter);
  TRITONSERVER_MetricDelete(state->gauge);
  TRITONSERVER_MetricFamilyDelete(state->counter_family);
  TRITONSERVER_MetricFamilyDelete(state->gauge_family);
  delete state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* vstate = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &vstate));
  auto* state = static_cast<ModelState*>(vstate);
  if (state->execute_error) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE, "execute failed on purpose");
  }
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT0", &input));
    int32_t value = 0;
    RETURN_IF_ERROR(gather(input, 1, reinterpret_cast<char*>(&value)));
    RETURN_IF_ERROR(TRITONSERVER_MetricIncrement(state->counter, 1));
    RETURN_IF_ERROR(TRITONSERVER_MetricSet(state->gauge, value));
    if (value == -9) continue;  // kept: neither answered nor released
    if (value == -8) {
      RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
      continue;
    }
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    TRITONBACKEND_Response* extra = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&extra, request));
    if (value < 0) {
      std::string message = "negative input " + std::to_string(value);
      TRITONSERVER_Error* error = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, message.c_str());
      TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
      TRITONSERVER_ErrorDelete(error);  // the sender keeps ownership of the error it sends
      RETURN_IF_ERROR(sent);
    } else {
      const int64_t shape[1] = {1};
      TRITONBACKEND_Output* out = nullptr;
      void* buffer = nullptr;
      TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
      int64_t type_id = 0;
      RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUTPUT0", TRITONSERVER_TYPE_INT32, shape, 1));
      RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id));
      memcpy(buffer, &value, 4);
      RETURN_IF_ERROR(TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr));
    }
    if (value == 7) {
      TRITONSERVER_Error* refused = TRITONBACKEND_ResponseSend(extra, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr);
      if (refused != nullptr) {
        log_info(std::string("second send refused: ") + TRITONSERVER_ErrorMessage(refused));
        TRITONSERVER_ErrorDelete(refused);
      } else {
        extra = nullptr;
      }
    }
    if (extra != nullptr) TRITONBACKEND_ResponseDelete(extra);
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

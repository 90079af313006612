// Test backend "identity": OUTPUTn = INPUTn for every datatype (BYTES too), one FINAL response
// per request, outputs only for what the client asked for (all when it asked for none).
// Prefers two CPU instances (GetBackendAttribute) and logs its --backend-config.
#include <vector>

#include "common.h"

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  RETURN_IF_ERROR(check_api_version());
  TRITONSERVER_Message* config = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_BackendConfig(backend, &config));
  const char* base = nullptr;
  size_t size = 0;
  RETURN_IF_ERROR(TRITONSERVER_MessageSerializeToJson(config, &base, &size));
  log_info("identity backend config: " + std::string(base, size));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend*, TRITONBACKEND_BackendAttribute* attributes) {
  RETURN_IF_ERROR(TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
      attributes, TRITONSERVER_INSTANCEGROUPKIND_CPU, 2, nullptr, 0));
  return TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(attributes, true);
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  std::string json = model_config_json(model);
  // Backends read these members unconditionally: the config must carry them.
  for (const char* key : {"\"max_batch_size\"", "\"input\"", "\"output\"", "\"optional\"", "\"dims\""}) {
    if (json.find(key) == std::string::npos) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG,
                                   (std::string("model config lacks ") + key).c_str());
    }
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  uint64_t exec_start = now_ns();
  uint64_t batch = 0;
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    uint64_t start = now_ns();
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    uint32_t input_count = 0, requested = 0;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &input_count));
    RETURN_IF_ERROR(TRITONBACKEND_RequestOutputCount(request, &requested));
    TRITONSERVER_Error* failure = nullptr;
    for (uint32_t i = 0; i < input_count && failure == nullptr; ++i) {
      TRITONBACKEND_Input* input = nullptr;
      RETURN_IF_ERROR(TRITONBACKEND_RequestInputByIndex(request, i, &input));
      InputInfo in;
      RETURN_IF_ERROR(read_input(input, &in));
      if (i == 0 && in.dims > 0) batch += in.shape[0];
      std::string output_name = "OUTPUT" + std::string(in.name).substr(5);
      bool wanted = requested == 0;
      for (uint32_t o = 0; o < requested && !wanted; ++o) {
        const char* out = nullptr;
        RETURN_IF_ERROR(TRITONBACKEND_RequestOutputName(request, o, &out));
        wanted = output_name == out;
      }
      if (!wanted) continue;
      TRITONBACKEND_Output* output = nullptr;
      failure = TRITONBACKEND_ResponseOutput(response, &output, output_name.c_str(), in.datatype,
                                             in.shape, in.dims);
      if (failure != nullptr) break;
      void* buffer = nullptr;
      TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
      int64_t type_id = 0;
      failure = TRITONBACKEND_OutputBuffer(output, &buffer, in.byte_size, &type, &type_id);
      if (failure == nullptr) failure = gather(input, in.buffers, static_cast<char*>(buffer));
    }
    uint64_t end = now_ns();
    RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceReportStatistics(
        instance, request, failure == nullptr, start, start, end, end));
    TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    if (failure != nullptr) TRITONSERVER_ErrorDelete(failure);
    RETURN_IF_ERROR(sent);
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  uint64_t exec_end = now_ns();
  return TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, batch, exec_start, exec_start,
                                                          exec_end, exec_end);
}

}  // extern "C"

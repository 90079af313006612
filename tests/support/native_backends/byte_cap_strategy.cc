// Test custom batching strategy: a batch takes requests while their inputs' bytes, summed, stay
// within the model's parameter MAX_BATCH_BYTES. It reads the model's configuration and each
// request's inputs through the backend API, as Triton's volume_batching example does. With
// parameter "refuse_model" set, ModelBatcherInitialize fails NOT_FOUND (the load must fail);
// ModelBatcherFinalize logs that it ran.
#include <string>

#include "common.h"

namespace {

struct Batcher {
  std::string model;
  uint64_t max_bytes;
};

// The string_value of parameter `key` in the model configuration's JSON ("" when absent).
std::string parameter(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  at = json.find("\"string_value\"", at);
  if (at == std::string::npos) return "";
  size_t open = json.find('"', json.find(':', at) + 1);
  size_t close = json.find('"', open + 1);
  return json.substr(open + 1, close - open - 1);
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelBatcherInitialize(TRITONBACKEND_Batcher** batcher,
                                                         TRITONBACKEND_Model* model) {
  const char* name = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelName(model, &name));
  std::string json = model_config_json(model);
  if (!parameter(json, "refuse_model").empty()) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_NOT_FOUND,
                                 ("byte cap strategy refuses model " + std::string(name)).c_str());
  }
  std::string cap = parameter(json, "MAX_BATCH_BYTES");
  if (cap.empty()) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "MAX_BATCH_BYTES is not set");
  }
  *batcher = reinterpret_cast<TRITONBACKEND_Batcher*>(new Batcher{name, std::stoull(cap)});
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBatcherFinalize(TRITONBACKEND_Batcher* batcher) {
  auto* b = reinterpret_cast<Batcher*>(batcher);
  log_info("byte cap strategy finalized for model " + b->model);
  delete b;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBatchInitialize(const TRITONBACKEND_Batcher* batcher,
                                                       void** userp) {
  *userp = new uint64_t(reinterpret_cast<const Batcher*>(batcher)->max_bytes);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBatchIncludeRequest(TRITONBACKEND_Request* request,
                                                           void* userp, bool* should_include) {
  *should_include = false;
  uint64_t* remaining = static_cast<uint64_t*>(userp);
  uint32_t count = 0;
  RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &count));
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInputByIndex(request, i, &input));
    InputInfo info;
    RETURN_IF_ERROR(read_input(input, &info));
    bytes += info.byte_size;
  }
  if (bytes <= *remaining) {
    *should_include = true;
    *remaining -= bytes;
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelBatchFinalize(void* userp) {
  delete static_cast<uint64_t*>(userp);
  return nullptr;
}

}  // extern "C"

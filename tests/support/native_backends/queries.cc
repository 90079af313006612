// Test backend "queries": asks the server (TRITONBACKEND_ModelServer) about the model named by
// MODEL (BYTES [1]) and answers ANSWER (BYTES [1]), a JSON object:
//   {"server_ready": bool, "model_ready": bool}, and when the model is ready also
//   "batch" / "transaction" (the property flags), "server" (ServerMetadata), "model"
//   (ServerModelMetadata), "config" (ServerModelConfig) and "index" (ServerModelIndex).
// MODEL "?request" describes the request itself instead: {"id", "flags", "correlation" (a
// number or a string), "parameters": {key: value}} (the test sends plain ASCII only).
#include <string>
#include <vector>

#include "common.h"

namespace {

TRITONSERVER_Error* take_json(TRITONSERVER_Message* message, std::string* out) {
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_Error* error = TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  if (error == nullptr) out->assign(base, size);
  TRITONSERVER_MessageDelete(message);
  return error;
}

TRITONSERVER_Error* answer(TRITONSERVER_Server* server, const std::string& model, std::string* out) {
  bool server_ready = false, model_ready = false;
  RETURN_IF_ERROR(TRITONSERVER_ServerIsReady(server, &server_ready));
  RETURN_IF_ERROR(TRITONSERVER_ServerModelIsReady(server, model.c_str(), -1, &model_ready));
  *out = std::string("{\"server_ready\": ") + (server_ready ? "true" : "false") +
         ", \"model_ready\": " + (model_ready ? "true" : "false");
  if (model_ready) {
    uint32_t batch = 0, transaction = 0;
    RETURN_IF_ERROR(TRITONSERVER_ServerModelBatchProperties(server, model.c_str(), -1, &batch, nullptr));
    RETURN_IF_ERROR(
        TRITONSERVER_ServerModelTransactionProperties(server, model.c_str(), -1, &transaction, nullptr));
    TRITONSERVER_Message* message = nullptr;
    std::string metadata, model_metadata, config, index;
    RETURN_IF_ERROR(TRITONSERVER_ServerMetadata(server, &message));
    RETURN_IF_ERROR(take_json(message, &metadata));
    RETURN_IF_ERROR(TRITONSERVER_ServerModelMetadata(server, model.c_str(), -1, &message));
    RETURN_IF_ERROR(take_json(message, &model_metadata));
    RETURN_IF_ERROR(TRITONSERVER_ServerModelConfig(server, model.c_str(), -1, 1, &message));
    RETURN_IF_ERROR(take_json(message, &config));
    RETURN_IF_ERROR(TRITONSERVER_ServerModelIndex(server, TRITONSERVER_INDEX_FLAG_READY, &message));
    RETURN_IF_ERROR(take_json(message, &index));
    *out += ", \"batch\": " + std::to_string(batch) + ", \"transaction\": " +
            std::to_string(transaction) + ", \"server\": " + metadata + ", \"model\": " +
            model_metadata + ", \"config\": " + config + ", \"index\": " + index;
  }
  *out += "}";
  return nullptr;
}

TRITONSERVER_Error* describe(TRITONBACKEND_Request* request, std::string* out) {
  const char* id = nullptr;
  uint32_t flags = 0, count = 0;
  RETURN_IF_ERROR(TRITONBACKEND_RequestId(request, &id));
  RETURN_IF_ERROR(TRITONBACKEND_RequestFlags(request, &flags));
  *out = std::string("{\"id\": \"") + id + "\", \"flags\": " + std::to_string(flags) +
         ", \"correlation\": ";
  uint64_t number = 0;
  TRITONSERVER_Error* not_a_number = TRITONBACKEND_RequestCorrelationId(request, &number);
  if (not_a_number == nullptr) {
    *out += std::to_string(number);
  } else {
    TRITONSERVER_ErrorDelete(not_a_number);
    const char* text = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestCorrelationIdString(request, &text));
    *out += std::string("\"") + text + "\"";
  }
  *out += ", \"parameters\": {";
  RETURN_IF_ERROR(TRITONBACKEND_RequestParameterCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* key = nullptr;
    TRITONSERVER_ParameterType type;
    const void* value = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestParameter(request, i, &key, &type, &value));
    *out += std::string(i > 0 ? ", " : "") + "\"" + key + "\": ";
    switch (type) {
      case TRITONSERVER_PARAMETER_STRING:
        *out += std::string("\"") + static_cast<const char*>(value) + "\"";
        break;
      case TRITONSERVER_PARAMETER_INT:
        *out += std::to_string(*static_cast<const int64_t*>(value));
        break;
      case TRITONSERVER_PARAMETER_BOOL:
        *out += *static_cast<const bool*>(value) ? "true" : "false";
        break;
      case TRITONSERVER_PARAMETER_DOUBLE:
        *out += std::to_string(*static_cast<const double*>(value));
        break;
      default:
        *out += "null";
    }
  }
  *out += "}}";
  return nullptr;
}

TRITONSERVER_Error* respond(TRITONBACKEND_Request* request, TRITONSERVER_Server* server) {
  TRITONBACKEND_Input* input = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "MODEL", &input));
  uint64_t byte_size = 0;
  uint32_t buffers = 0;
  RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, nullptr, nullptr, nullptr, &byte_size, &buffers));
  std::vector<char> raw(byte_size);
  RETURN_IF_ERROR(gather(input, buffers, raw.data()));
  uint32_t length = 0;
  if (byte_size < 4 || (memcpy(&length, raw.data(), 4), length > byte_size - 4)) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "MODEL must hold one string");
  }
  std::string text;
  const std::string model(raw.data() + 4, length);
  RETURN_IF_ERROR(model == "?request" ? describe(request, &text) : answer(server, model, &text));

  TRITONBACKEND_Response* response = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
  const int64_t shape[1] = {1};
  TRITONBACKEND_Output* output = nullptr;
  void* buffer = nullptr;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t type_id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, "ANSWER", TRITONSERVER_TYPE_BYTES, shape, 1));
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, 4 + text.size(), &type, &type_id));
  const uint32_t size = static_cast<uint32_t>(text.size());
  memcpy(buffer, &size, 4);
  memcpy(static_cast<char*>(buffer) + 4, text.data(), text.size());
  return TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, nullptr);
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  TRITONSERVER_Server* server = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelServer(model, &server));
  for (uint32_t r = 0; r < count; ++r) {
    TRITONSERVER_Error* error = respond(requests[r], server);
    if (error != nullptr) {  // this request's error; the others go on
      TRITONBACKEND_Response* response = nullptr;
      if (TRITONBACKEND_ResponseNew(&response, requests[r]) == nullptr) {
        TRITONSERVER_Error* sent =
            TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
        if (sent != nullptr) TRITONSERVER_ErrorDelete(sent);
      }
      TRITONSERVER_ErrorDelete(error);
    }
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

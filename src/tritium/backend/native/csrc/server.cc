// The server as a backend or a program sees it: readiness, metadata, configurations and the
// model index (each answered by the Python server as its endpoints answer), and model
// control (load with parameters, unload). Liveness and statistics are the server object's
// (server_object.cc).
#include "host.h"

extern "C" {

static TRITONSERVER_Error* server_int(int op, const char* fn, const char* name, int64_t version,
                                      const char* argument, int64_t* out) {
  if (!g_host_set) return no_host(fn);
  return g_host.server_call(op, name != nullptr ? name : "", version, argument, out, nullptr);
}
static TRITONSERVER_Error* server_message(int op, const char* fn, const char* name,
                                          int64_t version, TRITONSERVER_Message** out) {
  if (!g_host_set) return no_host(fn);
  int64_t unused = 0;
  return g_host.server_call(op, name != nullptr ? name : "", version, nullptr, &unused, out);
}

TRITONSERVER_Error* TRITONSERVER_ServerIsReady(TRITONSERVER_Server*, bool* ready) {
  int64_t v = 0;
  TRITONSERVER_Error* err = server_int(OP_SERVER_READY, "TRITONSERVER_ServerIsReady", "", -1, nullptr, &v);
  *ready = v != 0;
  return err;
}
TRITONSERVER_Error* TRITONSERVER_ServerModelIsReady(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, bool* ready) {
  int64_t v = 0;
  TRITONSERVER_Error* err =
      server_int(OP_MODEL_READY, "TRITONSERVER_ServerModelIsReady", model_name, model_version, nullptr, &v);
  *ready = v != 0;
  return err;
}
TRITONSERVER_Error* TRITONSERVER_ServerModelBatchProperties(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, uint32_t* flags,
    void** voidp) {
  int64_t v = 0;
  TRITONSERVER_Error* err = server_int(OP_MODEL_BATCH, "TRITONSERVER_ServerModelBatchProperties",
                                       model_name, model_version, nullptr, &v);
  *flags = static_cast<uint32_t>(v);
  if (voidp != nullptr) *voidp = nullptr;
  return err;
}
TRITONSERVER_Error* TRITONSERVER_ServerModelTransactionProperties(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, uint32_t* flags,
    void** voidp) {
  int64_t v = 0;
  TRITONSERVER_Error* err = server_int(OP_MODEL_TXN, "TRITONSERVER_ServerModelTransactionProperties",
                                       model_name, model_version, nullptr, &v);
  *flags = static_cast<uint32_t>(v);
  if (voidp != nullptr) *voidp = nullptr;
  return err;
}
TRITONSERVER_Error* TRITONSERVER_ServerMetadata(TRITONSERVER_Server*, TRITONSERVER_Message** m) {
  return server_message(OP_SERVER_METADATA, "TRITONSERVER_ServerMetadata", "", -1, m);
}
TRITONSERVER_Error* TRITONSERVER_ServerModelMetadata(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, TRITONSERVER_Message** m) {
  return server_message(OP_MODEL_METADATA, "TRITONSERVER_ServerModelMetadata", model_name, model_version, m);
}
TRITONSERVER_Error* TRITONSERVER_ServerModelConfig(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version,
    const uint32_t config_version, TRITONSERVER_Message** m) {
  if (config_version != 1) {
    return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                      "model configuration version " + std::to_string(config_version) +
                          " not supported, supported versions are: 1");
  }
  return server_message(OP_MODEL_CONFIG, "TRITONSERVER_ServerModelConfig", model_name, model_version, m);
}
TRITONSERVER_Error* TRITONSERVER_ServerModelIndex(TRITONSERVER_Server*, uint32_t flags, TRITONSERVER_Message** m) {
  return server_message(OP_MODEL_INDEX, "TRITONSERVER_ServerModelIndex", "", flags, m);
}
TRITONSERVER_Error* TRITONSERVER_ServerLoadModel(TRITONSERVER_Server*, const char* model_name) {
  int64_t unused = 0;
  return server_int(OP_LOAD, "TRITONSERVER_ServerLoadModel", model_name, -1, "{}", &unused);
}
TRITONSERVER_Error* TRITONSERVER_ServerLoadModelWithParameters(
    TRITONSERVER_Server*, const char* model_name, const TRITONSERVER_Parameter** parameters,
    const uint64_t parameter_count) {
  // Parameters go to the host as JSON: {"name": ["s"|"i"|"b"|"x", value]} (x: hex bytes).
  std::string json = "{";
  for (uint64_t i = 0; i < parameter_count; ++i) {
    const TRITONSERVER_Parameter* p = parameters[i];
    if (i > 0) json += ",";
    json += json_string(p->name) + ":";
    switch (p->type) {
      case TRITONSERVER_PARAMETER_STRING: json += "[\"s\"," + json_string(p->string_value) + "]"; break;
      case TRITONSERVER_PARAMETER_INT: json += "[\"i\"," + std::to_string(p->int_value) + "]"; break;
      case TRITONSERVER_PARAMETER_BOOL: json += std::string("[\"b\",") + (p->bool_value ? "true" : "false") + "]"; break;
      case TRITONSERVER_PARAMETER_DOUBLE: json += "[\"d\"," + std::to_string(p->double_value) + "]"; break;
      case TRITONSERVER_PARAMETER_BYTES:
        json += "[\"x\",\"" + hex_string(p->bytes, p->byte_size) + "\"]";
        break;
    }
  }
  json += "}";
  int64_t unused = 0;
  return server_int(OP_LOAD, "TRITONSERVER_ServerLoadModelWithParameters", model_name, -1,
                    json.c_str(), &unused);
}
TRITONSERVER_Error* TRITONSERVER_ServerUnloadModel(TRITONSERVER_Server*, const char* model_name) {
  int64_t unused = 0;
  return server_int(OP_UNLOAD, "TRITONSERVER_ServerUnloadModel", model_name, -1, nullptr, &unused);
}
TRITONSERVER_Error* TRITONSERVER_ServerUnloadModelAndDependents(TRITONSERVER_Server*, const char* model_name) {
  int64_t unused = 0;
  return server_int(OP_UNLOAD_DEPENDENTS, "TRITONSERVER_ServerUnloadModelAndDependents",
                    model_name, -1, nullptr, &unused);
}
}  // extern "C"

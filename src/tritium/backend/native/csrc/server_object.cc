// TRITONSERVER_ServerNew and the calls on the server a program made: stop and delete, the
// exit timeout, repository registration and polling, and the metrics. Each goes to the Python
// server through the host table's server_object callback (tritium.inprocess.c_api); the
// first ServerNew in a process that has no host yet starts Python (python_embedding.cc).
// Tritium runs one server per process: a second ServerNew before the first is deleted fails.
#include "server_object.h"

struct TRITONSERVER_Metrics {
  std::string text;
};

static TRITONSERVER_Error* object_call(int op, const char* fn, const char* name,
                                       int64_t version, const char* argument,
                                       int64_t* out_int = nullptr,
                                       TRITONSERVER_Message** out_message = nullptr) {
  if (!g_host_set) return no_host(fn);
  int64_t unused_int = 0;
  TRITONSERVER_Message* unused_message = nullptr;
  TRITONSERVER_Error* err = g_host.server_object(
      op, name != nullptr ? name : "", version, argument,
      out_int != nullptr ? out_int : &unused_int,
      out_message != nullptr ? out_message : &unused_message);
  delete unused_message;
  return err;
}

extern "C" {

TRITONSERVER_Error* TRITONSERVER_ServerNew(TRITONSERVER_Server** server, TRITONSERVER_ServerOptions* options) {
  TRITIUM_NOT_NULL(server, "TRITONSERVER_ServerNew");
  TRITIUM_NOT_NULL(options, "TRITONSERVER_ServerNew");
  if (TRITONSERVER_Error* err = ensure_python_server("TRITONSERVER_ServerNew")) return err;
  const std::string json = server_options_json(options);
  if (TRITONSERVER_Error* err =
          object_call(SOP_NEW, "TRITONSERVER_ServerNew", "", -1, json.c_str())) {
    return err;
  }
  *server = new TRITONSERVER_Server{0};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerDelete(TRITONSERVER_Server* server) {
  if (server == nullptr) return nullptr;
  // As Triton's: a server that fails to stop (models still unloading at the exit timeout) is
  // not deleted, and the error says so.
  if (TRITONSERVER_Error* err = object_call(SOP_DELETE, "TRITONSERVER_ServerDelete", "", -1, nullptr)) {
    return err;
  }
  delete server;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerStop(TRITONSERVER_Server* server) {
  if (server == nullptr) return nullptr;
  return object_call(SOP_STOP, "TRITONSERVER_ServerStop", "", -1, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_ServerSetExitTimeout(TRITONSERVER_Server* server, unsigned int timeout) {
  if (server == nullptr) return nullptr;
  return object_call(SOP_EXIT_TIMEOUT, "TRITONSERVER_ServerSetExitTimeout", "", timeout, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_ServerRegisterModelRepository(
    TRITONSERVER_Server*, const char* repository_path, const TRITONSERVER_Parameter** name_mapping,
    const uint32_t mapping_count) {
  TRITIUM_NOT_NULL(repository_path, "TRITONSERVER_ServerRegisterModelRepository");
  TRITIUM_REQUIRE(name_mapping != nullptr || mapping_count == 0, TRITONSERVER_ERROR_INVALID_ARG,
                  "model mappings are not provided while mapping count is non-zero");
  // [["subdirectory", "model name"], ...]: each parameter names a subdirectory and its model.
  std::string json = "[";
  std::vector<std::string> names;
  for (uint32_t i = 0; i < mapping_count; ++i) {
    const TRITONSERVER_Parameter* p = name_mapping[i];
    TRITIUM_NOT_NULL(p, "TRITONSERVER_ServerRegisterModelRepository");
    TRITIUM_REQUIRE(p->type == TRITONSERVER_PARAMETER_STRING, TRITONSERVER_ERROR_INVALID_ARG,
                    "Mapped model name must be a string, found another type for " + p->name);
    for (const auto& name : names) {
      TRITIUM_REQUIRE(name != p->string_value, TRITONSERVER_ERROR_INVALID_ARG,
                      "failed to register '" + std::string(repository_path) +
                          "', there is a conflicting mapping for '" + p->string_value + "'");
    }
    names.push_back(p->string_value);
    json += std::string(i > 0 ? "," : "") + "[" + json_string(p->name) + "," +
            json_string(p->string_value) + "]";
  }
  json += "]";
  return object_call(SOP_REGISTER, "TRITONSERVER_ServerRegisterModelRepository", repository_path,
                     -1, json.c_str());
}
TRITONSERVER_Error* TRITONSERVER_ServerUnregisterModelRepository(TRITONSERVER_Server*, const char* repository_path) {
  TRITIUM_NOT_NULL(repository_path, "TRITONSERVER_ServerUnregisterModelRepository");
  return object_call(SOP_UNREGISTER, "TRITONSERVER_ServerUnregisterModelRepository",
                     repository_path, -1, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_ServerPollModelRepository(TRITONSERVER_Server*) {
  return object_call(SOP_POLL, "TRITONSERVER_ServerPollModelRepository", "", -1, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_ServerIsLive(TRITONSERVER_Server*, bool* live) {
  TRITIUM_NOT_NULL(live, "TRITONSERVER_ServerIsLive");
  int64_t v = 0;
  TRITONSERVER_Error* err = object_call(SOP_LIVE, "TRITONSERVER_ServerIsLive", "", -1, nullptr, &v);
  *live = err == nullptr && v != 0;
  return err;
}
TRITONSERVER_Error* TRITONSERVER_ServerModelStatistics(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, TRITONSERVER_Message** m) {
  TRITIUM_NOT_NULL(m, "TRITONSERVER_ServerModelStatistics");
  return object_call(SOP_STATISTICS, "TRITONSERVER_ServerModelStatistics", model_name,
                     model_version, nullptr, nullptr, m);
}
TRITONSERVER_Error* TRITONSERVER_ServerMetrics(TRITONSERVER_Server*, TRITONSERVER_Metrics** metrics) {
  TRITIUM_NOT_NULL(metrics, "TRITONSERVER_ServerMetrics");
  TRITONSERVER_Message* text = nullptr;
  if (TRITONSERVER_Error* err =
          object_call(SOP_METRICS, "TRITONSERVER_ServerMetrics", "", -1, nullptr, nullptr, &text)) {
    return err;
  }
  *metrics = new TRITONSERVER_Metrics{text != nullptr ? text->json : ""};
  delete text;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics* metrics) {
  delete metrics;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(
    TRITONSERVER_Metrics* metrics, TRITONSERVER_MetricFormat format, const char** base,
    size_t* byte_size) {
  TRITIUM_NOT_NULL(metrics, "TRITONSERVER_MetricsFormatted");
  TRITIUM_REQUIRE(format == TRITONSERVER_METRIC_PROMETHEUS, TRITONSERVER_ERROR_INVALID_ARG,
                  "unknown metrics format '" + std::to_string(static_cast<int>(format)) + "'");
  *base = metrics->text.c_str();
  *byte_size = metrics->text.size();
  return nullptr;
}

}  // extern "C"

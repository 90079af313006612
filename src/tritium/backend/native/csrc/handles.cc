// TRITONBACKEND_Backend, _Model, _ModelInstance and _BackendAttribute: the handles a backend
// is given. Python creates them (tritium_*_new) with what the server knows; the model config
// and statistics go back to the server through the host table.
#include <algorithm>

#include "host.h"

// The one TRITONSERVER_Server a backend sees (TRITONBACKEND_ModelServer).
static TRITONSERVER_Server g_server{0};
static int g_memory_manager_tag;

TRITIUM_EXPORT TRITONBACKEND_Backend* tritium_backend_new(
    uint64_t token, const char* name, const char* location, const char* config_json) {
  auto* b = new TRITONBACKEND_Backend{};
  b->token = token;
  b->name = name;
  b->location = location;
  b->config.json = config_json;
  return b;
}
TRITIUM_EXPORT void tritium_backend_delete(TRITONBACKEND_Backend* b) { delete b; }
TRITIUM_EXPORT int tritium_backend_policy(TRITONBACKEND_Backend* b) { return b->policy; }

TRITIUM_EXPORT TRITONBACKEND_Model* tritium_model_new(
    uint64_t token, TRITONBACKEND_Backend* backend, const char* name, uint64_t version,
    const char* repository, int auto_complete) {
  return new TRITONBACKEND_Model{token, backend, name, repository, version, auto_complete != 0};
}
TRITIUM_EXPORT void tritium_model_add_state(TRITONBACKEND_Model* m, const char* output_name,
                                            const char* input_name, int same_buffer) {
  m->states.push_back({output_name, input_name, same_buffer != 0});
}
TRITIUM_EXPORT void tritium_model_delete(TRITONBACKEND_Model* m) { delete m; }

TRITIUM_EXPORT TRITONBACKEND_ModelInstance* tritium_instance_new(
    uint64_t token, TRITONBACKEND_Model* model, const char* name, int kind, int32_t device_id,
    int passive, const char* host_policy_json) {
  auto* i = new TRITONBACKEND_ModelInstance{};
  i->token = token;
  i->model = model;
  i->name = name;
  i->kind = static_cast<TRITONSERVER_InstanceGroupKind>(kind);
  i->device_id = device_id;
  i->passive = passive != 0;
  i->host_policy.json = host_policy_json;
  return i;
}
TRITIUM_EXPORT void tritium_instance_add_profile(TRITONBACKEND_ModelInstance* i, const char* p) {
  i->profiles.emplace_back(p);
}
TRITIUM_EXPORT void tritium_instance_delete(TRITONBACKEND_ModelInstance* i) { delete i; }

TRITIUM_EXPORT TRITONBACKEND_BackendAttribute* tritium_attribute_new() {
  return new TRITONBACKEND_BackendAttribute{};
}
TRITIUM_EXPORT uint32_t tritium_attribute_group_count(TRITONBACKEND_BackendAttribute* a) {
  return static_cast<uint32_t>(a->groups.size());
}
TRITIUM_EXPORT void tritium_attribute_group(
    TRITONBACKEND_BackendAttribute* a, uint32_t index, int* kind, uint64_t* count) {
  *kind = a->groups[index].kind;
  *count = a->groups[index].count;
}
TRITIUM_EXPORT int tritium_attribute_parallel(TRITONBACKEND_BackendAttribute* a) {
  return a->parallel_loading ? 1 : 0;
}
TRITIUM_EXPORT void tritium_attribute_delete(TRITONBACKEND_BackendAttribute* a) { delete a; }

extern "C" {

// ---- backend ----
TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name) {
  *name = backend->name.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendConfig(
    TRITONBACKEND_Backend* backend, TRITONSERVER_Message** backend_config) {
  // Owned by the server (the backend must not delete it): kept on the backend handle.
  *backend_config = &backend->config;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendExecutionPolicy(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ExecutionPolicy* policy) {
  *policy = backend->policy;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendSetExecutionPolicy(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ExecutionPolicy policy) {
  backend->policy = policy;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendArtifacts(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ArtifactType* artifact_type,
    const char** location) {
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = backend->location.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendMemoryManager(
    TRITONBACKEND_Backend*, TRITONBACKEND_MemoryManager** manager) {
  *manager = reinterpret_cast<TRITONBACKEND_MemoryManager*>(&g_memory_manager_tag);
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state) {
  *state = backend->state;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state) {
  backend->state = state;
  return nullptr;
}

// ---- backend attributes ----
TRITONSERVER_Error* TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute* a, const TRITONSERVER_InstanceGroupKind kind,
    const uint64_t count, const uint64_t*, const uint64_t) {
  a->groups.push_back({kind, count});
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute* a, bool enabled) {
  a->parallel_loading = enabled;
  return nullptr;
}

// ---- model ----
TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name) {
  *name = model->name.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version) {
  *version = model->version;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelRepository(
    TRITONBACKEND_Model* model, TRITONBACKEND_ArtifactType* artifact_type, const char** location) {
  *artifact_type = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  *location = model->repository.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelConfig(
    TRITONBACKEND_Model* model, const uint32_t config_version, TRITONSERVER_Message** config) {
  if (config_version != 1) {
    return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                      "model configuration version " + std::to_string(config_version) +
                          " not supported, supported versions are: 1");
  }
  if (!g_host_set) return no_host("TRITONBACKEND_ModelConfig");
  return g_host.model_config(model->token, config);
}
TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model, bool* ac) {
  *ac = model->auto_complete;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(
    TRITONBACKEND_Model* model, const uint32_t config_version, TRITONSERVER_Message* config) {
  if (config_version != 1) {
    return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                      "model configuration version " + std::to_string(config_version) +
                          " not supported, supported versions are: 1");
  }
  TRITIUM_NOT_NULL(config, "TRITONBACKEND_ModelSetConfig");
  if (!g_host_set) return no_host("TRITONBACKEND_ModelSetConfig");
  return g_host.model_set_config(model->token, config->json.c_str());
}
TRITONSERVER_Error* TRITONBACKEND_ModelServer(TRITONBACKEND_Model*, TRITONSERVER_Server** server) {
  *server = &g_server;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model, TRITONBACKEND_Backend** b) {
  *b = model->backend;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state) {
  *state = model->state;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state) {
  model->state = state;
  return nullptr;
}
// Hands a memory report (model or instance, by token) to the server's statistics.
static TRITONSERVER_Error* report_memory_usage(uint64_t token, TRITONSERVER_BufferAttributes** usage,
                                               uint32_t count, const char* function) {
  if (count > 0 && usage == nullptr) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string(function) + ": usage must not be null");
  }
  std::vector<int> types(count);
  std::vector<int64_t> ids(count);
  std::vector<uint64_t> sizes(count);
  for (uint32_t i = 0; i < count; ++i) {
    TRITIUM_REQUIRE(usage[i] != nullptr, TRITONSERVER_ERROR_INVALID_ARG,
                    std::string(function) + ": usage entry " + std::to_string(i) + " is null");
    types[i] = usage[i]->memory_type;
    ids[i] = usage[i]->memory_type_id;
    sizes[i] = usage[i]->byte_size;
  }
  if (!g_host_set) return no_host(function);
  return g_host.memory_usage(token, count, types.data(), ids.data(), sizes.data());
}

TRITONSERVER_Error* TRITONBACKEND_ModelReportMemoryUsage(
    TRITONBACKEND_Model* model, TRITONSERVER_BufferAttributes** usage, uint32_t usage_size) {
  TRITIUM_NOT_NULL(model, "TRITONBACKEND_ModelReportMemoryUsage");
  return report_memory_usage(model->token, usage, usage_size,
                             "TRITONBACKEND_ModelReportMemoryUsage");
}

// ---- model instance ----
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* i, const char** name) {
  *name = i->name.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(
    TRITONBACKEND_ModelInstance* i, TRITONSERVER_InstanceGroupKind* kind) {
  *kind = i->kind;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance* i, int32_t* id) {
  *id = i->device_id;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceHostPolicy(
    TRITONBACKEND_ModelInstance* i, TRITONSERVER_Message** host_policy) {
  *host_policy = &i->host_policy;  // owned by the server
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceIsPassive(TRITONBACKEND_ModelInstance* i, bool* p) {
  *p = i->passive;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileCount(TRITONBACKEND_ModelInstance* i, uint32_t* c) {
  *c = static_cast<uint32_t>(i->profiles.size());
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileName(
    TRITONBACKEND_ModelInstance* i, const uint32_t index, const char** name) {
  TRITIUM_REQUIRE_INDEX(index, i->profiles, "instance is configured with", "profiles");
  *name = i->profiles[index].c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceCount(
    TRITONBACKEND_ModelInstance*, uint32_t* count) {
  *count = 0;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceProperties(
    TRITONBACKEND_ModelInstance*, uint32_t index, const char**, int64_t*) {
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    "out of bounds index " + std::to_string(index) +
                        ": instance is configured with 0 secondary devices");
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(TRITONBACKEND_ModelInstance* i, TRITONBACKEND_Model** m) {
  *m = i->model;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* i, void** state) {
  *state = i->state;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* i, void* state) {
  i->state = state;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportMemoryUsage(
    TRITONBACKEND_ModelInstance* instance, TRITONSERVER_BufferAttributes** usage,
    uint32_t usage_size) {
  TRITIUM_NOT_NULL(instance, "TRITONBACKEND_ModelInstanceReportMemoryUsage");
  return report_memory_usage(instance->token, usage, usage_size,
                             "TRITONBACKEND_ModelInstanceReportMemoryUsage");
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, const bool success,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns) {
  TRITIUM_NOT_NULL(instance, "TRITONBACKEND_ModelInstanceReportStatistics");
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_ModelInstanceReportStatistics");
  if (!g_host_set) return no_host("TRITONBACKEND_ModelInstanceReportStatistics");
  const uint64_t ts[4] = {exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns};
  RequestState& state = *request->state;
  if (success && !state.final_sent.load() && !state.rescheduled) {  // goes with the FINAL one
    std::copy(ts, ts + 4, state.stamps);
    state.has_stamps = true;
    return nullptr;
  }
  g_host.statistics(instance->token, state.token, success ? 1 : 0, ts);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns,
    const uint64_t compute_end_ns, const uint64_t exec_end_ns) {
  TRITIUM_NOT_NULL(instance, "TRITONBACKEND_ModelInstanceReportBatchStatistics");
  if (!g_host_set) return no_host("TRITONBACKEND_ModelInstanceReportBatchStatistics");
  const uint64_t ts[4] = {exec_start_ns, compute_start_ns, compute_end_ns, exec_end_ns};
  g_host.batch_statistics(instance->token, batch_size, ts);
  return nullptr;
}

// ---- response statistics ----
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsNew(
    TRITONBACKEND_ModelInstanceResponseStatistics** response_statistics) {
  TRITIUM_NOT_NULL(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsNew");
  *response_statistics = new TRITONBACKEND_ModelInstanceResponseStatistics();
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsDelete(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics) {
  delete response_statistics;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    TRITONBACKEND_ModelInstance* model_instance) {
  TRITIUM_NOT_NULL(response_statistics,
                   "TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance");
  response_statistics->instance = model_instance;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    TRITONBACKEND_ResponseFactory* response_factory) {
  TRITIUM_NOT_NULL(response_statistics,
                   "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory");
  response_statistics->request =
      response_factory != nullptr ? response_factory->request : nullptr;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, uint64_t response_start) {
  TRITIUM_NOT_NULL(response_statistics,
                   "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart");
  response_statistics->response_start = response_start;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    uint64_t compute_output_start) {
  TRITIUM_NOT_NULL(response_statistics,
                   "TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart");
  response_statistics->compute_output_start = compute_output_start;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, uint64_t response_end) {
  TRITIUM_NOT_NULL(response_statistics,
                   "TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd");
  response_statistics->response_end = response_end;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetError(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    TRITONSERVER_Error* error) {
  TRITIUM_NOT_NULL(response_statistics, "TRITONBACKEND_ModelInstanceResponseStatisticsSetError");
  response_statistics->error = error;
  return nullptr;
}
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics) {
  static const char* fn = "TRITONBACKEND_ModelInstanceReportResponseStatistics";
  TRITIUM_NOT_NULL(response_statistics, fn);
  TRITIUM_REQUIRE(response_statistics->instance != nullptr, TRITONSERVER_ERROR_INVALID_ARG,
                  std::string(fn) + ": the model instance was not set");
  TRITIUM_REQUIRE(response_statistics->request != nullptr, TRITONSERVER_ERROR_INVALID_ARG,
                  std::string(fn) + ": the response factory was not set");
  if (!g_host_set) return no_host(fn);
  const uint64_t ts[3] = {response_statistics->response_start,
                          response_statistics->compute_output_start,
                          response_statistics->response_end};
  const uint64_t index = response_statistics->request->response_index.fetch_add(1);
  return g_host.response_statistics(response_statistics->instance->token, index,
                                    response_statistics->error, ts);
}

}  // extern "C"

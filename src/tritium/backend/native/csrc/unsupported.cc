// The part of Triton's exported API that Tritium does not implement. A backend binds every
// import when it is opened, so each function exists; calling one returns UNSUPPORTED naming
// it. (Generated once from include/tritium_triton_api.h; kept as plain source.)
#include "host.h"

extern "C" {

TRITONSERVER_Error* TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics* metrics) {
  return unsupported("TRITONSERVER_MetricsDelete");
}

TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(TRITONSERVER_Metrics* metrics, TRITONSERVER_MetricFormat format, const char** base, size_t* byte_size) {
  return unsupported("TRITONSERVER_MetricsFormatted");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceNew(TRITONSERVER_InferenceTrace** trace, TRITONSERVER_InferenceTraceLevel level, uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn, TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void* trace_userp) {
  return unsupported("TRITONSERVER_InferenceTraceNew");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceTensorNew(TRITONSERVER_InferenceTrace** trace, TRITONSERVER_InferenceTraceLevel level, uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn, TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_activity_fn, TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void* trace_userp) {
  return unsupported("TRITONSERVER_InferenceTraceTensorNew");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceReportActivity(TRITONSERVER_InferenceTrace* trace, uint64_t timestamp, const char* activity_name) {
  return unsupported("TRITONSERVER_InferenceTraceReportActivity");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceDelete(TRITONSERVER_InferenceTrace* trace) {
  return unsupported("TRITONSERVER_InferenceTraceDelete");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceId(TRITONSERVER_InferenceTrace* trace, uint64_t* id) {
  return unsupported("TRITONSERVER_InferenceTraceId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceParentId(TRITONSERVER_InferenceTrace* trace, uint64_t* parent_id) {
  return unsupported("TRITONSERVER_InferenceTraceParentId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelName(TRITONSERVER_InferenceTrace* trace, const char** model_name) {
  return unsupported("TRITONSERVER_InferenceTraceModelName");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelVersion(TRITONSERVER_InferenceTrace* trace, int64_t* model_version) {
  return unsupported("TRITONSERVER_InferenceTraceModelVersion");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceRequestId(TRITONSERVER_InferenceTrace* trace, const char** request_id) {
  return unsupported("TRITONSERVER_InferenceTraceRequestId");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceSpawnChildTrace(TRITONSERVER_InferenceTrace* trace, TRITONSERVER_InferenceTrace** child_trace) {
  return unsupported("TRITONSERVER_InferenceTraceSpawnChildTrace");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceSetContext(TRITONSERVER_InferenceTrace* trace, const char* trace_context) {
  return unsupported("TRITONSERVER_InferenceTraceSetContext");
}

TRITONSERVER_Error* TRITONSERVER_InferenceTraceContext(TRITONSERVER_InferenceTrace* trace, const char** trace_context) {
  return unsupported("TRITONSERVER_InferenceTraceContext");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsNew(TRITONSERVER_ServerOptions** options) {
  return unsupported("TRITONSERVER_ServerOptionsNew");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsDelete(TRITONSERVER_ServerOptions* options) {
  return unsupported("TRITONSERVER_ServerOptionsDelete");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetServerId(TRITONSERVER_ServerOptions* o, const char* server_id) {
  return unsupported("TRITONSERVER_ServerOptionsSetServerId");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelRepositoryPath(TRITONSERVER_ServerOptions* o, const char* path) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelRepositoryPath");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelControlMode(TRITONSERVER_ServerOptions* o, TRITONSERVER_ModelControlMode mode) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelControlMode");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStartupModel(TRITONSERVER_ServerOptions* o, const char* model_name) {
  return unsupported("TRITONSERVER_ServerOptionsSetStartupModel");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictModelConfig(TRITONSERVER_ServerOptions* o, bool strict) {
  return unsupported("TRITONSERVER_ServerOptionsSetStrictModelConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelConfigName(TRITONSERVER_ServerOptions* o, const char* name) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelConfigName");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRateLimiterMode(TRITONSERVER_ServerOptions* o, TRITONSERVER_RateLimitMode mode) {
  return unsupported("TRITONSERVER_ServerOptionsSetRateLimiterMode");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsAddRateLimiterResource(TRITONSERVER_ServerOptions* o, const char* resource_name, const size_t resource_count, const int device) {
  return unsupported("TRITONSERVER_ServerOptionsAddRateLimiterResource");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(TRITONSERVER_ServerOptions* o, uint64_t size) {
  return unsupported("TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(TRITONSERVER_ServerOptions* o, int gpu_device, uint64_t size) {
  return unsupported("TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(TRITONSERVER_ServerOptions* o, int gpu_device, size_t cuda_virtual_address_size) {
  return unsupported("TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetResponseCacheByteSize(TRITONSERVER_ServerOptions* o, uint64_t size) {
  return unsupported("TRITONSERVER_ServerOptionsSetResponseCacheByteSize");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheConfig(TRITONSERVER_ServerOptions* o, const char* cache_name, const char* config_json) {
  return unsupported("TRITONSERVER_ServerOptionsSetCacheConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheDirectory(TRITONSERVER_ServerOptions* o, const char* dir) {
  return unsupported("TRITONSERVER_ServerOptionsSetCacheDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability(TRITONSERVER_ServerOptions* o, double cc) {
  return unsupported("TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitOnError(TRITONSERVER_ServerOptions* o, bool exit) {
  return unsupported("TRITONSERVER_ServerOptionsSetExitOnError");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictReadiness(TRITONSERVER_ServerOptions* o, bool strict) {
  return unsupported("TRITONSERVER_ServerOptionsSetStrictReadiness");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitTimeout(TRITONSERVER_ServerOptions* o, unsigned int timeout) {
  return unsupported("TRITONSERVER_ServerOptionsSetExitTimeout");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(TRITONSERVER_ServerOptions* o, unsigned int n) {
  return unsupported("TRITONSERVER_ServerOptionsSetBufferManagerThreadCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadThreadCount(TRITONSERVER_ServerOptions* o, unsigned int n) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelLoadThreadCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadRetryCount(TRITONSERVER_ServerOptions* o, unsigned int n) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelLoadRetryCount");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelNamespacing(TRITONSERVER_ServerOptions* o, bool enable) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelNamespacing");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetEnablePeerAccess(TRITONSERVER_ServerOptions* o, bool enable) {
  return unsupported("TRITONSERVER_ServerOptionsSetEnablePeerAccess");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFile(TRITONSERVER_ServerOptions* o, const char* file) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogFile");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogInfo(TRITONSERVER_ServerOptions* o, bool log) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogInfo");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogWarn(TRITONSERVER_ServerOptions* o, bool log) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogWarn");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogError(TRITONSERVER_ServerOptions* o, bool log) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogError");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFormat(TRITONSERVER_ServerOptions* o, const TRITONSERVER_LogFormat format) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogFormat");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogVerbose(TRITONSERVER_ServerOptions* o, int level) {
  return unsupported("TRITONSERVER_ServerOptionsSetLogVerbose");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetrics(TRITONSERVER_ServerOptions* o, bool metrics) {
  return unsupported("TRITONSERVER_ServerOptionsSetMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetGpuMetrics(TRITONSERVER_ServerOptions* o, bool gpu_metrics) {
  return unsupported("TRITONSERVER_ServerOptionsSetGpuMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCpuMetrics(TRITONSERVER_ServerOptions* o, bool cpu_metrics) {
  return unsupported("TRITONSERVER_ServerOptionsSetCpuMetrics");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsInterval(TRITONSERVER_ServerOptions* o, uint64_t ms) {
  return unsupported("TRITONSERVER_ServerOptionsSetMetricsInterval");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendDirectory(TRITONSERVER_ServerOptions* o, const char* dir) {
  return unsupported("TRITONSERVER_ServerOptionsSetBackendDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRepoAgentDirectory(TRITONSERVER_ServerOptions* o, const char* dir) {
  return unsupported("TRITONSERVER_ServerOptionsSetRepoAgentDirectory");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(TRITONSERVER_ServerOptions* o, const TRITONSERVER_InstanceGroupKind kind, const int device_id, const double fraction) {
  return unsupported("TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendConfig(TRITONSERVER_ServerOptions* o, const char* backend_name, const char* setting, const char* value) {
  return unsupported("TRITONSERVER_ServerOptionsSetBackendConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetHostPolicy(TRITONSERVER_ServerOptions* o, const char* policy_name, const char* setting, const char* value) {
  return unsupported("TRITONSERVER_ServerOptionsSetHostPolicy");
}

TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsConfig(TRITONSERVER_ServerOptions* o, const char* name, const char* setting, const char* value) {
  return unsupported("TRITONSERVER_ServerOptionsSetMetricsConfig");
}

TRITONSERVER_Error* TRITONSERVER_ServerNew(TRITONSERVER_Server** server, TRITONSERVER_ServerOptions* options) {
  return unsupported("TRITONSERVER_ServerNew");
}

TRITONSERVER_Error* TRITONSERVER_ServerDelete(TRITONSERVER_Server* server) {
  return unsupported("TRITONSERVER_ServerDelete");
}

TRITONSERVER_Error* TRITONSERVER_ServerStop(TRITONSERVER_Server* server) {
  return unsupported("TRITONSERVER_ServerStop");
}

TRITONSERVER_Error* TRITONSERVER_ServerSetExitTimeout(TRITONSERVER_Server* server, unsigned int timeout) {
  return unsupported("TRITONSERVER_ServerSetExitTimeout");
}

TRITONSERVER_Error* TRITONSERVER_ServerRegisterModelRepository(TRITONSERVER_Server* server, const char* repository_path, const TRITONSERVER_Parameter** name_mapping, const uint32_t mapping_count) {
  return unsupported("TRITONSERVER_ServerRegisterModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerUnregisterModelRepository(TRITONSERVER_Server* server, const char* repository_path) {
  return unsupported("TRITONSERVER_ServerUnregisterModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerPollModelRepository(TRITONSERVER_Server* server) {
  return unsupported("TRITONSERVER_ServerPollModelRepository");
}

TRITONSERVER_Error* TRITONSERVER_ServerMetrics(TRITONSERVER_Server* server, TRITONSERVER_Metrics** metrics) {
  return unsupported("TRITONSERVER_ServerMetrics");
}

TRITONSERVER_Error* TRITONREPOAGENT_ApiVersion(uint32_t* major, uint32_t* minor) {
  return unsupported("TRITONREPOAGENT_ApiVersion");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocation(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, TRITONREPOAGENT_ArtifactType* artifact_type, const char** location) {
  return unsupported("TRITONREPOAGENT_ModelRepositoryLocation");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationAcquire(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const TRITONREPOAGENT_ArtifactType artifact_type, const char** location) {
  return unsupported("TRITONREPOAGENT_ModelRepositoryLocationAcquire");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationRelease(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const char* location) {
  return unsupported("TRITONREPOAGENT_ModelRepositoryLocationRelease");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryUpdate(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const TRITONREPOAGENT_ArtifactType artifact_type, const char* location) {
  return unsupported("TRITONREPOAGENT_ModelRepositoryUpdate");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelParameterCount(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, uint32_t* count) {
  return unsupported("TRITONREPOAGENT_ModelParameterCount");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelParameter(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const uint32_t index, const char** parameter_name, const char** parameter_value) {
  return unsupported("TRITONREPOAGENT_ModelParameter");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelConfig(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const uint32_t config_version, TRITONSERVER_Message** model_config) {
  return unsupported("TRITONREPOAGENT_ModelConfig");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelState(TRITONREPOAGENT_AgentModel* model, void** state) {
  return unsupported("TRITONREPOAGENT_ModelState");
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelSetState(TRITONREPOAGENT_AgentModel* model, void* state) {
  return unsupported("TRITONREPOAGENT_ModelSetState");
}

TRITONSERVER_Error* TRITONREPOAGENT_State(TRITONREPOAGENT_Agent* agent, void** state) {
  return unsupported("TRITONREPOAGENT_State");
}

TRITONSERVER_Error* TRITONREPOAGENT_SetState(TRITONREPOAGENT_Agent* agent, void* state) {
  return unsupported("TRITONREPOAGENT_SetState");
}

TRITONSERVER_Error* TRITONCACHE_ApiVersion(uint32_t* major, uint32_t* minor) {
  return unsupported("TRITONCACHE_ApiVersion");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntryBufferCount(TRITONCACHE_CacheEntry* entry, size_t* count) {
  return unsupported("TRITONCACHE_CacheEntryBufferCount");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntryAddBuffer(TRITONCACHE_CacheEntry* entry, void* base, TRITONSERVER_BufferAttributes* buffer_attributes) {
  return unsupported("TRITONCACHE_CacheEntryAddBuffer");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntryGetBuffer(TRITONCACHE_CacheEntry* entry, size_t index, void** base, TRITONSERVER_BufferAttributes* buffer_attributes) {
  return unsupported("TRITONCACHE_CacheEntryGetBuffer");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntrySetBuffer(TRITONCACHE_CacheEntry* entry, size_t index, void* new_base, TRITONSERVER_BufferAttributes* buffer_attributes) {
  return unsupported("TRITONCACHE_CacheEntrySetBuffer");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntryNew(TRITONCACHE_CacheEntry** entry) {
  return unsupported("TRITONCACHE_CacheEntryNew");
}

TRITONSERVER_Error* TRITONCACHE_CacheEntryDelete(TRITONCACHE_CacheEntry* entry) {
  return unsupported("TRITONCACHE_CacheEntryDelete");
}

TRITONSERVER_Error* TRITONCACHE_Copy(TRITONCACHE_Allocator* allocator, TRITONCACHE_CacheEntry* entry) {
  return unsupported("TRITONCACHE_Copy");
}

}  // extern "C"

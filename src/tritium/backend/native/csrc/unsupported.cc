// The part of Triton's exported API that Tritium does not implement. A backend binds every
// import when it is opened, so each function exists; calling one returns UNSUPPORTED naming
// it. (Generated once from include/tritium_triton_api.h; kept as plain source.)
#include "host.h"

extern "C" {

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

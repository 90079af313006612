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

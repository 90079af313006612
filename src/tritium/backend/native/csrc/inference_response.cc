// The response side of a BLS request: the backend's response allocator and the
// TRITONSERVER_InferenceResponse it reads its outputs from.
#include "inference.h"

extern "C" {

// ---- response allocator ----
TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorNew(
    TRITONSERVER_ResponseAllocator** allocator, TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn,
    TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn,
    TRITONSERVER_ResponseAllocatorStartFn_t start_fn) {
  *allocator = new TRITONSERVER_ResponseAllocator{alloc_fn, release_fn, start_fn};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(
    TRITONSERVER_ResponseAllocator* allocator, TRITONSERVER_ResponseAllocatorBufferAttributesFn_t fn) {
  allocator->attributes_fn = fn;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetQueryFunction(
    TRITONSERVER_ResponseAllocator* allocator, TRITONSERVER_ResponseAllocatorQueryFn_t fn) {
  allocator->query_fn = fn;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorDelete(TRITONSERVER_ResponseAllocator* a) {
  delete a;
  return nullptr;
}

// ---- inference response ----
TRITONSERVER_Error* TRITONSERVER_InferenceResponseDelete(TRITONSERVER_InferenceResponse* resp) {
  if (resp == nullptr) return nullptr;
  for (const auto& o : resp->outputs) {
    if (o.base != nullptr && resp->allocator != nullptr && resp->allocator->release_fn != nullptr) {
      TRITONSERVER_Error* err = resp->allocator->release_fn(
          resp->allocator, o.base, o.userp, o.byte_size, o.memory_type, o.memory_type_id);
      if (err != nullptr) TRITONSERVER_ErrorDelete(err);
    }
  }
  delete resp->error;
  delete resp;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseError(TRITONSERVER_InferenceResponse* resp) {
  // A new error on each call, as Triton's: its header says the response owns it, but callers
  // (Triton's python backend, its own tests) delete it, or read it after the response is gone.
  if (resp->error == nullptr) return nullptr;
  return make_error(resp->error->code, resp->error->message);
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseModel(
    TRITONSERVER_InferenceResponse* resp, const char** model_name, int64_t* model_version) {
  *model_name = resp->model.c_str();
  *model_version = resp->version;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseId(TRITONSERVER_InferenceResponse* resp, const char** id) {
  *id = resp->id.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameterCount(TRITONSERVER_InferenceResponse* resp, uint32_t* c) {
  *c = static_cast<uint32_t>(resp->parameters.size());
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameter(
    TRITONSERVER_InferenceResponse* resp, const uint32_t index, const char** name,
    TRITONSERVER_ParameterType* type, const void** vvalue) {
  TRITIUM_REQUIRE_INDEX(index, resp->parameters, "response has", "parameters");
  const Parameter& p = resp->parameters[index];
  *name = p.key.c_str();
  *type = p.type;
  *vvalue = p.value();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputCount(TRITONSERVER_InferenceResponse* resp, uint32_t* c) {
  *c = static_cast<uint32_t>(resp->outputs.size());
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutput(
    TRITONSERVER_InferenceResponse* resp, const uint32_t index, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape, uint64_t* dim_count,
    const void** base, size_t* byte_size, TRITONSERVER_MemoryType* memory_type,
    int64_t* memory_type_id, void** userp) {
  TRITIUM_REQUIRE_INDEX(index, resp->outputs, "response has", "outputs");
  const ServerOutput& o = resp->outputs[index];
  *name = o.name.c_str();
  *datatype = o.datatype;
  *shape = o.shape.data();
  *dim_count = o.shape.size();
  *base = o.base;
  *byte_size = o.byte_size;
  *memory_type = o.memory_type;
  *memory_type_id = o.memory_type_id;
  *userp = o.userp;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputClassificationLabel(
    TRITONSERVER_InferenceResponse*, const uint32_t, const size_t, const char** label) {
  *label = nullptr;  // Tritium does not hand classification labels to BLS callers
  return nullptr;
}
}  // extern "C"

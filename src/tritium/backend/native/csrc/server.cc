// The TRITONSERVER_* calls a backend makes into the server: BLS requests
// (TRITONSERVER_InferenceRequest* + ServerInferAsync), their responses and allocators, model
// queries and model control, and custom metrics. The objects live here; each server action
// goes to the host (Python), which routes the request through Tritium's own server.
#include <cstdio>
#include <cstdlib>

#include "cuda_runtime.h"
#include "host.h"

struct ServerInput {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<Buffer> buffers;
};

struct TRITONSERVER_ResponseAllocator {
  TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn;
  TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn;
  TRITONSERVER_ResponseAllocatorStartFn_t start_fn;
  TRITONSERVER_ResponseAllocatorQueryFn_t query_fn = nullptr;
  TRITONSERVER_ResponseAllocatorBufferAttributesFn_t attributes_fn = nullptr;
};

struct TRITONSERVER_InferenceRequest {
  std::string model;
  int64_t version;
  std::string id, correlation_id_string;
  uint64_t correlation_id = 0;
  bool correlation_is_string = false;
  uint32_t flags = 0;
  uint64_t priority = 0, timeout_us = 0;
  std::deque<ServerInput> inputs;
  std::vector<std::string> requested_outputs;
  std::vector<Parameter> parameters;
  TRITONSERVER_InferenceRequestReleaseFn_t release_fn = nullptr;
  void* release_userp = nullptr;
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  void* allocator_userp = nullptr;
  TRITONSERVER_InferenceResponseCompleteFn_t response_fn = nullptr;
  void* response_userp = nullptr;
  std::atomic<bool> cancelled{false};
};

struct ServerOutput {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  void* base = nullptr;
  size_t byte_size = 0;
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  int64_t memory_type_id = 0;
  void* userp = nullptr;
};

struct TRITONSERVER_InferenceResponse {
  TRITONSERVER_ResponseAllocator* allocator;
  std::string model, id;
  int64_t version;
  TRITONSERVER_Error* error = nullptr;
  std::deque<ServerOutput> outputs;
  std::vector<Parameter> parameters;
};

struct TRITONSERVER_MetricFamily {
  uint64_t handle;
  TRITONSERVER_MetricKind kind;
  std::atomic<int> metrics{0};
};

struct TRITONSERVER_Metric {
  uint64_t handle;
  TRITONSERVER_MetricFamily* family;
};

struct TRITONSERVER_MetricArgs {
  bool histogram = false;
  std::vector<double> buckets;
};

static std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// ---- what Python calls to read a BLS request and answer it ----
TRITIUM_EXPORT void tritium_sreq_info(
    TRITONSERVER_InferenceRequest* r, const char** model, int64_t* version, const char** id,
    uint32_t* flags, uint64_t* correlation_id, const char** correlation_id_string,
    uint64_t* priority, uint64_t* timeout_us, uint32_t* inputs, uint32_t* outputs,
    uint32_t* parameters) {
  *model = r->model.c_str();
  *version = r->version;
  *id = r->id.c_str();
  *flags = r->flags;
  *correlation_id = r->correlation_id;
  *correlation_id_string = r->correlation_is_string ? r->correlation_id_string.c_str() : nullptr;
  *priority = r->priority;
  *timeout_us = r->timeout_us;
  *inputs = static_cast<uint32_t>(r->inputs.size());
  *outputs = static_cast<uint32_t>(r->requested_outputs.size());
  *parameters = static_cast<uint32_t>(r->parameters.size());
}

TRITIUM_EXPORT void tritium_sreq_input(
    TRITONSERVER_InferenceRequest* r, uint32_t index, const char** name, int* datatype,
    const int64_t** shape, uint32_t* dims, uint64_t* byte_size) {
  const ServerInput& in = r->inputs[index];
  *name = in.name.c_str();
  *datatype = in.datatype;
  *shape = in.shape.data();
  *dims = static_cast<uint32_t>(in.shape.size());
  uint64_t total = 0;
  for (const auto& b : in.buffers) total += b.byte_size;
  *byte_size = total;
}

// Gathers an input's buffers into `destination` (the server's own copy of the tensor); a
// buffer in device memory is copied from the device.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_sreq_input_copy(
    TRITONSERVER_InferenceRequest* r, uint32_t index, void* destination) {
  char* out = static_cast<char*>(destination);
  for (const auto& b : r->inputs[index].buffers) {
    if (b.attributes.memory_type == TRITONSERVER_MEMORY_GPU) {
      TRITONSERVER_Error* err = cuda_runtime::copy(
          b.attributes.memory_type_id, out, b.base, b.byte_size, cuda_runtime::kDeviceToHost,
          ("input '" + r->inputs[index].name + "'").c_str());
      if (err != nullptr) return err;
    } else {
      memcpy(out, b.base, b.byte_size);
    }
    out += b.byte_size;
  }
  return nullptr;
}

TRITIUM_EXPORT const char* tritium_sreq_output(TRITONSERVER_InferenceRequest* r, uint32_t i) {
  return r->requested_outputs[i].c_str();
}

TRITIUM_EXPORT void tritium_sreq_parameter(
    TRITONSERVER_InferenceRequest* r, uint32_t index, const char** key, int* type,
    const char** string_value, int64_t* int_value, double* double_value) {
  const Parameter& p = r->parameters[index];
  *key = p.key.c_str();
  *type = p.type;
  *string_value = p.string_value.c_str();
  *int_value = p.type == TRITONSERVER_PARAMETER_BOOL ? (p.bool_value ? 1 : 0) : p.int_value;
  *double_value = p.double_value;
}

TRITIUM_EXPORT TRITONSERVER_InferenceResponse* tritium_sresp_new(
    TRITONSERVER_InferenceRequest* r, const char* model, int64_t version, const char* id,
    int error_code, const char* error_message) {
  auto* resp = new TRITONSERVER_InferenceResponse{};
  resp->allocator = r->allocator;
  resp->model = model;
  resp->version = version;
  resp->id = id;
  if (error_code >= 0) {
    resp->error = make_error(static_cast<TRITONSERVER_Error_Code>(error_code), error_message);
  }
  if (r->allocator != nullptr && r->allocator->start_fn != nullptr) {
    TRITONSERVER_Error* err = r->allocator->start_fn(r->allocator, r->allocator_userp);
    if (err != nullptr) TRITONSERVER_ErrorDelete(err);
  }
  return resp;
}

// Asks the request's allocator for the output's buffer and copies the data in.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_sresp_add_output(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceResponse* resp, const char* name,
    int datatype, const int64_t* shape, uint32_t dims, const void* data, uint64_t byte_size) {
  resp->outputs.emplace_back();
  ServerOutput& o = resp->outputs.back();
  o.name = name;
  o.datatype = static_cast<TRITONSERVER_DataType>(datatype);
  o.shape.assign(shape, shape + dims);
  o.byte_size = byte_size;
  if (byte_size == 0) return nullptr;
  if (r->allocator == nullptr) {
    resp->outputs.pop_back();
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      "no response allocator set for request to model '" + r->model + "'");
  }
  void* buffer = nullptr;
  TRITONSERVER_Error* err = r->allocator->alloc_fn(
      r->allocator, name, byte_size, TRITONSERVER_MEMORY_CPU, 0, r->allocator_userp, &buffer,
      &o.userp, &o.memory_type, &o.memory_type_id);
  if (err == nullptr && buffer == nullptr) {
    err = make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                     std::string("the allocator gave no buffer for output '") + name + "'");
  }
  if (err == nullptr && o.memory_type == TRITONSERVER_MEMORY_GPU) {
    err = cuda_runtime::copy(o.memory_type_id, buffer, data, byte_size,
                             cuda_runtime::kHostToDevice,
                             (std::string("output '") + name + "'").c_str());
  } else if (err == nullptr) {
    memcpy(buffer, data, byte_size);
  }
  if (err != nullptr) {
    if (buffer != nullptr && r->allocator->release_fn != nullptr) {
      TRITONSERVER_Error* released = r->allocator->release_fn(
          r->allocator, buffer, o.userp, byte_size, o.memory_type, o.memory_type_id);
      if (released != nullptr) TRITONSERVER_ErrorDelete(released);
    }
    resp->outputs.pop_back();
    return err;
  }
  o.base = buffer;
  return nullptr;
}

TRITIUM_EXPORT void tritium_sresp_add_parameter(
    TRITONSERVER_InferenceResponse* resp, const char* key, int type, const char* string_value,
    int64_t int_value, double double_value) {
  resp->parameters.push_back(
      Parameter::of_host(key, type, string_value, int_value, double_value));
}

TRITIUM_EXPORT void tritium_sreq_complete(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceResponse* resp, uint32_t flags) {
  if (r->response_fn != nullptr) {
    r->response_fn(resp, flags, r->response_userp);
  } else {
    TRITONSERVER_InferenceResponseDelete(resp);
  }
}

TRITIUM_EXPORT void tritium_sreq_release(TRITONSERVER_InferenceRequest* r) {
  if (r->release_fn != nullptr) {
    r->release_fn(r, TRITONSERVER_REQUEST_RELEASE_ALL, r->release_userp);
  }
}

TRITIUM_EXPORT void tritium_sreq_cancel(TRITONSERVER_InferenceRequest* r, int* cancelled) {
  *cancelled = r->cancelled.load() ? 1 : 0;
}

static TRITONSERVER_Error* input_named(TRITONSERVER_InferenceRequest* r, const char* name,
                                       ServerInput** input) {
  for (auto& in : r->inputs) {
    if (in.name == name) {
      *input = &in;
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    "input '" + std::string(name) + "' does not exist in request");
}

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

// ---- inference request (BLS) ----
TRITONSERVER_Error* TRITONSERVER_InferenceRequestNew(
    TRITONSERVER_InferenceRequest** request, TRITONSERVER_Server*, const char* model_name,
    const int64_t model_version) {
  TRITIUM_NOT_NULL(model_name, "TRITONSERVER_InferenceRequestNew");
  auto* r = new TRITONSERVER_InferenceRequest{};
  r->model = model_name;
  r->version = model_version;
  *request = r;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestDelete(TRITONSERVER_InferenceRequest* r) {
  delete r;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestId(TRITONSERVER_InferenceRequest* r, const char** id) {
  *id = r->id.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetId(TRITONSERVER_InferenceRequest* r, const char* id) {
  r->id = id != nullptr ? id : "";
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestFlags(TRITONSERVER_InferenceRequest* r, uint32_t* f) {
  *f = r->flags;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetFlags(TRITONSERVER_InferenceRequest* r, uint32_t f) {
  r->flags = f;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationId(TRITONSERVER_InferenceRequest* r, uint64_t* id) {
  TRITIUM_REQUIRE(!r->correlation_is_string, TRITONSERVER_ERROR_INVALID_ARG,
                  "given request's correlation id is not an unsigned int");
  *id = r->correlation_id;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationIdString(
    TRITONSERVER_InferenceRequest* r, const char** id) {
  TRITIUM_REQUIRE(r->correlation_is_string, TRITONSERVER_ERROR_INVALID_ARG,
                  "given request's correlation id is not a string");
  *id = r->correlation_id_string.c_str();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationId(TRITONSERVER_InferenceRequest* r, uint64_t id) {
  r->correlation_id = id;
  r->correlation_is_string = false;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationIdString(
    TRITONSERVER_InferenceRequest* r, const char* id) {
  TRITIUM_NOT_NULL(id, "TRITONSERVER_InferenceRequestSetCorrelationIdString");
  r->correlation_id_string = id;
  r->correlation_is_string = true;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestCancel(TRITONSERVER_InferenceRequest* r) {
  r->cancelled = true;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestIsCancelled(TRITONSERVER_InferenceRequest* r, bool* c) {
  *c = r->cancelled.load();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriority(TRITONSERVER_InferenceRequest* r, uint32_t* p) {
  *p = static_cast<uint32_t>(r->priority);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriorityUInt64(TRITONSERVER_InferenceRequest* r, uint64_t* p) {
  *p = r->priority;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriority(TRITONSERVER_InferenceRequest* r, uint32_t p) {
  r->priority = p;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriorityUInt64(TRITONSERVER_InferenceRequest* r, uint64_t p) {
  r->priority = p;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestTimeoutMicroseconds(TRITONSERVER_InferenceRequest* r, uint64_t* t) {
  *t = r->timeout_us;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(TRITONSERVER_InferenceRequest* r, uint64_t t) {
  r->timeout_us = t;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddInput(
    TRITONSERVER_InferenceRequest* r, const char* name, const TRITONSERVER_DataType datatype,
    const int64_t* shape, uint64_t dim_count) {
  TRITIUM_NOT_NULL(name, "TRITONSERVER_InferenceRequestAddInput");
  for (const auto& in : r->inputs) {
    if (in.name == name) {
      return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "input '" + in.name + "' already exists in request");
    }
  }
  r->inputs.emplace_back();
  ServerInput& in = r->inputs.back();
  in.name = name;
  in.datatype = datatype;
  in.shape.assign(shape, shape + dim_count);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRawInput(TRITONSERVER_InferenceRequest*, const char*) {
  return unsupported("TRITONSERVER_InferenceRequestAddRawInput");
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveInput(TRITONSERVER_InferenceRequest* r, const char* name) {
  for (auto it = r->inputs.begin(); it != r->inputs.end(); ++it) {
    if (it->name == name) {
      r->inputs.erase(it);
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    "input '" + std::string(name) + "' does not exist in request");
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputs(TRITONSERVER_InferenceRequest* r) {
  r->inputs.clear();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputData(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id) {
  ServerInput* in = nullptr;
  TRITONSERVER_Error* err = input_named(r, name, &in);
  if (err != nullptr) return err;
  // Device memory is read (copied to the host) when the request is sent, as the caller may
  // fill it until then.
  Buffer buffer{base, byte_size, {}};
  buffer.attributes.byte_size = byte_size;
  buffer.attributes.memory_type = memory_type;
  buffer.attributes.memory_type_id = memory_type_id;
  in->buffers.push_back(buffer);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id, const char*) {
  return TRITONSERVER_InferenceRequestAppendInputData(r, name, base, byte_size, memory_type,
                                                      memory_type_id);
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base,
    TRITONSERVER_BufferAttributes* a) {
  return TRITONSERVER_InferenceRequestAppendInputData(r, name, base, a->byte_size,
                                                      a->memory_type, a->memory_type_id);
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputData(
    TRITONSERVER_InferenceRequest* r, const char* name) {
  ServerInput* in = nullptr;
  TRITONSERVER_Error* err = input_named(r, name, &in);
  if (err != nullptr) return err;
  in->buffers.clear();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRequestedOutput(
    TRITONSERVER_InferenceRequest* r, const char* name) {
  TRITIUM_NOT_NULL(name, "TRITONSERVER_InferenceRequestAddRequestedOutput");
  r->requested_outputs.emplace_back(name);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveRequestedOutput(
    TRITONSERVER_InferenceRequest* r, const char* name) {
  for (auto it = r->requested_outputs.begin(); it != r->requested_outputs.end(); ++it) {
    if (*it == name) {
      r->requested_outputs.erase(it);
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    "requested output '" + std::string(name) + "' does not exist in request");
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs(TRITONSERVER_InferenceRequest* r) {
  r->requested_outputs.clear();
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetReleaseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceRequestReleaseFn_t fn, void* userp) {
  r->release_fn = fn;
  r->release_userp = userp;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetResponseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_ResponseAllocator* allocator,
    void* allocator_userp, TRITONSERVER_InferenceResponseCompleteFn_t response_fn,
    void* response_userp) {
  r->allocator = allocator;
  r->allocator_userp = allocator_userp;
  r->response_fn = response_fn;
  r->response_userp = response_userp;
  return nullptr;
}
static TRITONSERVER_Error* add_parameter(TRITONSERVER_InferenceRequest* r, const char* key, Parameter p) {
  TRITIUM_NOT_NULL(key, "TRITONSERVER_InferenceRequestSet*Parameter");
  p.key = key;
  r->parameters.push_back(std::move(p));
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetStringParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const char* value) {
  return add_parameter(r, key, Parameter::of_string(value));
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetIntParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const int64_t value) {
  return add_parameter(r, key, Parameter::of_int(value));
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetBoolParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const bool value) {
  return add_parameter(r, key, Parameter::of_bool(value));
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetDoubleParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const double value) {
  return add_parameter(r, key, Parameter::of_double(value));
}

TRITONSERVER_Error* TRITONSERVER_ServerInferAsync(
    TRITONSERVER_Server*, TRITONSERVER_InferenceRequest* request, TRITONSERVER_InferenceTrace* trace) {
  TRITIUM_NOT_NULL(request, "TRITONSERVER_ServerInferAsync");
  (void)trace;  // requests are not traced through the C API
  if (!g_host_set) return no_host("TRITONSERVER_ServerInferAsync");
  return g_host.infer_async(request);
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
  return resp->error;  // owned by the response
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

// ---- server queries and model control ----
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

TRITONSERVER_Error* TRITONSERVER_ServerIsLive(TRITONSERVER_Server*, bool* live) {
  *live = true;  // a backend can only call this while the server process runs
  return nullptr;
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
TRITONSERVER_Error* TRITONSERVER_ServerModelStatistics(
    TRITONSERVER_Server*, const char* model_name, const int64_t model_version, TRITONSERVER_Message** m) {
  return server_message(OP_MODEL_STATISTICS, "TRITONSERVER_ServerModelStatistics", model_name, model_version, m);
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
      case TRITONSERVER_PARAMETER_BYTES: {
        static const char* hex = "0123456789abcdef";
        std::string h;
        h.reserve(p->byte_size * 2);
        const unsigned char* b = static_cast<const unsigned char*>(p->bytes);
        for (uint64_t k = 0; k < p->byte_size; ++k) {
          h += hex[b[k] >> 4];
          h += hex[b[k] & 15];
        }
        json += "[\"x\",\"" + h + "\"]";
        break;
      }
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

// ---- metrics ----
TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(
    TRITONSERVER_MetricFamily** family, const TRITONSERVER_MetricKind kind, const char* name,
    const char* description) {
  TRITIUM_NOT_NULL(name, "TRITONSERVER_MetricFamilyNew");
  if (!g_host_set) return no_host("TRITONSERVER_MetricFamilyNew");
  uint64_t handle = 0;
  TRITONSERVER_Error* err = g_host.metric_call(MOP_FAMILY_NEW, 0, kind, name,
                                               description != nullptr ? description : "", 0,
                                               nullptr, 0, &handle, nullptr);
  if (err != nullptr) return err;
  *family = new TRITONSERVER_MetricFamily{};
  (*family)->handle = handle;
  (*family)->kind = kind;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily* family) {
  TRITIUM_NOT_NULL(family, "TRITONSERVER_MetricFamilyDelete");
  if (family->metrics.load() > 0) {
    return make_error(TRITONSERVER_ERROR_INTERNAL,
                      "Must call MetricDelete on all dependent metrics before calling "
                      "MetricFamilyDelete.");
  }
  if (g_host_set) {
    g_host.metric_call(MOP_FAMILY_DELETE, family->handle, family->kind, "", "", 0, nullptr, 0,
                       nullptr, nullptr);
  }
  delete family;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs** args) {
  *args = new TRITONSERVER_MetricArgs{};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsSetHistogram(
    TRITONSERVER_MetricArgs* args, const double* buckets, const uint64_t count) {
  args->histogram = true;
  args->buckets.assign(buckets, buckets + count);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(TRITONSERVER_MetricArgs* args) {
  delete args;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricNewWithArgs(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count,
    const TRITONSERVER_MetricArgs* args) {
  TRITIUM_NOT_NULL(family, "TRITONSERVER_MetricNew");
  if (!g_host_set) return no_host("TRITONSERVER_MetricNew");
  bool histogram = family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM;
  if (histogram && (args == nullptr || !args->histogram)) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      "Missing required args for histogram metric: buckets");
  }
  std::string json = "{";
  for (uint64_t i = 0; i < label_count; ++i) {
    if (labels[i]->type != TRITONSERVER_PARAMETER_STRING) {
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, "metric labels must be strings");
    }
    if (i > 0) json += ",";
    json += json_string(labels[i]->name) + ":" + json_string(labels[i]->string_value);
  }
  json += "}";
  uint64_t handle = 0;
  const double* buckets = histogram ? args->buckets.data() : nullptr;
  uint64_t bucket_count = histogram ? args->buckets.size() : 0;
  TRITONSERVER_Error* err = g_host.metric_call(MOP_METRIC_NEW, family->handle, family->kind,
                                               json.c_str(), "", 0, buckets, bucket_count,
                                               &handle, nullptr);
  if (err != nullptr) return err;
  *metric = new TRITONSERVER_Metric{handle, family};
  family->metrics += 1;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricNew(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count) {
  return TRITONSERVER_MetricNewWithArgs(metric, family, labels, label_count, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric* metric) {
  TRITIUM_NOT_NULL(metric, "TRITONSERVER_MetricDelete");
  if (g_host_set) {
    g_host.metric_call(MOP_METRIC_DELETE, metric->handle, metric->family->kind, "", "", 0,
                       nullptr, 0, nullptr, nullptr);
  }
  metric->family->metrics -= 1;
  delete metric;
  return nullptr;
}
static TRITONSERVER_Error* metric_op(int op, TRITONSERVER_Metric* metric, double value, double* out) {
  TRITIUM_NOT_NULL(metric, "TRITONSERVER_Metric*");
  if (!g_host_set) return no_host("TRITONSERVER_Metric*");
  return g_host.metric_call(op, metric->handle, metric->family->kind, "", "", value, nullptr, 0,
                            nullptr, out);
}
TRITONSERVER_Error* TRITONSERVER_MetricValue(TRITONSERVER_Metric* metric, double* value) {
  return metric_op(MOP_VALUE, metric, 0, value);
}
TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_INCREMENT, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_SET, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricObserve(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_OBSERVE, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_GetMetricKind(TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind) {
  *kind = metric->family->kind;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_GetMetricFamilyKind(TRITONSERVER_MetricFamily* family, TRITONSERVER_MetricKind* kind) {
  *kind = family->kind;
  return nullptr;
}

}  // extern "C"

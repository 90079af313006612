// TRITONSERVER_InferenceRequest: the BLS request a backend builds and sends with
// TRITONSERVER_ServerInferAsync, which hands it to the Python server (see bls_host.cc). Input
// data in device memory is kept as given and read when the request is sent.
#include "inference.h"

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

static const char* kNotSent =
    "It is not possible to cancel an inference request before calling "
    "TRITONSERVER_InferAsync.";

extern "C" {

TRITONSERVER_Error* TRITONSERVER_InferenceRequestNew(
    TRITONSERVER_InferenceRequest** request, TRITONSERVER_Server*, const char* model_name,
    const int64_t model_version) {
  TRITIUM_NOT_NULL(model_name, "TRITONSERVER_InferenceRequestNew");
  if (g_host_set) {
    // As Triton, a request is made for a model that serves: an unknown or unready one fails
    // here, with the message an inference would get.
    int64_t unused = 0;
    TRITONSERVER_Error* err =
        g_host.server_call(OP_MODEL_SERVES, model_name, model_version, nullptr, &unused, nullptr);
    if (err != nullptr) return err;
  }
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
  TRITIUM_NOT_NULL(r, "TRITONSERVER_InferenceRequestCancel");
  TRITIUM_REQUIRE(r->sent.load(), TRITONSERVER_ERROR_INTERNAL, kNotSent);
  r->cancelled = true;
  // The server's request stops waiting in a queue (answered CANCELLED) and its backend sees
  // it cancelled; a request already answered is not the server's any more.
  if (r->in_flight.load() && g_host_set) {
    int64_t unused = 0;
    return g_host.server_call(OP_CANCEL, "", static_cast<int64_t>(reinterpret_cast<uintptr_t>(r)),
                              nullptr, &unused, nullptr);
  }
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestIsCancelled(TRITONSERVER_InferenceRequest* r, bool* c) {
  TRITIUM_NOT_NULL(r, "TRITONSERVER_InferenceRequestIsCancelled");
  TRITIUM_REQUIRE(r->sent.load(), TRITONSERVER_ERROR_INTERNAL, kNotSent);
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
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRawInput(
    TRITONSERVER_InferenceRequest* r, const char* name) {
  TRITIUM_NOT_NULL(name, "TRITONSERVER_InferenceRequestAddRawInput");
  if (!r->inputs.empty()) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      "raw input '" + std::string(name) +
                          "' can't be added to request with other inputs");
  }
  r->inputs.emplace_back();
  r->inputs.back().name = name;
  r->inputs.back().datatype = TRITONSERVER_TYPE_INVALID;
  r->raw_input = name;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveInput(TRITONSERVER_InferenceRequest* r, const char* name) {
  for (auto it = r->inputs.begin(); it != r->inputs.end(); ++it) {
    if (it->name == name) {
      if (r->raw_input == name) r->raw_input.clear();
      r->inputs.erase(it);
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    "input '" + std::string(name) + "' does not exist in request");
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputs(TRITONSERVER_InferenceRequest* r) {
  r->inputs.clear();
  r->raw_input.clear();
  return nullptr;
}
// `base` as one more buffer of input `name`'s data (for host policy `policy`, or the default
// data when null).
static TRITONSERVER_Error* append_input_data(TRITONSERVER_InferenceRequest* r, const char* name,
                                             const void* base, size_t byte_size,
                                             TRITONSERVER_MemoryType memory_type,
                                             int64_t memory_type_id, const char* policy) {
  ServerInput* in = nullptr;
  TRITONSERVER_Error* err = input_named(r, name, &in);
  if (err != nullptr) return err;
  // Device memory is read (copied to the host) when the request is sent, as the caller may
  // fill it until then.
  Buffer buffer{base, byte_size, {}};
  buffer.attributes.byte_size = byte_size;
  buffer.attributes.memory_type = memory_type;
  buffer.attributes.memory_type_id = memory_type_id;
  (policy != nullptr ? in->policy_buffers[policy] : in->buffers).push_back(buffer);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputData(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id) {
  return append_input_data(r, name, base, byte_size, memory_type, memory_type_id, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id, const char* host_policy_name) {
  TRITIUM_NOT_NULL(host_policy_name,
                   "TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy");
  return append_input_data(r, name, base, byte_size, memory_type, memory_type_id,
                           host_policy_name);
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
  in->policy_buffers.clear();
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
  // Sent again after its release, a request starts uncancelled, as in Triton.
  request->cancelled = false;
  request->sent = true;
  request->in_flight = true;
  TRITONSERVER_Error* err = g_host.infer_async(request);
  if (err != nullptr) request->in_flight = false;  // not sent: still the caller's
  return err;
}

}  // extern "C"

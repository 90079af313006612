// What the Python server calls to read a BLS request a backend sent
// (TRITONSERVER_ServerInferAsync) and to answer it through the request's response allocator.
// Tensors a backend gave in device memory are read from the device here, and outputs its
// allocator puts in device memory are written there.
#include "cuda_runtime.h"
#include "inference.h"

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

// How Triton's core starts a message about a request (InferenceRequest::LogRequest).
static std::string log_request(const TRITONSERVER_InferenceRequest* r) {
  return "[request id: " + (r->id.empty() ? std::string("<id_unknown>") : r->id) + "] ";
}

// Triton reads a BYTES input's elements buffer by buffer, and needs each element's 4-byte
// length in one buffer (its content may span buffers); it checks host buffers only.
static TRITONSERVER_Error* check_length_indicators(const TRITONSERVER_InferenceRequest* r,
                                                   const ServerInput& in) {
  uint64_t element_left = 0;  // bytes of the current element's content still to come
  for (const auto& b : in.buffers) {
    if (b.attributes.memory_type == TRITONSERVER_MEMORY_GPU) return nullptr;
    const char* at = static_cast<const char*>(b.base);
    uint64_t left = b.byte_size;
    while (left > 0) {
      if (element_left > 0) {
        uint64_t take = element_left < left ? element_left : left;
        at += take;
        left -= take;
        element_left -= take;
        continue;
      }
      if (left < sizeof(uint32_t)) {
        return make_error(
            TRITONSERVER_ERROR_INVALID_ARG,
            log_request(r) + "incomplete string length indicator for inference input '" + in.name +
                "' for model '" + r->model + "', expecting 4 bytes but only " +
                std::to_string(left) +
                " bytes available. Please make sure the string length indicator is in one "
                "buffer.");
      }
      uint32_t length = 0;
      memcpy(&length, at, sizeof(length));
      at += sizeof(length);
      left -= sizeof(length);
      element_left = length;
    }
  }
  return nullptr;
}

// Gathers an input's buffers into `destination` (the server's own copy of the tensor); a
// buffer in device memory is copied from the device.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_sreq_input_copy(
    TRITONSERVER_InferenceRequest* r, uint32_t index, void* destination) {
  if (r->inputs[index].datatype == TRITONSERVER_TYPE_BYTES) {
    TRITONSERVER_Error* err = check_length_indicators(r, r->inputs[index]);
    if (err != nullptr) return err;
  }
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

// The raw input's name (TRITONSERVER_InferenceRequestAddRawInput), or null.
TRITIUM_EXPORT const char* tritium_sreq_raw_input(TRITONSERVER_InferenceRequest* r) {
  return r->raw_input.empty() ? nullptr : r->raw_input.c_str();
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

// Asks the request's allocator for the output's buffer (offering the memory the backend
// preferred) and copies the data in.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_sresp_add_output(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceResponse* resp, const char* name,
    int datatype, const int64_t* shape, uint32_t dims, const void* data, uint64_t byte_size,
    int preferred_type, int64_t preferred_id) {
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
      r->allocator, name, byte_size, static_cast<TRITONSERVER_MemoryType>(preferred_type),
      preferred_id, r->allocator_userp, &buffer,
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

// The request goes back to its caller (its release callback), who may delete it at once.
static void release_request(TRITONSERVER_InferenceRequest* r) {
  r->in_flight = false;
  if (r->release_fn != nullptr) {
    r->release_fn(r, TRITONSERVER_REQUEST_RELEASE_ALL, r->release_userp);
  }
}

// One response to the caller; with the final one the request is released first, in this same
// call. A caller may take the final response as the request's end and reuse or delete the
// request at once (Triton's simple.cc and multi_server.cc do): its release must already have
// happened, not follow after this thread gets Python's lock back. Triton's API allows the
// release before the responses; nothing reads the request once it is released.
TRITIUM_EXPORT void tritium_sreq_complete(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceResponse* resp, uint32_t flags) {
  const TRITONSERVER_InferenceResponseCompleteFn_t response_fn = r->response_fn;
  void* const response_userp = r->response_userp;
  if ((flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0) release_request(r);
  if (response_fn != nullptr) {
    response_fn(resp, flags, response_userp);
  } else {
    TRITONSERVER_InferenceResponseDelete(resp);
  }
}

// TRITONBACKEND_RequestOutputBufferProperties for a backend running this request: its
// allocator's query function answers, as in Triton (which has none to ask without one).
TRITIUM_EXPORT TRITONSERVER_Error* tritium_sreq_query(
    TRITONSERVER_InferenceRequest* r, const char* name, size_t* byte_size,
    TRITONSERVER_MemoryType* type, int64_t* id) {
  if (r->allocator == nullptr || r->allocator->query_fn == nullptr) {
    return make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                      log_request(r) + "Output properties are not available");
  }
  return r->allocator->query_fn(r->allocator, r->allocator_userp, name, byte_size, type, id);
}



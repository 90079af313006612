// What the Python server calls to build the TRITONBACKEND_Request objects it hands a backend's
// Execute (their input buffers point at the server's tensors) and to read the responses the
// backend sent (outputs, buffers taken without a copy, parameters). The hot path
// (csrc/python/hotpath.cc) and the ctypes path both use these.
#include "host.h"  // first: it makes the API header export what it declares
#include "exports.h"

TRITIUM_EXPORT TRITONBACKEND_Request* tritium_request_new(
    TRITONBACKEND_ModelInstance* instance, uint64_t token, const char* id, uint64_t correlation_id,
    const char* correlation_id_string, uint32_t flags, uint64_t timeout_us) {
  tritium_forget_released();
  auto* r = new TRITONBACKEND_Request{};
  r->state = std::make_shared<RequestState>();
  r->state->token = token;
  r->state->instance = instance;
  r->id = id;
  if (correlation_id_string != nullptr) {
    r->correlation_is_string = true;
    r->correlation_id_string = correlation_id_string;
  } else {
    r->correlation_id = correlation_id;
  }
  r->flags = flags;
  r->timeout_us = timeout_us;
  return r;
}

TRITIUM_EXPORT void tritium_request_add_input(
    TRITONBACKEND_Request* r, const char* name, int datatype, const int64_t* shape,
    uint32_t dims, const void* data, uint64_t byte_size) {
  r->inputs.emplace_back();
  TRITONBACKEND_Input& in = r->inputs.back();
  in.name = name;
  in.datatype = static_cast<TRITONSERVER_DataType>(datatype);
  in.shape.assign(shape, shape + dims);
  Buffer b{data, byte_size, {}};
  b.attributes.byte_size = byte_size;
  in.buffers.push_back(b);
  in.byte_size = byte_size;
}

TRITIUM_EXPORT void tritium_request_add_output(TRITONBACKEND_Request* r, const char* name) {
  r->requested_outputs.emplace_back(name);
}

TRITIUM_EXPORT void tritium_request_add_parameter(
    TRITONBACKEND_Request* r, const char* key, int type, const char* string_value,
    int64_t int_value, double double_value) {
  r->parameters.push_back(Parameter::of_host(key, type, string_value, int_value, double_value));
}

// The server takes a request back (Execute failed, or the instance is going away); one the
// failed Execute released (the server may not have heard: released after its FINAL response)
// is gone already (requests.cc).
TRITIUM_EXPORT void tritium_request_delete(TRITONBACKEND_Request* r) {
  if (!tritium_released_by_last_execute(r)) delete r;
}

// Every output of a response in one call (the server copies or takes them right after).
TRITIUM_EXPORT uint32_t tritium_response_outputs(
    TRITONBACKEND_Response* r, TritiumOutputInfo* out, uint32_t capacity) {
  uint32_t n = 0;
  for (const auto& o : r->outputs) {
    if (n == capacity) break;
    out[n++] = TritiumOutputInfo{o.name.c_str(), o.datatype, static_cast<uint32_t>(o.shape.size()),
                                 o.shape.data(), o.buffer, o.buffer != nullptr ? o.byte_size : 0,
                                 o.preferred_type, o.preferred_id};
  }
  return static_cast<uint32_t>(r->outputs.size());
}

// The server takes an output's buffer (to wrap it without a copy; it frees it with free()).
TRITIUM_EXPORT void* tritium_response_take_buffer(TRITONBACKEND_Response* r, uint32_t index) {
  if (index >= r->outputs.size()) return nullptr;
  void* buffer = r->outputs[index].buffer;
  r->outputs[index].buffer = nullptr;
  return buffer;
}

TRITIUM_EXPORT uint32_t tritium_response_parameter_count(TRITONBACKEND_Response* r) {
  return static_cast<uint32_t>(r->parameters.size());
}

TRITIUM_EXPORT void tritium_response_parameter(
    TRITONBACKEND_Response* r, uint32_t index, const char** key, int* type,
    const char** string_value, int64_t* int_value, double* double_value) {
  const Parameter& p = r->parameters[index];
  *key = p.key.c_str();
  *type = p.type;
  *string_value = p.string_value.c_str();
  *int_value = p.type == TRITONSERVER_PARAMETER_BOOL ? (p.bool_value ? 1 : 0) : p.int_value;
  *double_value = p.double_value;
}

// TRITONBACKEND_Request, _Input, _ResponseFactory, _Response and _Output (_State: state.cc).
//
// Python builds a request (tritium_request_*, request_host.cc) whose input buffers point at
// the server's tensors; the backend reads them, creates responses whose outputs the library
// allocates and owns, and sends them: ResponseSend hands the response to the host, which copies
// the outputs out, and the library frees it. A request's token names it on the Python side; responses and
// factories hold the token (not the request), so they outlive RequestRelease.
#include <algorithm>
#include <cstdlib>

#include "host.h"  // first: it makes the API header export what it declares
#include "exports.h"
#include "inference.h"

static std::mutex g_finished_lock;
static std::vector<uint64_t> g_finished;

RequestState::~RequestState() {
  if (final_sent.load()) {
    std::lock_guard<std::mutex> guard(g_finished_lock);
    g_finished.push_back(token);
  } else if (g_host_set) {
    g_host.request_gone(token, 0);
  }
}

// Tokens of answered requests whose last handle is gone, for the server to forget.
TRITIUM_EXPORT size_t tritium_drain_finished(uint64_t* out, size_t capacity) {
  std::lock_guard<std::mutex> guard(g_finished_lock);
  size_t n = g_finished.size() < capacity ? g_finished.size() : capacity;
  std::copy(g_finished.end() - n, g_finished.end(), out);
  g_finished.resize(g_finished.size() - n);
  return n;
}

// Responses sent by the thread running Execute for a model that is not decoupled wait in
// this thread's queue until Execute returns, and the server takes them in one go (no call
// into Python, so no GIL hand-off, per response). Other threads call the host at once.
struct Queued {
  uint64_t token;
  TRITONBACKEND_Response* response;
  uint32_t flags;
  TRITONSERVER_Error* error;  // a copy: the backend keeps its own
  bool has_stamps;
  uint64_t stamps[4];
};
static thread_local std::vector<Queued>* tl_queue = nullptr;
static thread_local TRITONBACKEND_ModelInstance* tl_instance = nullptr;
static thread_local std::vector<Queued> tl_taken;
// Requests released during the Execute this thread runs: deleted when it returns, as Triton's
// backends (its iterative_sequence test backend among them) still report a request's
// statistics after releasing it, rescheduled or not, within Execute. `tl_just_released`: the
// last Execute's, which the server must not delete again when that Execute failed.
static thread_local std::vector<TRITONBACKEND_Request*>* tl_released = nullptr;
static thread_local std::vector<TRITONBACKEND_Request*> tl_just_released;

// Runs a backend's Execute; `queue` != 0 holds this thread's responses for tritium_queued_*.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_execute(
    TRITONSERVER_Error* (*execute)(TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request**, uint32_t),
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, uint32_t count,
    int queue) {
  std::vector<Queued> pending;
  if (queue != 0) {
    tl_queue = &pending;
    tl_instance = instance;
  }
  std::vector<TRITONBACKEND_Request*> released;
  tl_released = &released;
  TRITONSERVER_Error* err = execute(instance, requests, count);
  tl_released = nullptr;
  tl_queue = nullptr;
  tl_instance = nullptr;
  for (TRITONBACKEND_Request* request : released) delete request;
  tl_just_released.swap(released);  // addresses only, from here on
  tl_taken.insert(tl_taken.end(), pending.begin(), pending.end());
  return err;
}

bool tritium_released_by_last_execute(TRITONBACKEND_Request* request) {
  return std::find(tl_just_released.begin(), tl_just_released.end(), request) !=
         tl_just_released.end();
}

void tritium_forget_released() { tl_just_released.clear(); }

TRITIUM_EXPORT uint32_t tritium_queued_count() { return static_cast<uint32_t>(tl_taken.size()); }

TRITIUM_EXPORT void tritium_queued(uint32_t index, uint64_t* token, TRITONBACKEND_Response** response,
                                   uint32_t* flags, TRITONSERVER_Error** error,
                                   const uint64_t** stamps) {
  Queued& q = tl_taken[index];
  *token = q.token;
  *response = q.response;
  *flags = q.flags;
  *error = q.error;
  *stamps = q.has_stamps ? q.stamps : nullptr;
}

TRITIUM_EXPORT void tritium_queued_clear() {
  std::vector<Queued> taken;
  taken.swap(tl_taken);
  for (Queued& q : taken) {
    delete q.response;
    delete q.error;
  }
}

static bool queue_response(const std::shared_ptr<RequestState>& state,
                           TRITONBACKEND_Response* response, uint32_t flags,
                           TRITONSERVER_Error* error) {
  if (tl_queue == nullptr || tl_instance != state->instance) return false;
  Queued q{state->token, response, flags,
           error != nullptr ? make_error(error->code, error->message) : nullptr,
           state->has_stamps, {}};
  std::copy(state->stamps, state->stamps + 4, q.stamps);
  tl_queue->push_back(q);
  return true;
}

// Checks the FINAL rule; *queued tells the caller the response now belongs to the queue.
static TRITONSERVER_Error* send_to_host(
    const std::shared_ptr<RequestState>& state, TRITONBACKEND_Response* response,
    uint32_t flags, TRITONSERVER_Error* error, const char* function, bool* queued) {
  *queued = false;
  if (state->final_sent.load()) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string(function) +
                          ": the final response of this request was already sent");
  }
  if ((flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) != 0) {
    if (state->final_sent.exchange(true)) {
      return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                        std::string(function) +
                            ": the final response of this request was already sent");
    }
  }
  if (queue_response(state, response, flags, error)) {
    *queued = true;
    return nullptr;
  }
  if (!g_host_set) return no_host(function);
  return g_host.response(state->token, response, flags, error,
                         state->has_stamps ? state->stamps : nullptr);
}

// A TRITONSERVER_InferenceRequest cast to a TRITONBACKEND_Request (see ObjectTag): the calls
// named below answer for it; every other request call starts with this check and refuses it
// instead of reading what it does not have.
#define TRITIUM_BACKEND_REQUEST(request, fn)                                                   \
  TRITIUM_NOT_NULL(request, fn);                                                             \
  TRITIUM_REQUIRE(as_server_request(request) == nullptr, TRITONSERVER_ERROR_UNSUPPORTED,     \
                  std::string(fn) + ": the request is a TRITONSERVER_InferenceRequest; "     \
                  "Tritium answers only TRITONBACKEND_RequestId, RequestIsCancelled, "         \
                  "RequestOutputBufferProperties, RequestRelease and ResponseFactoryNew for "  \
                  "one cast to a TRITONBACKEND_Request")

static const char* const kServerFactory =
    "responses to a TRITONSERVER_InferenceRequest come from the model that runs it: a response "
    "factory or response made from one cast to a TRITONBACKEND_Request cannot send any";

// TRITONBACKEND_InferenceResponseOutput{,ByName} on a TRITONSERVER_InferenceResponse cast to a
// TRITONBACKEND_Response (see ObjectTag).
static TRITONSERVER_Error* server_output(TRITONSERVER_InferenceResponse* response, uint32_t index,
                                         const char** name, TRITONSERVER_DataType* datatype,
                                         const int64_t** shape, uint64_t* dim_count) {
  const char* unused_name = nullptr;
  const void* base = nullptr;
  size_t byte_size = 0;
  TRITONSERVER_MemoryType memory_type;
  int64_t memory_type_id = 0;
  void* userp = nullptr;
  return TRITONSERVER_InferenceResponseOutput(response, index, name != nullptr ? name : &unused_name,
                                              datatype, shape, dim_count, &base, &byte_size,
                                              &memory_type, &memory_type_id, &userp);
}

static TRITONSERVER_Error* server_output_by_name(
    TRITONSERVER_InferenceResponse* response, const char* name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint64_t* dim_count) {
  for (uint32_t i = 0; i < response->outputs.size(); ++i) {
    if (response->outputs[i].name == name) {
      return server_output(response, i, nullptr, datatype, shape, dim_count);
    }
  }
  return make_error(TRITONSERVER_ERROR_NOT_FOUND,
                    std::string("Output name '") + name + "' not found.");
}

extern "C" {

// ---- request ----
TRITONSERVER_Error* TRITONBACKEND_RequestId(TRITONBACKEND_Request* request, const char** id) {
  if (TRITONSERVER_InferenceRequest* server_request = as_server_request(request)) {
    *id = server_request->id.c_str();
    return nullptr;
  }
  *id = request->id.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestIsCancelled(TRITONBACKEND_Request* request, bool* c) {
  if (TRITONSERVER_InferenceRequest* server_request = as_server_request(request)) {
    *c = server_request->cancelled.load();
    return nullptr;
  }
  *c = g_host_set && g_host.is_cancelled(request->state->token) != 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryIsCancelled(
    TRITONBACKEND_ResponseFactory* factory, bool* c) {
  if (factory->server_request != nullptr) {
    *c = factory->server_request->cancelled.load();
    return nullptr;
  }
  *c = g_host_set && g_host.is_cancelled(factory->request->token) != 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationId(TRITONBACKEND_Request* request, uint64_t* id) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestCorrelationId");
  TRITIUM_REQUIRE(!request->correlation_is_string, TRITONSERVER_ERROR_INVALID_ARG,
                  "correlation ID in request is not an unsigned int");
  *id = request->correlation_id;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationIdString(
    TRITONBACKEND_Request* request, const char** id) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestCorrelationIdString");
  TRITIUM_REQUIRE(request->correlation_is_string, TRITONSERVER_ERROR_INVALID_ARG,
                  "correlation ID in request is not a string");
  *id = request->correlation_id_string.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InferenceRequestTimeoutMicroseconds(
    TRITONBACKEND_Request* request, uint64_t* timeout) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_InferenceRequestTimeoutMicroseconds");
  *timeout = request->timeout_us;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestFlags(TRITONBACKEND_Request* request, uint32_t* flags) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestFlags");
  *flags = request->flags;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestParameterCount(TRITONBACKEND_Request* request, uint32_t* c) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestParameterCount");
  *c = static_cast<uint32_t>(request->parameters.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestParameter(
    TRITONBACKEND_Request* request, const uint32_t index, const char** key,
    TRITONSERVER_ParameterType* type, const void** vvalue) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestParameter");
  TRITIUM_REQUIRE_INDEX(index, request->parameters, "request has", "parameters");
  const Parameter& p = request->parameters[index];
  *key = p.key.c_str();
  *type = p.type;
  *vvalue = p.value();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, uint32_t* c) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestInputCount");
  *c = static_cast<uint32_t>(request->inputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputName(
    TRITONBACKEND_Request* request, const uint32_t index, const char** name) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestInputName");
  TRITIUM_REQUIRE_INDEX(index, request->inputs, "request has", "inputs");
  *name = request->inputs[index].name.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestInput(
    TRITONBACKEND_Request* request, const char* name, TRITONBACKEND_Input** input) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestInput");
  for (auto& in : request->inputs) {
    if (in.name == name) {
      *input = &in;
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                    std::string("unknown request input name ") + name);
}

TRITONSERVER_Error* TRITONBACKEND_RequestInputByIndex(
    TRITONBACKEND_Request* request, const uint32_t index, TRITONBACKEND_Input** input) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestInputByIndex");
  TRITIUM_REQUIRE_INDEX(index, request->inputs, "request has", "inputs");
  *input = &request->inputs[index];
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* c) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestOutputCount");
  *c = static_cast<uint32_t>(request->requested_outputs.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(
    TRITONBACKEND_Request* request, const uint32_t index, const char** name) {
  TRITIUM_BACKEND_REQUEST(request, "TRITONBACKEND_RequestOutputName");
  TRITIUM_REQUIRE_INDEX(index, request->requested_outputs, "request has", "requested outputs");
  *name = request->requested_outputs[index].c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestOutputBufferProperties(
    TRITONBACKEND_Request* request, const char* name, size_t* byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  if (TRITONSERVER_InferenceRequest* server_request = as_server_request(request)) {
    return tritium_sreq_query(server_request, name, byte_size, memory_type, memory_type_id);
  }
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_RequestOutputBufferProperties");
  if (!g_host_set) return no_host("TRITONBACKEND_RequestOutputBufferProperties");
  return g_host.output_properties(request->state->token, name, byte_size, memory_type,
                                  memory_type_id);
}

TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t flags) {
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_RequestRelease");
  const bool reschedule = (flags & TRITONSERVER_REQUEST_RELEASE_RESCHEDULE) != 0;
  TRITIUM_REQUIRE(reschedule || (flags & TRITONSERVER_REQUEST_RELEASE_ALL) != 0,
                  TRITONSERVER_ERROR_INVALID_ARG,
                  "unknown request release flags " + std::to_string(flags));
  if (as_server_request(request) != nullptr) {
    // The server holds it until its final response, and then calls its release callback
    // once: giving it back earlier would leave the responses without their allocator.
    TRITIUM_REQUIRE(!reschedule, TRITONSERVER_ERROR_INVALID_ARG,
                    "a request made with TRITONSERVER_InferenceRequestNew cannot be rescheduled");
    return nullptr;
  }
  // The server waits for its answer, or is asked to run it again (an iterative sequence's
  // scheduler may refuse: then the backend still owns the request).
  if (reschedule || !request->state->final_sent.load()) {
    RequestState& state = *request->state;
    if (reschedule && state.has_stamps && g_host_set) {  // no FINAL response carries them
      state.has_stamps = false;
      g_host.statistics(state.instance->token, state.token, 1, state.stamps);
    }
    if (!g_host_set) return no_host("TRITONBACKEND_RequestRelease");
    TRITONSERVER_Error* err = g_host.release(request->state->token, flags);
    if (err != nullptr) return err;  // not released: the backend still owns it
    state.rescheduled = reschedule;
  }
  if (tl_released != nullptr) {
    tl_released->push_back(request);
  } else {
    delete request;
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_RequestTrace(TRITONBACKEND_Request*, TRITONSERVER_InferenceTrace** t) {
  *t = nullptr;  // requests are not traced through the C API
  return nullptr;
}

// ---- input ----
TRITONSERVER_Error* TRITONBACKEND_InputProperties(
    TRITONBACKEND_Input* input, const char** name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count) {
  if (name != nullptr) *name = input->name.c_str();
  if (datatype != nullptr) *datatype = input->datatype;
  if (shape != nullptr) *shape = input->shape.data();
  if (dims_count != nullptr) *dims_count = static_cast<uint32_t>(input->shape.size());
  if (byte_size != nullptr) *byte_size = input->byte_size;
  if (buffer_count != nullptr) *buffer_count = static_cast<uint32_t>(input->buffers.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InputPropertiesForHostPolicy(
    TRITONBACKEND_Input* input, const char*, const char** name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count) {
  return TRITONBACKEND_InputProperties(input, name, datatype, shape, dims_count, byte_size,
                                       buffer_count);
}

TRITONSERVER_Error* TRITONBACKEND_InputBuffer(
    TRITONBACKEND_Input* input, const uint32_t index, const void** buffer, uint64_t* size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  TRITIUM_REQUIRE_INDEX(index, input->buffers, "input '" + input->name + "' has", "buffers");
  *buffer = input->buffers[index].base;
  *size = input->buffers[index].byte_size;
  *memory_type = TRITONSERVER_MEMORY_CPU;  // the server's tensors are host memory
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_InputBufferForHostPolicy(
    TRITONBACKEND_Input* input, const char*, const uint32_t index, const void** buffer,
    uint64_t* size, TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  return TRITONBACKEND_InputBuffer(input, index, buffer, size, memory_type, memory_type_id);
}

TRITONSERVER_Error* TRITONBACKEND_InputBufferAttributes(
    TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
    TRITONSERVER_BufferAttributes** attributes) {
  TRITIUM_REQUIRE_INDEX(index, input->buffers, "input '" + input->name + "' has", "buffers");
  *buffer = input->buffers[index].base;
  *attributes = &input->buffers[index].attributes;
  return nullptr;
}

// ---- response factory ----
TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryNew(
    TRITONBACKEND_ResponseFactory** factory, TRITONBACKEND_Request* request) {
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_ResponseFactoryNew");
  if (TRITONSERVER_InferenceRequest* server_request = as_server_request(request)) {
    *factory = new TRITONBACKEND_ResponseFactory{nullptr, server_request};
    return nullptr;
  }
  *factory = new TRITONBACKEND_ResponseFactory{request->state};
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryDelete(TRITONBACKEND_ResponseFactory* factory) {
  delete factory;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseFactorySendFlags(
    TRITONBACKEND_ResponseFactory* factory, const uint32_t send_flags) {
  TRITIUM_NOT_NULL(factory, "TRITONBACKEND_ResponseFactorySendFlags");
  TRITIUM_REQUIRE(factory->server_request == nullptr, TRITONSERVER_ERROR_UNSUPPORTED,
                  kServerFactory);
  bool queued = false;
  return send_to_host(factory->request, nullptr, send_flags, nullptr,
                      "TRITONBACKEND_ResponseFactorySendFlags", &queued);
}

// ---- response ----
TRITONSERVER_Error* TRITONBACKEND_ResponseNew(
    TRITONBACKEND_Response** response, TRITONBACKEND_Request* request) {
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_ResponseNew");
  TRITIUM_REQUIRE(as_server_request(request) == nullptr, TRITONSERVER_ERROR_UNSUPPORTED,
                  kServerFactory);
  *response = new TRITONBACKEND_Response{};
  (*response)->request = request->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseNewFromFactory(
    TRITONBACKEND_Response** response, TRITONBACKEND_ResponseFactory* factory) {
  TRITIUM_NOT_NULL(factory, "TRITONBACKEND_ResponseNewFromFactory");
  TRITIUM_REQUIRE(factory->server_request == nullptr, TRITONSERVER_ERROR_UNSUPPORTED,
                  kServerFactory);
  *response = new TRITONBACKEND_Response{};
  (*response)->request = factory->request;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response* response) {
  delete response;
  return nullptr;
}

static TRITONSERVER_Error* set_parameter(TRITONBACKEND_Response* response, const char* name,
                                         Parameter p) {
  TRITIUM_NOT_NULL(response, "TRITONBACKEND_ResponseSet*Parameter");
  TRITIUM_NOT_NULL(name, "TRITONBACKEND_ResponseSet*Parameter");
  p.key = name;
  response->parameters.push_back(std::move(p));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetStringParameter(
    TRITONBACKEND_Response* response, const char* name, const char* value) {
  return set_parameter(response, name, Parameter::of_string(value));
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetIntParameter(
    TRITONBACKEND_Response* response, const char* name, const int64_t value) {
  return set_parameter(response, name, Parameter::of_int(value));
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetBoolParameter(
    TRITONBACKEND_Response* response, const char* name, const bool value) {
  return set_parameter(response, name, Parameter::of_bool(value));
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSetDoubleParameter(
    TRITONBACKEND_Response* response, const char* name, const double value) {
  return set_parameter(response, name, Parameter::of_double(value));
}

TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(
    TRITONBACKEND_Response* response, TRITONBACKEND_Output** output, const char* name,
    const TRITONSERVER_DataType datatype, const int64_t* shape, const uint32_t dims_count) {
  TRITIUM_NOT_NULL(response, "TRITONBACKEND_ResponseOutput");
  TRITIUM_NOT_NULL(name, "TRITONBACKEND_ResponseOutput");
  for (const auto& o : response->outputs) {
    if (o.name == name) {
      return make_error(TRITONSERVER_ERROR_ALREADY_EXISTS,
                        std::string("response already has an output named '") + name + "'");
    }
  }
  response->outputs.emplace_back();
  TRITONBACKEND_Output& o = response->outputs.back();
  o.name = name;
  o.datatype = datatype;
  o.shape.assign(shape, shape + dims_count);
  *output = &o;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(
    TRITONBACKEND_Output* output, void** buffer, const uint64_t byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  TRITIUM_NOT_NULL(output, "TRITONBACKEND_OutputBuffer");
  if (output->buffer != nullptr) {
    return make_error(TRITONSERVER_ERROR_ALREADY_EXISTS,
                      "a buffer was already allocated for output '" + output->name + "'");
  }
  output->preferred_type = *memory_type;
  output->preferred_id = *memory_type_id;
  output->buffer = malloc(byte_size > 0 ? byte_size : 1);
  if (output->buffer == nullptr) {
    return make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                      "failed to allocate " + std::to_string(byte_size) + " bytes for output '" +
                          output->name + "'");
  }
  output->byte_size = byte_size;
  output->attributes.byte_size = byte_size;
  *buffer = output->buffer;
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_OutputBufferAttributes(
    TRITONBACKEND_Output* output, TRITONSERVER_BufferAttributes** attributes) {
  *attributes = &output->attributes;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ResponseSend(
    TRITONBACKEND_Response* response, const uint32_t send_flags, TRITONSERVER_Error* error) {
  TRITIUM_NOT_NULL(response, "TRITONBACKEND_ResponseSend");
  bool queued = false;
  TRITONSERVER_Error* err = send_to_host(response->request, response, send_flags, error,
                                         "TRITONBACKEND_ResponseSend", &queued);
  if (err != nullptr) return err;  // not sent: the backend still owns the response
  // Ownership passed to the server: the host copied what it needed, or the queue keeps it.
  if (!queued) delete response;
  return nullptr;   // `error` stays the caller's, as in Triton
}

TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutputByName(
    TRITONBACKEND_Response* response, const char* name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint64_t* dim_count) {
  if (TRITONSERVER_InferenceResponse* server_response = as_server_response(response)) {
    return server_output_by_name(server_response, name, datatype, shape, dim_count);
  }
  for (const auto& o : response->outputs) {
    if (o.name == name) {
      *datatype = o.datatype;
      *shape = o.shape.data();
      *dim_count = o.shape.size();
      return nullptr;
    }
  }
  return make_error(TRITONSERVER_ERROR_NOT_FOUND,
                    std::string("Output name '") + name + "' not found.");
}

TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutput(
    TRITONBACKEND_Response* response, const uint32_t index, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape, uint64_t* dim_count) {
  if (TRITONSERVER_InferenceResponse* server_response = as_server_response(response)) {
    return server_output(server_response, index, name, datatype, shape, dim_count);
  }
  TRITIUM_REQUIRE_INDEX(index, response->outputs, "response has", "outputs");
  const auto& o = response->outputs[index];
  *name = o.name.c_str();
  *datatype = o.datatype;
  *shape = o.shape.data();
  *dim_count = o.shape.size();
  return nullptr;
}

}  // extern "C"

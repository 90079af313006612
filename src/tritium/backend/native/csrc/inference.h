// The objects behind a BLS request a backend makes (TRITONSERVER_InferenceRequest and its
// response, through the backend's response allocator), shared by the C API calls that build and
// read them (inference_request.cc, inference_response.cc) and the calls through which the
// Python server reads the request and answers it (bls_host.cc).
#pragma once
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "host.h"

struct ServerInput {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<Buffer> buffers;
  // AppendInputDataWithHostPolicy's data, by host policy name: kept apart from the default
  // data, as Triton keeps it, for instances of that policy; Tritium's instances have none, so
  // every model reads `buffers`.
  std::map<std::string, std::vector<Buffer>> policy_buffers;
};

struct TRITONSERVER_ResponseAllocator {
  TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn;
  TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn;
  TRITONSERVER_ResponseAllocatorStartFn_t start_fn;
  TRITONSERVER_ResponseAllocatorQueryFn_t query_fn = nullptr;
  TRITONSERVER_ResponseAllocatorBufferAttributesFn_t attributes_fn = nullptr;
};

struct TRITONSERVER_InferenceRequest {
  const uint32_t tag = kServerRequestTag;  // first, as in TRITONBACKEND_Request (host.h)
  std::string model;
  int64_t version;
  std::string id, correlation_id_string;
  uint64_t correlation_id = 0;
  bool correlation_is_string = false;
  uint32_t flags = 0;
  uint64_t priority = 0, timeout_us = 0;
  std::deque<ServerInput> inputs;
  // The input added by TRITONSERVER_InferenceRequestAddRawInput (empty: none): its datatype
  // and shape come from the model's configuration when the request is read.
  std::string raw_input;
  std::vector<std::string> requested_outputs;
  std::vector<Parameter> parameters;
  TRITONSERVER_InferenceRequestReleaseFn_t release_fn = nullptr;
  void* release_userp = nullptr;
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  void* allocator_userp = nullptr;
  TRITONSERVER_InferenceResponseCompleteFn_t response_fn = nullptr;
  void* response_userp = nullptr;
  std::atomic<bool> cancelled{false};
  // Sent with TRITONSERVER_ServerInferAsync at least once (a cancel before that is an error,
  // as in Triton); in flight from then until its release.
  std::atomic<bool> sent{false}, in_flight{false};
};

// The server request behind a TRITONBACKEND_Request that is one cast (see ObjectTag), or null.
inline TRITONSERVER_InferenceRequest* as_server_request(TRITONBACKEND_Request* request) {
  return request != nullptr && request->tag == kServerRequestTag
             ? reinterpret_cast<TRITONSERVER_InferenceRequest*>(request)
             : nullptr;
}

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
  const uint32_t tag = kServerResponseTag;  // first, as in TRITONBACKEND_Response (host.h)
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  std::string model, id;
  int64_t version;
  TRITONSERVER_Error* error = nullptr;
  std::deque<ServerOutput> outputs;
  std::vector<Parameter> parameters;
};

// The answer of the request's allocator's query function (bls_host.cc).
extern "C" TRITONSERVER_Error* tritium_sreq_query(TRITONSERVER_InferenceRequest* r, const char* name,
                                                 size_t* byte_size, TRITONSERVER_MemoryType* type,
                                                 int64_t* id);

inline TRITONSERVER_InferenceResponse* as_server_response(TRITONBACKEND_Response* response) {
  return response != nullptr && response->tag == kServerResponseTag
             ? reinterpret_cast<TRITONSERVER_InferenceResponse*>(response)
             : nullptr;
}

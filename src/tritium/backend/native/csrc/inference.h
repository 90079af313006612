// The objects behind a BLS request a backend makes (TRITONSERVER_InferenceRequest and its
// response, through the backend's response allocator), shared by the C API calls that build and
// read them (inference_request.cc, inference_response.cc) and the calls through which the
// Python server reads the request and answers it (bls_host.cc).
#pragma once
#include <deque>
#include <string>
#include <vector>

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

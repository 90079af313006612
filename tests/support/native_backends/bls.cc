// Test backend "bls": for each request, infers model "identity_fp32" (INPUT0 -> OUTPUT0) with
// TRITONSERVER_InferenceRequestNew + TRITONSERVER_ServerInferAsync, waits for the final
// response and answers OUTPUT0 = 2 * what it got back.
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "common.h"

struct Call {
  std::mutex lock;
  std::condition_variable cv;
  bool done = false, released = false;
  std::vector<float> values;
  std::string error;
};

static TRITONSERVER_Error* alloc_fn(TRITONSERVER_ResponseAllocator*, const char*, size_t byte_size,
                                    TRITONSERVER_MemoryType, int64_t, void*, void** buffer,
                                    void** buffer_userp, TRITONSERVER_MemoryType* type, int64_t* type_id) {
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  *buffer_userp = nullptr;
  *type = TRITONSERVER_MEMORY_CPU;
  *type_id = 0;
  return nullptr;
}

static TRITONSERVER_Error* release_fn(TRITONSERVER_ResponseAllocator*, void* buffer, void*, size_t,
                                      TRITONSERVER_MemoryType, int64_t) {
  free(buffer);
  return nullptr;
}

static void on_release(TRITONSERVER_InferenceRequest*, const uint32_t, void* userp) {
  auto* call = static_cast<Call*>(userp);
  std::lock_guard<std::mutex> guard(call->lock);
  call->released = true;
  call->cv.notify_all();
}

static void on_response(TRITONSERVER_InferenceResponse* response, const uint32_t flags, void* userp) {
  auto* call = static_cast<Call*>(userp);
  std::lock_guard<std::mutex> guard(call->lock);
  if (response != nullptr) {
    TRITONSERVER_Error* err = TRITONSERVER_InferenceResponseError(response);
    if (err != nullptr) {
      call->error = TRITONSERVER_ErrorMessage(err);
    } else {
      uint32_t count = 0;
      TRITONSERVER_InferenceResponseOutputCount(response, &count);
      for (uint32_t i = 0; i < count; ++i) {
        const char* name;
        TRITONSERVER_DataType dt;
        const int64_t* shape;
        uint64_t dims;
        const void* base;
        size_t size;
        TRITONSERVER_MemoryType type;
        int64_t type_id;
        void* up;
        TRITONSERVER_InferenceResponseOutput(response, i, &name, &dt, &shape, &dims, &base, &size,
                                             &type, &type_id, &up);
        const float* f = static_cast<const float*>(base);
        call->values.assign(f, f + size / 4);
      }
    }
    TRITONSERVER_InferenceResponseDelete(response);
  }
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) call->done = true;
  call->cv.notify_all();
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  TRITONSERVER_Server* server = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelServer(model, &server));
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  RETURN_IF_ERROR(TRITONSERVER_ResponseAllocatorNew(&allocator, alloc_fn, release_fn, nullptr));
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Input* input = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "INPUT0", &input));
    const int64_t* shape = nullptr;
    uint32_t dims = 0, buffers = 0;
    uint64_t byte_size = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputProperties(input, nullptr, nullptr, &shape, &dims, &byte_size, &buffers));
    std::vector<float> data(byte_size / 4);
    RETURN_IF_ERROR(gather(input, buffers, reinterpret_cast<char*>(data.data())));

    Call call;
    TRITONSERVER_InferenceRequest* inner = nullptr;
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestNew(&inner, server, "identity_fp32", -1));
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestAddInput(inner, "INPUT0", TRITONSERVER_TYPE_FP32, shape, dims));
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestAppendInputData(inner, "INPUT0", data.data(), byte_size,
                                                                 TRITONSERVER_MEMORY_CPU, 0));
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestAddRequestedOutput(inner, "OUTPUT0"));
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestSetReleaseCallback(inner, on_release, &call));
    RETURN_IF_ERROR(TRITONSERVER_InferenceRequestSetResponseCallback(inner, allocator, nullptr, on_response, &call));
    TRITONSERVER_Error* sent = TRITONSERVER_ServerInferAsync(server, inner, nullptr);
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    TRITONSERVER_Error* failure = nullptr;
    if (sent != nullptr) {
      failure = sent;
    } else {
      std::unique_lock<std::mutex> lock(call.lock);
      call.cv.wait(lock, [&] { return call.done && call.released; });
      if (!call.error.empty()) failure = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, call.error.c_str());
    }
    TRITONSERVER_InferenceRequestDelete(inner);
    if (failure == nullptr) {
      TRITONBACKEND_Output* out = nullptr;
      void* buffer = nullptr;
      TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
      int64_t type_id = 0;
      RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUTPUT0", TRITONSERVER_TYPE_FP32, shape, dims));
      RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, call.values.size() * 4, &type, &type_id));
      float* f = static_cast<float*>(buffer);
      for (size_t i = 0; i < call.values.size(); ++i) f[i] = 2 * call.values[i];
    }
    TRITONSERVER_Error* answered = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    if (failure != nullptr) TRITONSERVER_ErrorDelete(failure);
    RETURN_IF_ERROR(answered);
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return TRITONSERVER_ResponseAllocatorDelete(allocator);
}

}  // extern "C"

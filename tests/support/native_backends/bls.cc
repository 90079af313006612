// Test backend "bls": for each request, infers model "identity_fp32" (INPUT0 -> OUTPUT0) with
// TRITONSERVER_InferenceRequestNew + TRITONSERVER_ServerInferAsync, waits for the final
// response and answers OUTPUT0 = 2 * what it got back.
//
// With config parameter "device_memory", a GPU backend's round trip through
// TRITONSERVER_MEMORY_GPU: INPUT0 is staged in device memory from
// TRITONBACKEND_MemoryManagerAllocate and sent as GPU input data, the response allocator gives
// device memory too, the answer is copied back with cudaMemcpy, and LIVE answers the device
// allocations left (a stand-in runtime's count, -1 with a real one). The device is the
// request's "device" parameter, else the instance's. The CUDA runtime's functions are those
// Tritium's library opened (looked up in the global scope): this backend links none.
//
// With config parameter "raw_input", the inner request's input is a raw one
// (TRITONSERVER_InferenceRequestAddRawInput): the server deduces it from identity_fp32's
// configuration.
#include <dlfcn.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "common.h"

using Memcpy = int (*)(void*, const void*, size_t, int);
constexpr int kHostToDevice = 1, kDeviceToHost = 2;

// Where the inner request's tensors live, for the allocator and the copies.
struct Memory {
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t device = 0;
  TRITONBACKEND_MemoryManager* manager = nullptr;
  Memcpy copy = nullptr;
};

struct Call {
  std::mutex lock;
  std::condition_variable cv;
  bool done = false, released = false;
  std::vector<float> values;
  std::string error;
  const Memory* memory;
};

static TRITONSERVER_Error* alloc_fn(TRITONSERVER_ResponseAllocator*, const char*, size_t byte_size,
                                    TRITONSERVER_MemoryType, int64_t, void* userp, void** buffer,
                                    void** buffer_userp, TRITONSERVER_MemoryType* type, int64_t* type_id) {
  const auto* memory = static_cast<const Memory*>(userp);
  *buffer_userp = memory->manager;
  *type = memory->type;
  *type_id = memory->device;
  if (memory->type == TRITONSERVER_MEMORY_GPU) {
    return TRITONBACKEND_MemoryManagerAllocate(memory->manager, buffer, TRITONSERVER_MEMORY_GPU,
                                               memory->device, byte_size);
  }
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  return nullptr;
}

static TRITONSERVER_Error* release_fn(TRITONSERVER_ResponseAllocator*, void* buffer, void* manager,
                                      size_t, TRITONSERVER_MemoryType type, int64_t type_id) {
  if (type == TRITONSERVER_MEMORY_GPU) {
    return TRITONBACKEND_MemoryManagerFree(static_cast<TRITONBACKEND_MemoryManager*>(manager),
                                           buffer, type, type_id);
  }
  free(buffer);
  return nullptr;
}

static void on_release(TRITONSERVER_InferenceRequest*, const uint32_t, void* userp) {
  auto* call = static_cast<Call*>(userp);
  std::lock_guard<std::mutex> guard(call->lock);
  call->released = true;
  call->cv.notify_all();
}

// Reads the response's outputs (OUTPUT0) into call->values, from where the allocator put them.
static void read_outputs(TRITONSERVER_InferenceResponse* response, Call* call) {
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
    if (type != call->memory->type) {
      call->error = std::string("output in ") + TRITONSERVER_MemoryTypeString(type) +
                    " memory, not the memory the allocator gave";
      return;
    }
    call->values.resize(size / 4);
    if (type != TRITONSERVER_MEMORY_GPU) {
      memcpy(call->values.data(), base, size);
    } else if (call->memory->copy(call->values.data(), base, size, kDeviceToHost) != 0) {
      call->error = "cudaMemcpy from the output failed";
    }
  }
}

static void on_response(TRITONSERVER_InferenceResponse* response, const uint32_t flags, void* userp) {
  auto* call = static_cast<Call*>(userp);
  std::lock_guard<std::mutex> guard(call->lock);
  if (response != nullptr) {
    TRITONSERVER_Error* err = TRITONSERVER_InferenceResponseError(response);
    if (err != nullptr) {
      call->error = TRITONSERVER_ErrorMessage(err);
      TRITONSERVER_ErrorDelete(err);  // a new error per call, as Triton gives it
    } else {
      read_outputs(response, call);
    }
    TRITONSERVER_InferenceResponseDelete(response);
  }
  if (flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL) call->done = true;
  call->cv.notify_all();
}

// Infers identity_fp32 on `data` (already where `memory` says); the answer in `call`. As a
// raw input (`raw`), the input's name, datatype and shape are left to the server to deduce.
static TRITONSERVER_Error* infer(TRITONSERVER_Server* server, const Memory& memory,
                                 const int64_t* shape, uint32_t dims, const void* data,
                                 uint64_t byte_size, Call* call, bool raw = false) {
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  RETURN_IF_ERROR(TRITONSERVER_ResponseAllocatorNew(&allocator, alloc_fn, release_fn, nullptr));
  TRITONSERVER_InferenceRequest* inner = nullptr;
  const char* input = raw ? "RAW" : "INPUT0";
  TRITONSERVER_Error* failure = TRITONSERVER_InferenceRequestNew(&inner, server, "identity_fp32", -1);
  if (failure == nullptr) {
    failure = raw ? TRITONSERVER_InferenceRequestAddRawInput(inner, input)
                  : TRITONSERVER_InferenceRequestAddInput(inner, input, TRITONSERVER_TYPE_FP32, shape, dims);
  }
  if (failure == nullptr) {
    failure = TRITONSERVER_InferenceRequestAppendInputData(inner, input, data, byte_size,
                                                           memory.type, memory.device);
  }
  if (failure == nullptr) failure = TRITONSERVER_InferenceRequestAddRequestedOutput(inner, "OUTPUT0");
  if (failure == nullptr) failure = TRITONSERVER_InferenceRequestSetReleaseCallback(inner, on_release, call);
  if (failure == nullptr) {
    failure = TRITONSERVER_InferenceRequestSetResponseCallback(
        inner, allocator, const_cast<Memory*>(&memory), on_response, call);
  }
  if (failure == nullptr) failure = TRITONSERVER_ServerInferAsync(server, inner, nullptr);
  if (failure == nullptr) {
    std::unique_lock<std::mutex> lock(call->lock);
    call->cv.wait(lock, [&] { return call->done && call->released; });
    if (!call->error.empty()) failure = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, call->error.c_str());
  }
  if (inner != nullptr) TRITONSERVER_InferenceRequestDelete(inner);
  TRITONSERVER_ResponseAllocatorDelete(allocator);
  return failure;
}

// The round trip through device memory: INPUT0 staged on the device, then `infer`.
static TRITONSERVER_Error* infer_from_device(TRITONSERVER_Server* server, Memory& memory,
                                             const int64_t* shape, uint32_t dims,
                                             const std::vector<float>& data, Call* call) {
  const uint64_t byte_size = data.size() * 4;
  void* staged = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_MemoryManagerAllocate(memory.manager, &staged, TRITONSERVER_MEMORY_GPU,
                                                      memory.device, byte_size));
  // Looked up once a device allocation succeeded: only then has Tritium opened the runtime.
  memory.copy = reinterpret_cast<Memcpy>(dlsym(RTLD_DEFAULT, "cudaMemcpy"));
  TRITONSERVER_Error* failure = nullptr;
  if (memory.copy == nullptr) {
    failure = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "cudaMemcpy is not loaded");
  } else if (memory.copy(staged, data.data(), byte_size, kHostToDevice) != 0) {
    failure = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, "cudaMemcpy to the device failed");
  } else {
    failure = infer(server, memory, shape, dims, staged, byte_size, call);
  }
  TRITONSERVER_Error* freed = TRITONBACKEND_MemoryManagerFree(memory.manager, staged,
                                                              TRITONSERVER_MEMORY_GPU, memory.device);
  if (failure == nullptr) return freed;
  if (freed != nullptr) TRITONSERVER_ErrorDelete(freed);
  return failure;
}

// The device a request names in its "device" parameter, else `fallback`.
static TRITONSERVER_Error* requested_device(TRITONBACKEND_Request* request, int64_t fallback,
                                            int64_t* device) {
  *device = fallback;
  uint32_t parameters = 0;
  RETURN_IF_ERROR(TRITONBACKEND_RequestParameterCount(request, &parameters));
  for (uint32_t p = 0; p < parameters; ++p) {
    const char* key = nullptr;
    TRITONSERVER_ParameterType type;
    const void* value = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_RequestParameter(request, p, &key, &type, &value));
    if (std::string(key) == "device" && type == TRITONSERVER_PARAMETER_INT) {
      *device = *static_cast<const int64_t*>(value);
    }
  }
  return nullptr;
}

static int64_t live_device_allocations() {
  auto live = reinterpret_cast<long (*)()>(dlsym(RTLD_DEFAULT, "fake_cudart_live"));
  return live != nullptr ? live() : -1;
}

static TRITONSERVER_Error* add_output(TRITONBACKEND_Response* response, const char* name,
                                      TRITONSERVER_DataType datatype, const int64_t* shape,
                                      uint32_t dims, uint64_t byte_size, void** buffer) {
  TRITONBACKEND_Output* out = nullptr;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t type_id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, name, datatype, shape, dims));
  return TRITONBACKEND_OutputBuffer(out, buffer, byte_size, &type, &type_id);
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  TRITONSERVER_Server* server = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelServer(model, &server));
  const std::string config = model_config_json(model);
  const bool on_device = config.find("\"device_memory\"") != std::string::npos;
  const bool raw = config.find("\"raw_input\"") != std::string::npos;
  Memory memory;
  int32_t instance_device = 0;
  if (on_device) {
    TRITONBACKEND_Backend* backend = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ModelBackend(model, &backend));
    RETURN_IF_ERROR(TRITONBACKEND_BackendMemoryManager(backend, &memory.manager));
    RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceDeviceId(instance, &instance_device));
    memory.type = TRITONSERVER_MEMORY_GPU;
  }
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
    call.memory = &memory;
    TRITONSERVER_Error* failure = nullptr;
    if (on_device) {
      failure = requested_device(request, instance_device, &memory.device);
      if (failure == nullptr) failure = infer_from_device(server, memory, shape, dims, data, &call);
    } else {
      failure = infer(server, memory, shape, dims, data.data(), byte_size, &call, raw);
    }
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    if (failure == nullptr) {
      void* buffer = nullptr;
      RETURN_IF_ERROR(add_output(response, "OUTPUT0", TRITONSERVER_TYPE_FP32, shape, dims,
                                 call.values.size() * 4, &buffer));
      float* f = static_cast<float*>(buffer);
      for (size_t i = 0; i < call.values.size(); ++i) f[i] = 2 * call.values[i];
      if (on_device) {
        const int64_t one = 1;
        RETURN_IF_ERROR(add_output(response, "LIVE", TRITONSERVER_TYPE_INT64, &one, 1, 8, &buffer));
        *static_cast<int64_t*>(buffer) = live_device_allocations();
      }
    }
    TRITONSERVER_Error* answered = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    if (failure != nullptr) TRITONSERVER_ErrorDelete(failure);
    RETURN_IF_ERROR(answered);
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

// The CUDA runtime, opened at first use (see cuda_runtime.h). Where it is: the path the Python
// side found with cuda-python's pathfinder (tritium_set_cuda_runtime), else the dynamic
// loader's search for libcudart.so and its versioned names. Every call is made with the wanted
// device current and the caller's current device put back, as Triton's scoped device guard does.
#include "cuda_runtime.h"

#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

namespace {

using Status = int;  // cudaError_t; 0 is cudaSuccess
constexpr Status kMemoryAllocation = 2;
constexpr Status kInsufficientDriver = 35;
constexpr Status kNoDevice = 100;
constexpr Status kInvalidDevice = 101;

struct Runtime {
  Status (*malloc)(void**, size_t);
  Status (*free)(void*);
  Status (*memcpy)(void*, const void*, size_t, int);
  Status (*set_device)(int);
  Status (*get_device)(int*);
  const char* (*error_string)(Status);
};

std::mutex g_lock;              // guards g_path
std::string g_path;            // from tritium_set_cuda_runtime
std::once_flag g_opened;
Runtime g_runtime{};
std::string g_missing;         // why it could not be opened

void open_runtime() {
  std::string reasons;
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> guard(g_lock);
    if (!g_path.empty()) names.push_back(g_path);
  }
  for (const char* name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                           "libcudart.so.11.0"}) {
    names.emplace_back(name);
  }
  for (const auto& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      if (reasons.empty() && why != nullptr) reasons = why;
      continue;
    }
    Runtime r{};
    r.malloc = reinterpret_cast<decltype(r.malloc)>(dlsym(handle, "cudaMalloc"));
    r.free = reinterpret_cast<decltype(r.free)>(dlsym(handle, "cudaFree"));
    r.memcpy = reinterpret_cast<decltype(r.memcpy)>(dlsym(handle, "cudaMemcpy"));
    r.set_device = reinterpret_cast<decltype(r.set_device)>(dlsym(handle, "cudaSetDevice"));
    r.get_device = reinterpret_cast<decltype(r.get_device)>(dlsym(handle, "cudaGetDevice"));
    r.error_string =
        reinterpret_cast<decltype(r.error_string)>(dlsym(handle, "cudaGetErrorString"));
    if (r.malloc && r.free && r.memcpy && r.set_device && r.get_device && r.error_string) {
      g_runtime = r;
      return;
    }
    reasons = name + " lacks the CUDA runtime's functions";
    dlclose(handle);
  }
  g_missing = reasons;
}

// The runtime, or UNAVAILABLE naming what to install.
TRITONSERVER_Error* runtime(const char* caller, const Runtime** out) {
  std::call_once(g_opened, open_runtime);  // once: every later call reads g_runtime freely
  if (g_runtime.malloc == nullptr) {
    return make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                      std::string(caller) +
                          ": GPU memory needs the CUDA runtime (libcudart.so), which could not "
                          "be loaded (" + g_missing +
                          "): install the CUDA toolkit, or NVIDIA's runtime wheel and "
                          "cuda-python to find it (pip install cuda-python "
                          "'cuda-toolkit[cudart]'), or use CPU memory");
  }
  *out = &g_runtime;
  return nullptr;
}

TRITONSERVER_Error* failure(const Runtime& r, Status status, const std::string& what) {
  TRITONSERVER_Error_Code code = TRITONSERVER_ERROR_INTERNAL;
  if (status == kInvalidDevice) code = TRITONSERVER_ERROR_INVALID_ARG;
  if (status == kMemoryAllocation || status == kInsufficientDriver || status == kNoDevice) {
    code = TRITONSERVER_ERROR_UNAVAILABLE;  // out of memory, or no usable GPU here
  }
  const char* text = r.error_string(status);
  return make_error(code, what + ": " + (text != nullptr ? text : "CUDA error") + " (" +
                              std::to_string(status) + ")");
}

// Runs `call` with `device` current, then makes the caller's device current again.
template <typename Call>
TRITONSERVER_Error* on_device(int64_t device, const char* caller, const std::string& what,
                              Call call) {
  const Runtime* r = nullptr;
  TRITONSERVER_Error* err = runtime(caller, &r);
  if (err != nullptr) return err;
  if (device < 0 || device > INT32_MAX) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string(caller) + ": invalid GPU id " + std::to_string(device));
  }
  int previous = -1;
  if (r->get_device(&previous) != 0) previous = -1;
  Status status = r->set_device(static_cast<int>(device));
  if (status == 0) status = call(*r);
  if (previous >= 0 && previous != device) r->set_device(previous);
  if (status != 0) {
    return failure(*r, status, std::string(caller) + ": " + what + " on GPU " +
                                   std::to_string(device));
  }
  return nullptr;
}

}  // namespace

namespace cuda_runtime {

TRITONSERVER_Error* allocate(int64_t device, size_t byte_size, void** buffer, const char* caller) {
  *buffer = nullptr;
  return on_device(device, caller, "cannot allocate " + std::to_string(byte_size) + " bytes",
                   [&](const Runtime& r) { return r.malloc(buffer, byte_size); });
}

TRITONSERVER_Error* release(int64_t device, void* buffer, const char* caller) {
  if (buffer == nullptr) return nullptr;
  return on_device(device, caller, "cannot free device memory",
                   [&](const Runtime& r) { return r.free(buffer); });
}

TRITONSERVER_Error* copy(int64_t device, void* destination, const void* source, size_t byte_size,
                         CopyKind kind, const char* caller) {
  if (byte_size == 0) return nullptr;
  const char* direction = kind == kHostToDevice ? "to" : "from";
  return on_device(device, caller,
                   "cannot copy " + std::to_string(byte_size) + " bytes " + direction +
                       " device memory",
                   [&](const Runtime& r) {
                     return r.memcpy(destination, source, byte_size, kind);
                   });
}

}  // namespace cuda_runtime

// Where cuda-python's pathfinder found libcudart (the Python side, once, before any backend).
TRITIUM_EXPORT void tritium_set_cuda_runtime(const char* path) {
  std::lock_guard<std::mutex> guard(g_lock);
  g_path = path != nullptr ? path : "";
}

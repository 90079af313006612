// The CUDA runtime as the library uses it for TRITONSERVER_MEMORY_GPU buffers: opened with
// dlopen at the first GPU buffer, never linked, so Tritium builds and runs where there is no
// CUDA at all and only a backend that asks for GPU memory needs it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "host.h"

namespace cuda_runtime {

// cudaMemcpyKind values
enum CopyKind { kHostToDevice = 1, kDeviceToHost = 2 };

// cudaMalloc on `device` (the calling thread's current device is left as it was).
TRITONSERVER_Error* allocate(int64_t device, size_t byte_size, void** buffer, const char* caller);
TRITONSERVER_Error* release(int64_t device, void* buffer, const char* caller);
// A synchronous copy between host memory and memory on `device`.
TRITONSERVER_Error* copy(int64_t device, void* destination, const void* source, size_t byte_size,
                         CopyKind kind, const char* caller);

}  // namespace cuda_runtime

// A stand-in CUDA runtime (libcudart.so) for machines without a GPU, compiled while the tests
// run. "Device memory" is address space the host cannot touch (mapped PROT_NONE): a host read
// or write of a device pointer faults, so code that treats device memory as host memory fails
// here as it would on a GPU. Only cudaMemcpy reaches the bytes, kept in host memory beside,
// and it checks the direction it is told against where the pointers are. Devices: 0 ..
// FAKE_CUDART_DEVICES - 1 (default 1). `fake_cudart_live()` counts allocations not freed.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace {

enum Status { kSuccess = 0, kInvalidValue = 1, kMemoryAllocation = 2, kInvalidDevice = 101 };
enum Kind { kHostToHost = 0, kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3,
            kDefault = 4 };

struct Allocation {
  size_t size;
  int device;
  std::vector<char> bytes;
};

std::mutex g_lock;
std::map<char*, Allocation> g_allocations;  // by the address handed out
thread_local int t_device = 0;

int device_count() {
  const char* text = std::getenv("FAKE_CUDART_DEVICES");
  return text != nullptr ? std::atoi(text) : 1;
}

// The bytes behind `pointer` when it lies in a live allocation, with room for `count`.
char* backing(const void* pointer, size_t count, bool* is_device) {
  char* p = static_cast<char*>(const_cast<void*>(pointer));
  auto it = g_allocations.upper_bound(p);
  *is_device = false;
  if (it == g_allocations.begin()) return nullptr;
  --it;
  size_t offset = static_cast<size_t>(p - it->first);
  if (offset >= it->second.size) return nullptr;
  *is_device = true;
  if (offset + count > it->second.size) return nullptr;
  return it->second.bytes.data() + offset;
}

}  // namespace

extern "C" {

int cudaGetDeviceCount(int* count) {
  *count = device_count();
  return kSuccess;
}

int cudaSetDevice(int device) {
  if (device < 0 || device >= device_count()) return kInvalidDevice;
  t_device = device;
  return kSuccess;
}

int cudaGetDevice(int* device) {
  *device = t_device;
  return kSuccess;
}

int cudaMalloc(void** pointer, size_t size) {
  size_t span = size > 0 ? size : 1;
  void* address = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (address == MAP_FAILED) return kMemoryAllocation;
  std::lock_guard<std::mutex> guard(g_lock);
  g_allocations[static_cast<char*>(address)] = Allocation{span, t_device, std::vector<char>(span)};
  *pointer = address;
  return kSuccess;
}

int cudaFree(void* pointer) {
  if (pointer == nullptr) return kSuccess;
  std::lock_guard<std::mutex> guard(g_lock);
  auto it = g_allocations.find(static_cast<char*>(pointer));
  if (it == g_allocations.end()) return kInvalidValue;
  munmap(it->first, it->second.size);
  g_allocations.erase(it);
  return kSuccess;
}

int cudaMemcpy(void* destination, const void* source, size_t count, int kind) {
  std::lock_guard<std::mutex> guard(g_lock);
  bool destination_on_device = false, source_on_device = false;
  char* to = backing(destination, count, &destination_on_device);
  char* from = backing(source, count, &source_on_device);
  bool want_destination = kind == kHostToDevice || kind == kDeviceToDevice;
  bool want_source = kind == kDeviceToHost || kind == kDeviceToDevice;
  if (kind == kDefault) {
    want_destination = destination_on_device;
    want_source = source_on_device;
  }
  if (kind < kHostToHost || kind > kDefault || want_destination != destination_on_device ||
      want_source != source_on_device) {
    return kInvalidValue;
  }
  if ((destination_on_device && to == nullptr) || (source_on_device && from == nullptr)) {
    return kInvalidValue;  // runs past the end of its allocation
  }
  std::memcpy(destination_on_device ? to : static_cast<char*>(destination),
              source_on_device ? from : static_cast<const char*>(source), count);
  return kSuccess;
}

const char* cudaGetErrorString(int status) {
  switch (status) {
    case kSuccess: return "no error";
    case kInvalidValue: return "invalid argument";
    case kMemoryAllocation: return "out of memory";
    case kInvalidDevice: return "invalid device ordinal";
  }
  return "unrecognized error code";
}

long fake_cudart_live() {
  std::lock_guard<std::mutex> guard(g_lock);
  return static_cast<long>(g_allocations.size());
}

}  // extern "C"

// Shared helpers for the test backends (compiled against Tritium's API header only).
#pragma once
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>

#include "tritium_triton_api.h"

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    TRITONSERVER_Error* _e = (expr);          \
    if (_e != nullptr) return _e;             \
  } while (0)

inline uint64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void log_info(const std::string& msg) {
  TRITONSERVER_Error* e = TRITONSERVER_LogMessage(TRITONSERVER_LOG_INFO, __FILE__, __LINE__, msg.c_str());
  if (e != nullptr) TRITONSERVER_ErrorDelete(e);
}

// Refuse a server whose API is older than the one this backend was built against.
inline TRITONSERVER_Error* check_api_version() {
  uint32_t major = 0, minor = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ApiVersion(&major, &minor));
  if (major != TRITONBACKEND_API_VERSION_MAJOR || minor < TRITONBACKEND_API_VERSION_MINOR) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED,
                                 "triton backend API version does not support this backend");
  }
  return nullptr;
}

inline std::string model_config_json(TRITONBACKEND_Model* model) {
  TRITONSERVER_Message* message = nullptr;
  if (TRITONBACKEND_ModelConfig(model, 1, &message) != nullptr) return "";
  const char* base = nullptr;
  size_t size = 0;
  TRITONSERVER_MessageSerializeToJson(message, &base, &size);
  std::string json(base, size);
  TRITONSERVER_MessageDelete(message);
  return json;
}

// What TRITONBACKEND_InputProperties tells of an input.
struct InputInfo {
  const char* name = nullptr;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  const int64_t* shape = nullptr;
  uint32_t dims = 0, buffers = 0;
  uint64_t byte_size = 0;
};

inline TRITONSERVER_Error* read_input(TRITONBACKEND_Input* input, InputInfo* info) {
  return TRITONBACKEND_InputProperties(input, &info->name, &info->datatype, &info->shape,
                                       &info->dims, &info->byte_size, &info->buffers);
}

// Copies every buffer of `input` into `dst` (InputBuffer is chunked).
inline TRITONSERVER_Error* gather(TRITONBACKEND_Input* input, uint32_t buffer_count, char* dst) {
  for (uint32_t b = 0; b < buffer_count; ++b) {
    const void* src = nullptr;
    uint64_t size = 0;
    TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
    int64_t type_id = 0;
    RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, b, &src, &size, &type, &type_id));
    memcpy(dst, src, size);
    dst += size;
  }
  return nullptr;
}

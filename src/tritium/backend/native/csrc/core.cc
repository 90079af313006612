// Errors, messages, parameters, enum strings, API versions, logging, buffer attributes and
// the memory manager: the parts of the API that need nothing from the server but its log.
#include <cstdio>
#include <cstdlib>

#include "cuda_runtime.h"
#include "host.h"

TritiumHost g_host;
bool g_host_set = false;

TRITONSERVER_Error* make_error(TRITONSERVER_Error_Code code, const std::string& message) {
  return new TRITONSERVER_Error{code, message};
}

TRITONSERVER_Error* unsupported(const char* function) {
  return make_error(TRITONSERVER_ERROR_UNSUPPORTED,
                    std::string(function) + " is not supported by Tritium");
}

TRITONSERVER_Error* no_host(const char* function) {
  return make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                    std::string(function) + ": the Tritium server is not attached");
}

const void* Parameter::value() const {
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING: return string_value.c_str();
    case TRITONSERVER_PARAMETER_INT: return &int_value;
    case TRITONSERVER_PARAMETER_BOOL: return &bool_value;
    case TRITONSERVER_PARAMETER_DOUBLE: return &double_value;
    default: return string_value.data();
  }
}

Parameter Parameter::of_string(const char* value) {
  Parameter p;
  p.type = TRITONSERVER_PARAMETER_STRING;
  p.string_value = value != nullptr ? value : "";
  return p;
}

Parameter Parameter::of_int(int64_t value) {
  Parameter p;
  p.type = TRITONSERVER_PARAMETER_INT;
  p.int_value = value;
  return p;
}

Parameter Parameter::of_bool(bool value) {
  Parameter p;
  p.type = TRITONSERVER_PARAMETER_BOOL;
  p.bool_value = value;
  p.int_value = value ? 1 : 0;
  return p;
}

Parameter Parameter::of_double(double value) {
  Parameter p;
  p.type = TRITONSERVER_PARAMETER_DOUBLE;
  p.double_value = value;
  return p;
}

Parameter Parameter::of_host(const char* key, int type, const char* string_value,
                             int64_t int_value, double double_value) {
  Parameter p;
  p.key = key;
  p.type = static_cast<TRITONSERVER_ParameterType>(type);
  if (string_value != nullptr) p.string_value = string_value;
  p.int_value = int_value;
  p.bool_value = int_value != 0;
  p.double_value = double_value;
  return p;
}

// Installed once by the Python server when it loads the library.
TRITIUM_EXPORT void tritium_set_host(const TritiumHost* host) {
  g_host = *host;
  g_host_set = true;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string hex_string(const void* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

extern "C" {

TRITONSERVER_Error* TRITONSERVER_ApiVersion(uint32_t* major, uint32_t* minor) {
  *major = TRITONSERVER_API_VERSION_MAJOR;
  *minor = TRITONSERVER_API_VERSION_MINOR;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor) {
  *major = TRITONBACKEND_API_VERSION_MAJOR;
  *minor = TRITONBACKEND_API_VERSION_MINOR;
  return nullptr;
}

static const char* const kDataTypes[] = {"<invalid>", "BOOL", "UINT8", "UINT16", "UINT32",
                                         "UINT64", "INT8", "INT16", "INT32", "INT64", "FP16",
                                         "FP32", "FP64", "BYTES", "BF16"};
static const uint32_t kDataTypeSizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 0, 2};

const char* TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype) {
  unsigned i = static_cast<unsigned>(datatype);
  return i < sizeof(kDataTypes) / sizeof(*kDataTypes) ? kDataTypes[i] : "<invalid>";
}

TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char* dtype) {
  if (dtype == nullptr) return TRITONSERVER_TYPE_INVALID;
  for (unsigned i = 1; i < sizeof(kDataTypes) / sizeof(*kDataTypes); ++i) {
    if (strcmp(dtype, kDataTypes[i]) == 0) return static_cast<TRITONSERVER_DataType>(i);
  }
  return TRITONSERVER_TYPE_INVALID;
}

uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype) {
  unsigned i = static_cast<unsigned>(datatype);
  return i < sizeof(kDataTypeSizes) / sizeof(*kDataTypeSizes) ? kDataTypeSizes[i] : 0;
}

const char* TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype) {
  switch (memtype) {
    case TRITONSERVER_MEMORY_CPU: return "CPU";
    case TRITONSERVER_MEMORY_CPU_PINNED: return "CPU_PINNED";
    case TRITONSERVER_MEMORY_GPU: return "GPU";
  }
  return "<invalid>";
}

const char* TRITONSERVER_ParameterTypeString(TRITONSERVER_ParameterType paramtype) {
  switch (paramtype) {
    case TRITONSERVER_PARAMETER_STRING: return "STRING";
    case TRITONSERVER_PARAMETER_INT: return "INT";
    case TRITONSERVER_PARAMETER_BOOL: return "BOOL";
    case TRITONSERVER_PARAMETER_DOUBLE: return "DOUBLE";
    case TRITONSERVER_PARAMETER_BYTES: return "BYTES";
  }
  return "<invalid>";
}

const char* TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO: return "AUTO";
    case TRITONSERVER_INSTANCEGROUPKIND_CPU: return "CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU: return "GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL: return "MODEL";
  }
  return "<invalid>";
}

const char* TRITONSERVER_InferenceTraceLevelString(TRITONSERVER_InferenceTraceLevel level) {
  switch (level) {
    case TRITONSERVER_TRACE_LEVEL_DISABLED: return "DISABLED";
    case TRITONSERVER_TRACE_LEVEL_MIN: return "MIN";
    case TRITONSERVER_TRACE_LEVEL_MAX: return "MAX";
    case TRITONSERVER_TRACE_LEVEL_TIMESTAMPS: return "TIMESTAMPS";
    case TRITONSERVER_TRACE_LEVEL_TENSORS: return "TENSORS";
  }
  return "<unknown>";
}

const char* TRITONSERVER_InferenceTraceActivityString(TRITONSERVER_InferenceTraceActivity a) {
  static const char* const names[] = {
      "REQUEST_START", "QUEUE_START", "COMPUTE_START", "COMPUTE_INPUT_END",
      "COMPUTE_OUTPUT_START", "COMPUTE_END", "REQUEST_END", "TENSOR_QUEUE_INPUT",
      "TENSOR_BACKEND_INPUT", "TENSOR_BACKEND_OUTPUT", "CUSTOM_ACTIVITY"};
  unsigned i = static_cast<unsigned>(a);
  return i < sizeof(names) / sizeof(*names) ? names[i] : "<unknown>";
}

// ---- errors ----
TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg) {
  return make_error(code, msg != nullptr ? msg : "");
}

void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error) { delete error; }

TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error) {
  return error->code;
}

const char* TRITONSERVER_ErrorCodeString(TRITONSERVER_Error* error) {
  switch (error->code) {
    case TRITONSERVER_ERROR_UNKNOWN: return "Unknown";
    case TRITONSERVER_ERROR_INTERNAL: return "Internal";
    case TRITONSERVER_ERROR_NOT_FOUND: return "Not found";
    case TRITONSERVER_ERROR_INVALID_ARG: return "Invalid argument";
    case TRITONSERVER_ERROR_UNAVAILABLE: return "Unavailable";
    case TRITONSERVER_ERROR_UNSUPPORTED: return "Unsupported";
    case TRITONSERVER_ERROR_ALREADY_EXISTS: return "Already exists";
    case TRITONSERVER_ERROR_CANCELLED: return "Cancelled";
  }
  return "<invalid code>";
}

const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error) {
  return error->message.c_str();
}

// ---- messages ----
TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(
    TRITONSERVER_Message** message, const char* base, size_t byte_size) {
  TRITIUM_NOT_NULL(message, "TRITONSERVER_MessageNewFromSerializedJson");
  *message = new TRITONSERVER_Message{std::string(base, byte_size)};
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message) {
  delete message;
  return nullptr;
}

TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(
    TRITONSERVER_Message* message, const char** base, size_t* byte_size) {
  TRITIUM_NOT_NULL(message, "TRITONSERVER_MessageSerializeToJson");
  *base = message->json.c_str();
  *byte_size = message->json.size();
  return nullptr;
}

// ---- parameters ----
TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(
    const char* name, const TRITONSERVER_ParameterType type, const void* value) {
  auto* p = new TRITONSERVER_Parameter{};
  p->name = name != nullptr ? name : "";
  p->type = type;
  switch (type) {
    case TRITONSERVER_PARAMETER_STRING:
      p->string_value = static_cast<const char*>(value);
      break;
    case TRITONSERVER_PARAMETER_INT: p->int_value = *static_cast<const int64_t*>(value); break;
    case TRITONSERVER_PARAMETER_BOOL: p->bool_value = *static_cast<const bool*>(value); break;
    case TRITONSERVER_PARAMETER_DOUBLE:
      p->double_value = *static_cast<const double*>(value);
      break;
    default:  // BYTES goes through TRITONSERVER_ParameterBytesNew
      delete p;
      return nullptr;
  }
  return p;
}

TRITONSERVER_Parameter* TRITONSERVER_ParameterBytesNew(
    const char* name, const void* byte_ptr, const uint64_t size) {
  auto* p = new TRITONSERVER_Parameter{};
  p->name = name != nullptr ? name : "";
  p->type = TRITONSERVER_PARAMETER_BYTES;
  p->bytes = byte_ptr;
  p->byte_size = size;
  return p;
}

void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter* parameter) { delete parameter; }

// ---- logging ----
bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level) {
  return g_host_set ? g_host.log_enabled(level) != 0 : level != TRITONSERVER_LOG_VERBOSE;
}

TRITONSERVER_Error* TRITONSERVER_LogMessage(
    TRITONSERVER_LogLevel level, const char* filename, const int line, const char* msg) {
  if (!g_host_set) return nullptr;
  g_host.log(level, filename != nullptr ? filename : "", line, msg != nullptr ? msg : "");
  return nullptr;
}

// ---- buffer attributes ----
TRITONSERVER_Error* TRITONSERVER_BufferAttributesNew(TRITONSERVER_BufferAttributes** a) {
  *a = new TRITONSERVER_BufferAttributes{};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesDelete(TRITONSERVER_BufferAttributes* a) {
  delete a;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryTypeId(
    TRITONSERVER_BufferAttributes* a, int64_t id) {
  a->memory_type_id = id;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryType(
    TRITONSERVER_BufferAttributes* a, TRITONSERVER_MemoryType t) {
  a->memory_type = t;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetCudaIpcHandle(
    TRITONSERVER_BufferAttributes* a, void* handle) {
  a->cuda_ipc_handle = handle;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetByteSize(
    TRITONSERVER_BufferAttributes* a, size_t size) {
  a->byte_size = size;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryTypeId(
    TRITONSERVER_BufferAttributes* a, int64_t* id) {
  *id = a->memory_type_id;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryType(
    TRITONSERVER_BufferAttributes* a, TRITONSERVER_MemoryType* t) {
  *t = a->memory_type;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesCudaIpcHandle(
    TRITONSERVER_BufferAttributes* a, void** handle) {
  *handle = a->cuda_ipc_handle;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_BufferAttributesByteSize(
    TRITONSERVER_BufferAttributes* a, size_t* size) {
  *size = a->byte_size;
  return nullptr;
}

// ---- memory manager: host memory, and device memory through the CUDA runtime ----
// CPU_PINNED is served from ordinary host memory (Tritium keeps no pinned pool).
TRITONSERVER_Error* TRITONBACKEND_MemoryManagerAllocate(
    TRITONBACKEND_MemoryManager*, void** buffer, const TRITONSERVER_MemoryType memory_type,
    const int64_t memory_type_id, const uint64_t byte_size) {
  TRITIUM_NOT_NULL(buffer, "TRITONBACKEND_MemoryManagerAllocate");
  if (memory_type == TRITONSERVER_MEMORY_GPU) {
    return cuda_runtime::allocate(memory_type_id, byte_size, buffer,
                                  "TRITONBACKEND_MemoryManagerAllocate");
  }
  *buffer = malloc(byte_size > 0 ? byte_size : 1);
  if (*buffer == nullptr) {
    return make_error(TRITONSERVER_ERROR_UNAVAILABLE,
                      "TRITONBACKEND_MemoryManagerAllocate: out of memory");
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_MemoryManagerFree(
    TRITONBACKEND_MemoryManager*, void* buffer, const TRITONSERVER_MemoryType memory_type,
    const int64_t memory_type_id) {
  if (memory_type == TRITONSERVER_MEMORY_GPU) {
    return cuda_runtime::release(memory_type_id, buffer, "TRITONBACKEND_MemoryManagerFree");
  }
  free(buffer);
  return nullptr;
}

}  // extern "C"

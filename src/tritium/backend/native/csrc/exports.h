// What libtritonserver.so exports to Tritium itself (beside Triton's API): the calls the
// Python server's hot path (csrc/python/hotpath.cc) makes to build requests, run Execute and
// take the responses Execute sent.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../include/tritium_triton_api.h"

// One output of a TRITONBACKEND_Response, as tritium_response_outputs lists them.
struct TritiumOutputInfo {
  const char* name;
  int32_t datatype;
  uint32_t dims;
  const int64_t* shape;
  const void* buffer;
  uint64_t byte_size;
  int32_t preferred_type;  // the memory the backend asked for (TRITONSERVER_MemoryType)
  int64_t preferred_id;
};

typedef TRITONSERVER_Error* (*TritiumExecuteFn)(TRITONBACKEND_ModelInstance*,
                                                TRITONBACKEND_Request**, uint32_t);

extern "C" {
TRITONBACKEND_Request* tritium_request_new(TRITONBACKEND_ModelInstance* instance, uint64_t token,
                                           const char* id, uint64_t correlation_id,
                                           const char* correlation_id_string, uint32_t flags,
                                           uint64_t timeout_us);
void tritium_request_add_input(TRITONBACKEND_Request* r, const char* name, int datatype,
                               const int64_t* shape, uint32_t dims, const void* data,
                               uint64_t byte_size);
void tritium_request_add_output(TRITONBACKEND_Request* r, const char* name);
void tritium_request_add_parameter(TRITONBACKEND_Request* r, const char* key, int type,
                                   const char* string_value, int64_t int_value,
                                   double double_value);
void tritium_request_delete(TRITONBACKEND_Request* r);
TRITONSERVER_Error* tritium_execute(TritiumExecuteFn execute,
                                    TRITONBACKEND_ModelInstance* instance,
                                    TRITONBACKEND_Request** requests, uint32_t count, int queue);
uint32_t tritium_queued_count();
void tritium_queued(uint32_t index, uint64_t* token, TRITONBACKEND_Response** response,
                    uint32_t* flags, TRITONSERVER_Error** error, const uint64_t** stamps);
void tritium_queued_clear();
uint32_t tritium_response_outputs(TRITONBACKEND_Response* r, TritiumOutputInfo* out,
                                  uint32_t capacity);
void* tritium_response_take_buffer(TRITONBACKEND_Response* r, uint32_t index);
uint32_t tritium_response_parameter_count(TRITONBACKEND_Response* r);
size_t tritium_drain_finished(uint64_t* out, size_t capacity);
}

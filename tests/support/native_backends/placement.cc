// Test backend "placement": OUTPUTn = INPUTn, each output put where the request's client says
// (TRITONBACKEND_RequestOutputBufferProperties, offered CPU_PINNED on device 1 and the output's
// byte size; a client that cannot say gets host memory). The response's string parameter
// "output_properties" reports the answers: "OUTPUT0=CPU_PINNED/1 ..." or, for a failed query,
// "OUTPUT0=<code>: <message>". A request with the bool parameter "report_as_error" true gets
// the report as its error (UNKNOWN) instead, as Triton's query test backend does, so that
// outputs that would not fit where the client put them still show what was answered.
#include <string>

#include "common.h"

namespace {

std::string memory_name(TRITONSERVER_MemoryType type) {
  switch (type) {
    case TRITONSERVER_MEMORY_CPU: return "CPU";
    case TRITONSERVER_MEMORY_CPU_PINNED: return "CPU_PINNED";
    case TRITONSERVER_MEMORY_GPU: return "GPU";
  }
  return "?";
}

// Adds OUTPUT<n> for `input` to `response`, placed as the client answers; notes the answer.
TRITONSERVER_Error* place(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response,
                          TRITONBACKEND_Input* input, std::string* report) {
  InputInfo in;
  RETURN_IF_ERROR(read_input(input, &in));
  std::string output_name = "OUTPUT" + std::string(in.name).substr(5);
  size_t wanted_size = in.byte_size;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU_PINNED;
  int64_t type_id = 1;
  TRITONSERVER_Error* query = TRITONBACKEND_RequestOutputBufferProperties(
      request, output_name.c_str(), &wanted_size, &type, &type_id);
  *report += (report->empty() ? "" : " ") + output_name + "=";
  if (query != nullptr) {
    *report += std::string(TRITONSERVER_ErrorCodeString(query)) + ": " +
               TRITONSERVER_ErrorMessage(query);
    TRITONSERVER_ErrorDelete(query);
    type = TRITONSERVER_MEMORY_CPU;
    type_id = 0;
  } else {
    *report += memory_name(type) + "/" + std::to_string(type_id);
  }
  TRITONBACKEND_Output* output = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &output, output_name.c_str(),
                                               in.datatype, in.shape, in.dims));
  void* buffer = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(output, &buffer, in.byte_size, &type, &type_id));
  if (type == TRITONSERVER_MEMORY_GPU) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "placement writes host memory only");
  }
  return gather(input, in.buffers, static_cast<char*>(buffer));
}

bool report_as_error(TRITONBACKEND_Request* request) {
  uint32_t count = 0;
  if (TRITONBACKEND_RequestParameterCount(request, &count) != nullptr) return false;
  for (uint32_t i = 0; i < count; ++i) {
    const char* key = nullptr;
    TRITONSERVER_ParameterType type;
    const void* value = nullptr;
    if (TRITONBACKEND_RequestParameter(request, i, &key, &type, &value) == nullptr &&
        std::string(key) == "report_as_error" && type == TRITONSERVER_PARAMETER_BOOL) {
      return *static_cast<const bool*>(value);
    }
  }
  return false;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance*, TRITONBACKEND_Request** requests, const uint32_t count) {
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_Request* request = requests[r];
    TRITONBACKEND_Response* response = nullptr;
    RETURN_IF_ERROR(TRITONBACKEND_ResponseNew(&response, request));
    uint32_t input_count = 0;
    RETURN_IF_ERROR(TRITONBACKEND_RequestInputCount(request, &input_count));
    std::string report;
    TRITONSERVER_Error* failure = nullptr;
    for (uint32_t i = 0; i < input_count && failure == nullptr; ++i) {
      TRITONBACKEND_Input* input = nullptr;
      RETURN_IF_ERROR(TRITONBACKEND_RequestInputByIndex(request, i, &input));
      failure = place(request, response, input, &report);
    }
    if (failure == nullptr && report_as_error(request)) {
      failure = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNKNOWN, report.c_str());
    } else if (failure == nullptr) {
      failure = TRITONBACKEND_ResponseSetStringParameter(response, "output_properties",
                                                         report.c_str());
    }
    TRITONSERVER_Error* sent =
        TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    if (failure != nullptr) TRITONSERVER_ErrorDelete(failure);
    RETURN_IF_ERROR(sent);
    RETURN_IF_ERROR(TRITONBACKEND_RequestRelease(request, TRITONSERVER_REQUEST_RELEASE_ALL));
  }
  return nullptr;
}

}  // extern "C"

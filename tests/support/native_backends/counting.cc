// Test backend "counting": statistics reported through the C API, with made-up durations that
// a test can check to the nanosecond. Input IN (INT32 [n]), output OUT (INT32 [1]). What the
// model's config parameter "report" says:
//   "none":      answers OUT = IN[0] and reports nothing (as NVIDIA's minimal backend);
//   "batch":     answers OUT = IN[0], reports each request (before sending the response when
//                IN[0] is even, after it when odd or 0, as a null request's zeros; IN[0] < 0:
//                an error response reported as a failure) and the whole batch: input
//                1000 ns, infer 2000 ns, output 3000 ns;
//   "responses": decoupled, sends IN[0] responses OUT = i, each reported as a response of
//                1000 ns compute infer and 2000 ns compute output, then a flags-only FINAL
//                reported as an empty response of 500 ns (IN[0] < 0: one error response,
//                reported as a failed response of 700 ns); request and batch reported too.
// With config parameter "memory_usage", the model reports holding 24 bytes of CPU memory and
// 1000 of GPU 0's (then, replacing that, 1000 of GPU 0's alone), and each instance 64 bytes of
// pinned memory and 500 of GPU 0's (TRITONBACKEND_Model{,Instance}ReportMemoryUsage).
#include <string>
#include <utility>
#include <vector>

#include "common.h"

enum class Report { kNone, kBatch, kResponses };

static TRITONSERVER_Error* report_response(TRITONBACKEND_ModelInstance* instance,
                                           TRITONBACKEND_ResponseFactory* factory,
                                           uint64_t start, uint64_t output_start, uint64_t end,
                                           TRITONSERVER_Error* error) {
  TRITONBACKEND_ModelInstanceResponseStatistics* stats = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceResponseStatisticsNew(&stats));
  TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(stats, instance);
  TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(stats, factory);
  TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(stats, start);
  if (output_start != 0) {
    TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(stats, output_start);
  }
  TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(stats, end);
  TRITONBACKEND_ModelInstanceResponseStatisticsSetError(stats, error);
  TRITONSERVER_Error* reported = TRITONBACKEND_ModelInstanceReportResponseStatistics(stats);
  TRITONBACKEND_ModelInstanceResponseStatisticsDelete(stats);
  return reported;
}

static TRITONSERVER_Error* send_value(TRITONBACKEND_ResponseFactory* factory, int32_t value,
                                      uint32_t flags) {
  TRITONBACKEND_Response* response = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseNewFromFactory(&response, factory));
  const int64_t shape[1] = {1};
  TRITONBACKEND_Output* out = nullptr;
  void* buffer = nullptr;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t type_id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseOutput(response, &out, "OUT", TRITONSERVER_TYPE_INT32,
                                               shape, 1));
  RETURN_IF_ERROR(TRITONBACKEND_OutputBuffer(out, &buffer, 4, &type, &type_id));
  memcpy(buffer, &value, 4);
  return TRITONBACKEND_ResponseSend(response, flags, nullptr);
}

static TRITONSERVER_Error* first_value(TRITONBACKEND_Request* request, int32_t* value) {
  TRITONBACKEND_Input* input = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_RequestInput(request, "IN", &input));
  const void* data = nullptr;
  uint64_t size = 0;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t type_id = 0;
  RETURN_IF_ERROR(TRITONBACKEND_InputBuffer(input, 0, &data, &size, &type, &type_id));
  memcpy(value, data, 4);
  return nullptr;
}

// One request of a "responses" model: its stream of responses, each reported.
static TRITONSERVER_Error* stream(TRITONBACKEND_ModelInstance* instance,
                                  TRITONBACKEND_Request* request, int32_t count) {
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseFactoryNew(&factory, request));
  TRITONSERVER_Error* err = nullptr;
  if (count < 0) {
    TRITONSERVER_Error* failure =
        TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "a negative count");
    const uint64_t start = now_ns();
    err = report_response(instance, factory, start, 0, start + 700, failure);
    TRITONBACKEND_Response* response = nullptr;
    if (err == nullptr) err = TRITONBACKEND_ResponseNewFromFactory(&response, factory);
    if (err == nullptr) {
      err = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    }
    TRITONSERVER_ErrorDelete(failure);
  } else {
    for (int32_t i = 0; err == nullptr && i < count; ++i) {
      const uint64_t start = now_ns();
      err = report_response(instance, factory, start, start + 1000, start + 3000, nullptr);
      if (err == nullptr) err = send_value(factory, i, 0);
    }
    if (err == nullptr) {
      const uint64_t start = now_ns();
      err = report_response(instance, factory, start, 0, start + 500, nullptr);
    }
    if (err == nullptr) {
      err = TRITONBACKEND_ResponseFactorySendFlags(factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
    }
  }
  TRITONBACKEND_ResponseFactoryDelete(factory);
  return err;
}

// One request of a "none" or "batch" model: OUT = IN[0] (an error when negative).
static TRITONSERVER_Error* answer(TRITONBACKEND_ModelInstance* instance,
                                  TRITONBACKEND_Request* request, int32_t value, Report report,
                                  uint64_t exec_start) {
  const bool success = value >= 0;
  const bool report_first = value % 2 == 0 && value != 0;
  auto report_request = [&]() {
    return TRITONBACKEND_ModelInstanceReportStatistics(instance, request, success, exec_start,
                                                       exec_start + 1000, exec_start + 3000,
                                                       exec_start + 6000);
  };
  if (report == Report::kBatch && report_first) RETURN_IF_ERROR(report_request());
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ResponseFactoryNew(&factory, request));
  TRITONSERVER_Error* err = nullptr;
  if (success) {
    err = send_value(factory, value, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
  } else {
    TRITONBACKEND_Response* response = nullptr;
    TRITONSERVER_Error* failure =
        TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, "a negative value");
    err = TRITONBACKEND_ResponseNewFromFactory(&response, factory);
    if (err == nullptr) {
      err = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, failure);
    }
    TRITONSERVER_ErrorDelete(failure);
  }
  TRITONBACKEND_ResponseFactoryDelete(factory);
  RETURN_IF_ERROR(err);
  if (report == Report::kBatch && !report_first) RETURN_IF_ERROR(report_request());
  return nullptr;
}

// Builds the attributes of `usage` ((memory type, id, bytes) each) and calls `report` on them.
template <typename Report>
static TRITONSERVER_Error* report_memory(
    const std::vector<std::pair<TRITONSERVER_MemoryType, size_t>>& usage, Report report) {
  std::vector<TRITONSERVER_BufferAttributes*> attributes;
  for (const auto& [type, bytes] : usage) {
    TRITONSERVER_BufferAttributes* a = nullptr;
    RETURN_IF_ERROR(TRITONSERVER_BufferAttributesNew(&a));
    TRITONSERVER_BufferAttributesSetMemoryType(a, type);
    TRITONSERVER_BufferAttributesSetMemoryTypeId(a, 0);
    TRITONSERVER_BufferAttributesSetByteSize(a, bytes);
    attributes.push_back(a);
  }
  TRITONSERVER_Error* err = report(attributes.data(), static_cast<uint32_t>(attributes.size()));
  for (auto* a : attributes) TRITONSERVER_BufferAttributesDelete(a);
  return err;
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  if (model_config_json(model).find("\"memory_usage\"") == std::string::npos) return nullptr;
  return report_memory({{TRITONSERVER_MEMORY_CPU_PINNED, 64}, {TRITONSERVER_MEMORY_GPU, 500}},
                       [&](TRITONSERVER_BufferAttributes** a, uint32_t n) {
                         return TRITONBACKEND_ModelInstanceReportMemoryUsage(instance, a, n);
                       });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  const std::string config = model_config_json(model);
  if (config.find("\"memory_usage\"") != std::string::npos) {
    auto to_model = [&](TRITONSERVER_BufferAttributes** a, uint32_t n) {
      return TRITONBACKEND_ModelReportMemoryUsage(model, a, n);
    };
    RETURN_IF_ERROR(report_memory({{TRITONSERVER_MEMORY_CPU, 24}, {TRITONSERVER_MEMORY_GPU, 1000}},
                                  to_model));
    RETURN_IF_ERROR(report_memory({{TRITONSERVER_MEMORY_GPU, 1000}}, to_model));  // replaces
  }
  Report* report = new Report(Report::kNone);
  if (config.find("\"batch\"") != std::string::npos) *report = Report::kBatch;
  if (config.find("\"responses\"") != std::string::npos) *report = Report::kResponses;
  return TRITONBACKEND_ModelSetState(model, report);
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  void* state = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  delete static_cast<Report*>(state);
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests, const uint32_t count) {
  TRITONBACKEND_Model* model = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceModel(instance, &model));
  void* state = nullptr;
  RETURN_IF_ERROR(TRITONBACKEND_ModelState(model, &state));
  const Report report = *static_cast<Report*>(state);
  const uint64_t exec_start = now_ns();
  for (uint32_t r = 0; r < count; ++r) {
    int32_t value = 0;
    RETURN_IF_ERROR(first_value(requests[r], &value));
    if (report == Report::kResponses) {
      RETURN_IF_ERROR(stream(instance, requests[r], value));
      RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceReportStatistics(
          instance, requests[r], value >= 0, exec_start, exec_start + 1000, exec_start + 3000,
          exec_start + 6000));
    } else {
      RETURN_IF_ERROR(answer(instance, requests[r], value, report, exec_start));
    }
  }
  if (report != Report::kNone) {
    RETURN_IF_ERROR(TRITONBACKEND_ModelInstanceReportBatchStatistics(
        instance, count, exec_start, exec_start + 1000, exec_start + 3000, exec_start + 6000));
  }
  for (uint32_t r = 0; r < count; ++r) {
    TRITONBACKEND_RequestRelease(requests[r], TRITONSERVER_REQUEST_RELEASE_ALL);
  }
  return nullptr;
}

}  // extern "C"

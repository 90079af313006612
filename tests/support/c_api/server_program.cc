// A C++ program that embeds a server through Triton's C API, as Triton's own `simple.cc`
// example does: options, TRITONSERVER_ServerNew, readiness, metadata, an inference with a
// response allocator, statistics, metrics, model control, delete, and a second server after.
// It links Tritium's libtritonserver.so and runs no Python of its own. Each step prints one
// line "<step> <result>", which the test reads.
//
//   server_program simple <repository> <backend directory>
//   server_program errors <repository> <backend directory>
//   server_program cancel <repository> <backend directory>
//   server_program exit <repository> <backend directory>
//   server_program placement <repository> <backend directory>
//   server_program cast <repository> <backend directory>
//   server_program missing <repository>
#include <dirent.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "triton/core/tritonbackend.h"
#include "triton/core/tritonserver.h"

namespace {

[[noreturn]] void fail(const std::string& step, TRITONSERVER_Error* err) {
  std::printf("FAILED %s: %s %s\n", step.c_str(), TRITONSERVER_ErrorCodeString(err),
              TRITONSERVER_ErrorMessage(err));
  std::fflush(stdout);
  std::exit(1);
}

void check(const std::string& step, TRITONSERVER_Error* err) {
  if (err != nullptr) fail(step, err);
}

// "<step> <CODE> <message>" for a call that must fail (or "<step> OK").
void expect_error(const std::string& step, TRITONSERVER_Error* err) {
  if (err == nullptr) {
    std::printf("%s OK\n", step.c_str());
  } else {
    std::printf("%s %s %s\n", step.c_str(), TRITONSERVER_ErrorCodeString(err),
                TRITONSERVER_ErrorMessage(err));
    TRITONSERVER_ErrorDelete(err);
  }
}

std::string message_json(TRITONSERVER_Message* message) {
  const char* base = nullptr;
  size_t size = 0;
  check("serialize", TRITONSERVER_MessageSerializeToJson(message, &base, &size));
  std::string json(base, size);
  TRITONSERVER_MessageDelete(message);
  return json;
}

// The response allocator: host memory from malloc, whatever the server prefers.
TRITONSERVER_Error* allocate(TRITONSERVER_ResponseAllocator*, const char*, size_t byte_size,
                             TRITONSERVER_MemoryType, int64_t, void*, void** buffer,
                             void** buffer_userp, TRITONSERVER_MemoryType* actual_type,
                             int64_t* actual_id) {
  *buffer = byte_size > 0 ? std::malloc(byte_size) : nullptr;
  *buffer_userp = nullptr;
  *actual_type = TRITONSERVER_MEMORY_CPU;
  *actual_id = 0;
  return nullptr;
}

TRITONSERVER_Error* release(TRITONSERVER_ResponseAllocator*, void* buffer, void*, size_t,
                            TRITONSERVER_MemoryType, int64_t) {
  std::free(buffer);
  return nullptr;
}

struct Completion {
  std::mutex mutex;
  std::condition_variable cv;
  TRITONSERVER_InferenceResponse* response = nullptr;
  bool responded = false, released = false;
  // Whether the request was already released when its final response came (programs such as
  // Triton's simple.cc reuse or delete the request as soon as they have the response).
  bool released_first = false;
};

void on_release(TRITONSERVER_InferenceRequest* request, const uint32_t, void* userp) {
  auto* done = static_cast<Completion*>(userp);
  TRITONSERVER_InferenceRequestDelete(request);
  std::lock_guard<std::mutex> lock(done->mutex);
  done->released = true;
  done->cv.notify_all();
}

void on_response(TRITONSERVER_InferenceResponse* response, const uint32_t, void* userp) {
  auto* done = static_cast<Completion*>(userp);
  std::lock_guard<std::mutex> lock(done->mutex);
  done->response = response;
  done->responded = true;
  done->released_first = done->released;
  done->cv.notify_all();
}

// One output of a response, as TRITONSERVER_InferenceResponseOutput tells it.
struct Output {
  const char* name = nullptr;
  TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INVALID;
  const int64_t* shape = nullptr;
  uint64_t dims = 0;
  const void* base = nullptr;
  size_t size = 0;
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  int64_t memory_id = 0;
  void* userp = nullptr;
};

Output read_output(TRITONSERVER_InferenceResponse* response, uint32_t index) {
  Output o;
  check("output", TRITONSERVER_InferenceResponseOutput(response, index, &o.name, &o.datatype,
                                                       &o.shape, &o.dims, &o.base, &o.size,
                                                       &o.memory_type, &o.memory_id, &o.userp));
  return o;
}

// Sends INPUT0 = 0..n-1 and INPUT1 = 1 (INT32, shape [1, n]; `extra` bytes more data than
// that) to `model`; prints the outputs' sums as "<step> OUTPUT0=<sum> OUTPUT1=<sum>", or the
// response's error (deleted by this caller, as Triton's callers do, before the response).
void infer_add_sub(TRITONSERVER_Server* server, const std::string& step, const char* model,
                   int64_t n, TRITONSERVER_DataType datatype = TRITONSERVER_TYPE_INT32,
                   size_t extra = 0) {
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  check("allocator", TRITONSERVER_ResponseAllocatorNew(&allocator, allocate, release, nullptr));
  TRITONSERVER_InferenceRequest* request = nullptr;
  TRITONSERVER_Error* err = TRITONSERVER_InferenceRequestNew(&request, server, model, -1);
  if (err != nullptr) {
    expect_error(step, err);
    TRITONSERVER_ResponseAllocatorDelete(allocator);
    return;
  }
  Completion done;
  check("release callback", TRITONSERVER_InferenceRequestSetReleaseCallback(request, on_release, &done));
  check("response callback", TRITONSERVER_InferenceRequestSetResponseCallback(
                                 request, allocator, nullptr, on_response, &done));
  check("request id", TRITONSERVER_InferenceRequestSetId(request, "c-api-1"));
  std::vector<int32_t> input0(n + 1), input1(n + 1, 1);
  std::vector<float> float0(n + 1), float1(n + 1, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    input0[i] = static_cast<int32_t>(i);
    float0[i] = static_cast<float>(i);
  }
  const int64_t batched[2] = {1, n};
  const bool fp32 = datatype == TRITONSERVER_TYPE_FP32;
  // The FP32 model (add_sub) has no batch dimension: its shape is [n].
  const int64_t* shape = fp32 ? batched + 1 : batched;
  const uint32_t dims = fp32 ? 1 : 2;
  const void* data0 = fp32 ? static_cast<const void*>(float0.data()) : input0.data();
  const void* data1 = fp32 ? static_cast<const void*>(float1.data()) : input1.data();
  const size_t bytes = static_cast<size_t>(n) * 4 + extra;
  for (const char* name : {"INPUT0", "INPUT1"}) {
    check("add input", TRITONSERVER_InferenceRequestAddInput(request, name, datatype, shape, dims));
    check("append data", TRITONSERVER_InferenceRequestAppendInputData(
                             request, name, std::strcmp(name, "INPUT0") == 0 ? data0 : data1,
                             bytes, TRITONSERVER_MEMORY_CPU, 0));
  }
  check("requested output", TRITONSERVER_InferenceRequestAddRequestedOutput(request, "OUTPUT0"));
  check("requested output", TRITONSERVER_InferenceRequestAddRequestedOutput(request, "OUTPUT1"));
  err = TRITONSERVER_ServerInferAsync(server, request, nullptr);
  if (err != nullptr) {  // not sent: the request is still the caller's
    expect_error(step, err);
    TRITONSERVER_InferenceRequestDelete(request);
    TRITONSERVER_ResponseAllocatorDelete(allocator);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(done.mutex);
    done.cv.wait(lock, [&] { return done.responded && done.released; });
  }
  TRITONSERVER_InferenceResponse* response = done.response;
  err = TRITONSERVER_InferenceResponseError(response);
  if (err != nullptr) {
    expect_error(step, err);
  } else {
    const char* id = nullptr;
    check("response id", TRITONSERVER_InferenceResponseId(response, &id));
    std::string line = step + " id=" + id;
    if (!done.released_first) line += " (response before release)";
    uint32_t count = 0;
    check("output count", TRITONSERVER_InferenceResponseOutputCount(response, &count));
    for (uint32_t i = 0; i < count; ++i) {
      const Output out = read_output(response, i);
      double sum = 0;
      for (size_t k = 0; k < out.size / 4; ++k) {
        sum += fp32 ? static_cast<const float*>(out.base)[k]
                    : static_cast<const int32_t*>(out.base)[k];
      }
      line += std::string(" ") + out.name + "=" + std::to_string(static_cast<long long>(sum)) +
              "/" + TRITONSERVER_DataTypeString(out.datatype) + "/dims" + std::to_string(out.dims);
    }
    std::printf("%s\n", line.c_str());
  }
  TRITONSERVER_InferenceResponseDelete(response);
  TRITONSERVER_ResponseAllocatorDelete(allocator);
}

// A request to `model` whose response and release reach `done`.
TRITONSERVER_InferenceRequest* new_request(TRITONSERVER_Server* server, const char* model,
                                           TRITONSERVER_ResponseAllocator* allocator,
                                           Completion* done) {
  TRITONSERVER_InferenceRequest* request = nullptr;
  check("request", TRITONSERVER_InferenceRequestNew(&request, server, model, -1));
  check("release callback", TRITONSERVER_InferenceRequestSetReleaseCallback(request, on_release, done));
  check("response callback", TRITONSERVER_InferenceRequestSetResponseCallback(
                                 request, allocator, nullptr, on_response, done));
  return request;
}

// Sends one BYTES element "Example input string" to the "strings" model (identity, BYTES [1])
// in two buffers split `split` bytes in; prints "<step> OK OUTPUT0=<bytes>" or the error.
void infer_strings(TRITONSERVER_Server* server, const std::string& step, size_t split) {
  const std::string text = "Example input string";
  std::string data(4, '\0');
  const uint32_t length = static_cast<uint32_t>(text.size());
  std::memcpy(&data[0], &length, 4);
  data += text;
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  check("allocator", TRITONSERVER_ResponseAllocatorNew(&allocator, allocate, release, nullptr));
  Completion done;
  TRITONSERVER_InferenceRequest* request = new_request(server, "strings", allocator, &done);
  const int64_t shape[2] = {1, 1};
  check("add input", TRITONSERVER_InferenceRequestAddInput(request, "INPUT0", TRITONSERVER_TYPE_BYTES, shape, 2));
  check("append data", TRITONSERVER_InferenceRequestAppendInputData(
                           request, "INPUT0", data.data(), split, TRITONSERVER_MEMORY_CPU, 0));
  check("append data", TRITONSERVER_InferenceRequestAppendInputData(
                           request, "INPUT0", data.data() + split, data.size() - split,
                           TRITONSERVER_MEMORY_CPU, 0));
  // Data for a host policy no instance has (as Triton's memory_alloc QA program adds): kept
  // apart from the input's data, which it must not lengthen.
  static const char other[8] = {0};
  check("append policy data", TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
                                  request, "INPUT0", other, sizeof(other),
                                  TRITONSERVER_MEMORY_CPU, 0, "fake_host_policy_name"));
  TRITONSERVER_Error* err = TRITONSERVER_ServerInferAsync(server, request, nullptr);
  if (err != nullptr) {  // refused: the request is still the caller's, not released
    expect_error(step, err);
    TRITONSERVER_InferenceRequestDelete(request);
  } else {
    std::unique_lock<std::mutex> lock(done.mutex);
    done.cv.wait(lock, [&] { return done.responded && done.released; });
    const Output out = read_output(done.response, 0);
    std::printf("%s OK %s=%zu\n", step.c_str(), out.name, out.size);
    TRITONSERVER_InferenceResponseDelete(done.response);
  }
  TRITONSERVER_ResponseAllocatorDelete(allocator);
}

// Whether the server's Prometheus text names `family`.
bool metrics_show(TRITONSERVER_Server* server, const std::string& family) {
  TRITONSERVER_Metrics* metrics = nullptr;
  check("metrics", TRITONSERVER_ServerMetrics(server, &metrics));
  const char* base = nullptr;
  size_t size = 0;
  check("metrics text", TRITONSERVER_MetricsFormatted(metrics, TRITONSERVER_METRIC_PROMETHEUS, &base, &size));
  const bool shown = std::string(base, size).find(family) != std::string::npos;
  check("metrics delete", TRITONSERVER_MetricsDelete(metrics));
  return shown;
}

// A custom family shows on the metrics only while it has a metric; metric arguments are
// checked against the family's kind.
void custom_metrics(TRITONSERVER_Server* server) {
  TRITONSERVER_MetricFamily* family = nullptr;
  check("family", TRITONSERVER_MetricFamilyNew(&family, TRITONSERVER_METRIC_KIND_HISTOGRAM,
                                               "c_api_latency", "latency seen by the program"));
  std::string shown = metrics_show(server, "c_api_latency") ? "shown" : "hidden";
  TRITONSERVER_Metric* metric = nullptr;
  expect_error("histogram_without_args", TRITONSERVER_MetricNewWithArgs(&metric, family, nullptr, 0, nullptr));
  TRITONSERVER_MetricArgs* args = nullptr;
  check("args", TRITONSERVER_MetricArgsNew(&args));
  expect_error("histogram_args_unset", TRITONSERVER_MetricNewWithArgs(&metric, family, nullptr, 0, args));
  const double buckets[2] = {0.5, 1.0};
  check("buckets", TRITONSERVER_MetricArgsSetHistogram(args, buckets, 2));
  check("metric", TRITONSERVER_MetricNewWithArgs(&metric, family, nullptr, 0, args));
  shown += metrics_show(server, "c_api_latency") ? " shown" : " hidden";
  check("metric delete", TRITONSERVER_MetricDelete(metric));
  shown += metrics_show(server, "c_api_latency") ? " shown" : " hidden";
  std::printf("histogram_family %s\n", shown.c_str());
  TRITONSERVER_MetricFamily* gauges = nullptr;
  check("family", TRITONSERVER_MetricFamilyNew(&gauges, TRITONSERVER_METRIC_KIND_GAUGE,
                                               "c_api_level", "a level"));
  expect_error("gauge_with_args", TRITONSERVER_MetricNewWithArgs(&metric, gauges, nullptr, 0, args));
  check("args delete", TRITONSERVER_MetricArgsDelete(args));
  check("family delete", TRITONSERVER_MetricFamilyDelete(gauges));
  check("family delete", TRITONSERVER_MetricFamilyDelete(family));
}

TRITONSERVER_ServerOptions* options_for(const char* repository, const char* backends,
                                        TRITONSERVER_ModelControlMode mode) {
  TRITONSERVER_ServerOptions* options = nullptr;
  check("options", TRITONSERVER_ServerOptionsNew(&options));
  check("repository", TRITONSERVER_ServerOptionsSetModelRepositoryPath(options, repository));
  check("control mode", TRITONSERVER_ServerOptionsSetModelControlMode(options, mode));
  check("log verbose", TRITONSERVER_ServerOptionsSetLogVerbose(options, 0));
  check("log info", TRITONSERVER_ServerOptionsSetLogInfo(options, false));
  check("backend directory", TRITONSERVER_ServerOptionsSetBackendDirectory(options, backends));
  check("strict", TRITONSERVER_ServerOptionsSetStrictModelConfig(options, true));
  check("server id", TRITONSERVER_ServerOptionsSetServerId(options, "embedded"));
  check("gpu metrics", TRITONSERVER_ServerOptionsSetGpuMetrics(options, false));
  check("exit timeout", TRITONSERVER_ServerOptionsSetExitTimeout(options, 10));
  return options;
}

TRITONSERVER_Server* new_server(const char* repository, const char* backends,
                                TRITONSERVER_ModelControlMode mode) {
  TRITONSERVER_ServerOptions* options = options_for(repository, backends, mode);
  TRITONSERVER_Server* server = nullptr;
  check("server new", TRITONSERVER_ServerNew(&server, options));
  check("options delete", TRITONSERVER_ServerOptionsDelete(options));
  // As simple.cc: wait until the server is live and ready.
  for (int i = 0; i < 300; ++i) {
    bool live = false, ready = false;
    check("live", TRITONSERVER_ServerIsLive(server, &live));
    check("ready", TRITONSERVER_ServerIsReady(server, &ready));
    if (live && ready) return server;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::printf("FAILED ready: the server never became ready\n");
  std::exit(1);
}

int simple(const char* repository, const char* backends) {
  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_NONE);
  std::printf("ready true\n");
  TRITONSERVER_Message* message = nullptr;
  check("metadata", TRITONSERVER_ServerMetadata(server, &message));
  std::printf("metadata %s\n", message_json(message).c_str());
  check("model metadata", TRITONSERVER_ServerModelMetadata(server, "simple", -1, &message));
  std::printf("model_metadata %s\n", message_json(message).c_str());
  check("model config", TRITONSERVER_ServerModelConfig(server, "simple", -1, 1, &message));
  std::printf("model_config %s\n", message_json(message).c_str());
  check("index", TRITONSERVER_ServerModelIndex(server, 0, &message));
  std::printf("index %s\n", message_json(message).c_str());
  infer_add_sub(server, "infer_simple", "simple", 16);
  infer_add_sub(server, "infer_native", "native_identity", 16);
  infer_add_sub(server, "infer_python", "add_sub", 4, TRITONSERVER_TYPE_FP32);
  check("statistics", TRITONSERVER_ServerModelStatistics(server, "simple", -1, &message));
  std::printf("statistics %s\n", message_json(message).c_str());
  TRITONSERVER_Metrics* metrics = nullptr;
  check("metrics", TRITONSERVER_ServerMetrics(server, &metrics));
  const char* base = nullptr;
  size_t size = 0;
  check("metrics text", TRITONSERVER_MetricsFormatted(metrics, TRITONSERVER_METRIC_PROMETHEUS, &base, &size));
  std::string text(base, size);
  size_t at = text.find("nv_inference_count{model=\"simple\"");
  std::printf("metrics %s\n", at == std::string::npos ? "missing" : text.substr(at, text.find('\n', at) - at).c_str());
  check("metrics delete", TRITONSERVER_MetricsDelete(metrics));
  check("stop", TRITONSERVER_ServerStop(server));
  bool live = true;
  check("live after stop", TRITONSERVER_ServerIsLive(server, &live));
  std::printf("live_after_stop %s\n", live ? "true" : "false");
  check("delete", TRITONSERVER_ServerDelete(server));
  std::printf("deleted true\n");

  // A second server in the same process, after the first is gone.
  server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_EXPLICIT);
  bool ready = true;
  check("model ready", TRITONSERVER_ServerModelIsReady(server, "simple", -1, &ready));
  std::printf("second_simple_ready %s\n", ready ? "true" : "false");
  check("load", TRITONSERVER_ServerLoadModel(server, "simple"));
  check("model ready", TRITONSERVER_ServerModelIsReady(server, "simple", -1, &ready));
  std::printf("second_simple_loaded %s\n", ready ? "true" : "false");
  infer_add_sub(server, "second_infer", "simple", 16);
  check("unload", TRITONSERVER_ServerUnloadModel(server, "simple"));
  check("delete", TRITONSERVER_ServerDelete(server));
  std::printf("done\n");
  return 0;
}

int errors(const char* repository, const char* backends) {
  TRITONSERVER_ServerOptions* bad = nullptr;
  check("options", TRITONSERVER_ServerOptionsNew(&bad));
  expect_error("bad_control_mode", TRITONSERVER_ServerOptionsSetModelControlMode(
                                       bad, static_cast<TRITONSERVER_ModelControlMode>(7)));
  expect_error("bad_device_limit", TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
                                       bad, TRITONSERVER_INSTANCEGROUPKIND_GPU, 0, 1.5));
  TRITONSERVER_ServerOptionsDelete(bad);

  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_POLL);
  TRITONSERVER_ServerOptions* options = options_for(repository, backends, TRITONSERVER_MODEL_CONTROL_POLL);
  TRITONSERVER_Server* second = nullptr;
  expect_error("second_server", TRITONSERVER_ServerNew(&second, options));
  TRITONSERVER_ServerOptionsDelete(options);
  infer_add_sub(server, "unknown_model", "no_such_model", 16);
  TRITONSERVER_InferenceRequest* unmade = nullptr;
  expect_error("request_for_unknown_version",
               TRITONSERVER_InferenceRequestNew(&unmade, server, "simple", 7));
  infer_add_sub(server, "wrong_shape", "simple", 3);
  infer_add_sub(server, "byte_size_mismatch", "simple", 16, TRITONSERVER_TYPE_INT32, 4);
  infer_add_sub(server, "model_error", "failing", 4, TRITONSERVER_TYPE_FP32);
  infer_strings(server, "split_length", 2);
  infer_strings(server, "split_content", 10);
  custom_metrics(server);
  TRITONSERVER_Message* message = nullptr;
  check("index", TRITONSERVER_ServerModelIndex(server, TRITONSERVER_INDEX_FLAG_READY, &message));
  std::printf("ready_index %s\n", message_json(message).c_str());
  expect_error("unknown_statistics", TRITONSERVER_ServerModelStatistics(server, "no_such_model", -1, &message));
  expect_error("poll", TRITONSERVER_ServerPollModelRepository(server));
  expect_error("load_in_poll_mode", TRITONSERVER_ServerLoadModel(server, "simple"));
  TRITONSERVER_Metrics* metrics = nullptr;
  check("metrics", TRITONSERVER_ServerMetrics(server, &metrics));
  const char* base = nullptr;
  size_t size = 0;
  expect_error("bad_metric_format", TRITONSERVER_MetricsFormatted(
                                        metrics, static_cast<TRITONSERVER_MetricFormat>(3), &base, &size));
  TRITONSERVER_MetricsDelete(metrics);
  infer_add_sub(server, "still_serving", "simple", 16);
  check("delete", TRITONSERVER_ServerDelete(server));
  bool live = true;
  expect_error("live_after_delete", TRITONSERVER_ServerIsLive(server, &live));
  std::printf("done\n");
  return 0;
}

// A request to the "slow" model (FP32 [4], one instance that sleeps) left in flight.
struct Flight {
  Completion done;
  TRITONSERVER_InferenceRequest* request = nullptr;
  std::vector<float> data = std::vector<float>(4, 1.0f);
};

void send_slow(TRITONSERVER_Server* server, TRITONSERVER_ResponseAllocator* allocator, Flight* f,
               TRITONSERVER_InferenceRequestReleaseFn_t released = on_release) {
  check("slow request", TRITONSERVER_InferenceRequestNew(&f->request, server, "slow", -1));
  const int64_t shape[1] = {4};
  for (const char* name : {"INPUT0", "INPUT1"}) {
    check("add input", TRITONSERVER_InferenceRequestAddInput(f->request, name, TRITONSERVER_TYPE_FP32, shape, 1));
    check("append data", TRITONSERVER_InferenceRequestAppendInputData(
                             f->request, name, f->data.data(), 16, TRITONSERVER_MEMORY_CPU, 0));
  }
  check("release callback", TRITONSERVER_InferenceRequestSetReleaseCallback(f->request, released, &f->done));
  check("response callback", TRITONSERVER_InferenceRequestSetResponseCallback(
                                 f->request, allocator, nullptr, on_response, &f->done));
  check("infer", TRITONSERVER_ServerInferAsync(server, f->request, nullptr));
}

// "<step> OK" or "<step> <CODE> <message>" once the request in flight is answered.
void finish(const std::string& step, Flight* f) {
  std::unique_lock<std::mutex> lock(f->done.mutex);
  f->done.cv.wait(lock, [&] { return f->done.responded && f->done.released; });
  expect_error(step, TRITONSERVER_InferenceResponseError(f->done.response));
  TRITONSERVER_InferenceResponseDelete(f->done.response);
}

// A request cancelled while it waits behind a busy instance is answered CANCELLED.
int cancel(const char* repository, const char* backends) {
  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_NONE);
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  check("allocator", TRITONSERVER_ResponseAllocatorNew(&allocator, allocate, release, nullptr));
  TRITONSERVER_InferenceRequest* unsent = nullptr;
  check("request", TRITONSERVER_InferenceRequestNew(&unsent, server, "slow", -1));
  expect_error("cancel_unsent", TRITONSERVER_InferenceRequestCancel(unsent));
  TRITONSERVER_InferenceRequestDelete(unsent);
  Flight running, queued;
  send_slow(server, allocator, &running);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it reaches the instance
  send_slow(server, allocator, &queued);
  check("cancel", TRITONSERVER_InferenceRequestCancel(queued.request));
  finish("running", &running);
  finish("queued", &queued);
  TRITONSERVER_ResponseAllocatorDelete(allocator);
  check("delete", TRITONSERVER_ServerDelete(server));
  std::printf("done\n");
  return 0;
}

// What the allocator of the placement scenario was asked: queries and allocations, in order.
std::string g_queries, g_allocations;

const char* memory_name(TRITONSERVER_MemoryType type) {
  return type == TRITONSERVER_MEMORY_GPU ? "GPU"
         : type == TRITONSERVER_MEMORY_CPU_PINNED ? "CPU_PINNED" : "CPU";
}

// Where outputs go, for a backend that asks (TRITONBACKEND_RequestOutputBufferProperties):
// OUTPUT0 on GPU 0, the others in pinned memory of device 3.
TRITONSERVER_Error* query(TRITONSERVER_ResponseAllocator*, void*, const char* name,
                          size_t* byte_size, TRITONSERVER_MemoryType* type, int64_t* id) {
  g_queries += std::string(" ") + (name != nullptr ? name : "(any)") + ":" +
               (byte_size != nullptr ? std::to_string(*byte_size) : "-") + ":" +
               memory_name(*type) + "/" + std::to_string(*id);
  const bool first = name != nullptr && std::strcmp(name, "OUTPUT0") == 0;
  *type = first ? TRITONSERVER_MEMORY_GPU : TRITONSERVER_MEMORY_CPU_PINNED;
  *id = first ? 0 : 3;
  return nullptr;
}

// Host memory, noting the memory the server preferred.
TRITONSERVER_Error* allocate_noted(TRITONSERVER_ResponseAllocator* allocator, const char* name,
                                   size_t byte_size, TRITONSERVER_MemoryType type, int64_t id,
                                   void* userp, void** buffer, void** buffer_userp,
                                   TRITONSERVER_MemoryType* actual_type, int64_t* actual_id) {
  g_allocations += std::string(" ") + name + ":" + std::to_string(byte_size) + ":" +
                   memory_name(type) + "/" + std::to_string(id);
  return allocate(allocator, name, byte_size, type, id, userp, buffer, buffer_userp,
                  actual_type, actual_id);
}

// Sends INPUT0 and INPUT1 (INT32 [1, 4]) to the "placement" model with `allocator`; prints
// "<step> <its output_properties parameter>".
void infer_placement(TRITONSERVER_Server* server, const std::string& step,
                     TRITONSERVER_ResponseAllocator* allocator) {
  Completion done;
  TRITONSERVER_InferenceRequest* request = new_request(server, "placement", allocator, &done);
  check("request id", TRITONSERVER_InferenceRequestSetId(request, "c-api-2"));
  const int32_t data[4] = {1, 2, 3, 4};
  const int64_t shape[2] = {1, 4};
  for (const char* name : {"INPUT0", "INPUT1"}) {
    check("add input", TRITONSERVER_InferenceRequestAddInput(request, name, TRITONSERVER_TYPE_INT32, shape, 2));
    check("append data", TRITONSERVER_InferenceRequestAppendInputData(
                             request, name, data, sizeof(data), TRITONSERVER_MEMORY_CPU, 0));
  }
  check("infer", TRITONSERVER_ServerInferAsync(server, request, nullptr));
  std::unique_lock<std::mutex> lock(done.mutex);
  done.cv.wait(lock, [&] { return done.responded && done.released; });
  check("response error", TRITONSERVER_InferenceResponseError(done.response));
  uint32_t count = 0;
  check("parameter count", TRITONSERVER_InferenceResponseParameterCount(done.response, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    TRITONSERVER_ParameterType type;
    const void* value = nullptr;
    check("parameter", TRITONSERVER_InferenceResponseParameter(done.response, i, &name, &type, &value));
    if (std::strcmp(name, "output_properties") == 0) {
      std::printf("%s %s\n", step.c_str(), static_cast<const char*>(value));
    }
  }
  TRITONSERVER_InferenceResponseDelete(done.response);
}

// A compiled backend asks where its outputs go: the request's allocator answers through its
// query function, and is then offered the memory the backend asked for.
int placement(const char* repository, const char* backends) {
  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_NONE);
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  check("allocator", TRITONSERVER_ResponseAllocatorNew(&allocator, allocate_noted, release, nullptr));
  infer_placement(server, "no_query_function", allocator);
  std::printf("allocations_without_query%s\n", g_allocations.c_str());
  g_allocations.clear();
  check("query function", TRITONSERVER_ResponseAllocatorSetQueryFunction(allocator, query));
  infer_placement(server, "answered", allocator);
  std::printf("queries%s\n", g_queries.c_str());
  std::printf("allocations%s\n", g_allocations.c_str());
  TRITONSERVER_ResponseAllocatorDelete(allocator);
  check("delete", TRITONSERVER_ServerDelete(server));
  std::printf("done\n");
  return 0;
}

std::atomic<int> g_releases{0};

void count_release(TRITONSERVER_InferenceRequest*, const uint32_t, void* userp) {
  auto* done = static_cast<Completion*>(userp);
  g_releases += 1;
  std::lock_guard<std::mutex> lock(done->mutex);
  done->released = true;
  done->cv.notify_all();
}

// Triton's core is one object behind TRITONSERVER_InferenceRequest and TRITONBACKEND_Request
// (and behind the two response types); its own API tests cast one to the other.
int cast(const char* repository, const char* backends) {
  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_NONE);
  TRITONSERVER_ResponseAllocator* allocator = nullptr;
  check("allocator", TRITONSERVER_ResponseAllocatorNew(&allocator, allocate, release, nullptr));
  Flight flight;
  send_slow(server, allocator, &flight, count_release);
  auto* as_backend = reinterpret_cast<TRITONBACKEND_Request*>(flight.request);
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  check("factory", TRITONBACKEND_ResponseFactoryNew(&factory, as_backend));
  bool cancelled = true;
  check("factory cancelled", TRITONBACKEND_ResponseFactoryIsCancelled(factory, &cancelled));
  std::printf("cancelled_before %s\n", cancelled ? "true" : "false");
  const char* id = nullptr;
  check("request id", TRITONBACKEND_RequestId(as_backend, &id));
  std::printf("backend_request_id '%s'\n", id);
  uint32_t inputs = 0;
  expect_error("input_count", TRITONBACKEND_RequestInputCount(as_backend, &inputs));
  TRITONBACKEND_Response* response = nullptr;
  expect_error("response_new", TRITONBACKEND_ResponseNew(&response, as_backend));
  check("release", TRITONBACKEND_RequestRelease(as_backend, TRITONSERVER_REQUEST_RELEASE_ALL));
  std::printf("releases_after_backend_release %d\n", g_releases.load());
  {
    std::unique_lock<std::mutex> lock(flight.done.mutex);
    flight.done.cv.wait(lock, [&] { return flight.done.responded && flight.done.released; });
  }
  std::printf("releases_after_response %d\n", g_releases.load());
  expect_error("response", TRITONSERVER_InferenceResponseError(flight.done.response));
  auto* backend_response = reinterpret_cast<TRITONBACKEND_Response*>(flight.done.response);
  std::string line;
  for (uint32_t i = 0; i < 2; ++i) {
    const char* name = nullptr;
    TRITONSERVER_DataType datatype;
    const int64_t* shape = nullptr;
    uint64_t dims = 0;
    check("output", TRITONBACKEND_InferenceResponseOutput(backend_response, i, &name, &datatype,
                                                          &shape, &dims));
    check("output by name", TRITONBACKEND_InferenceResponseOutputByName(
                                backend_response, name, &datatype, &shape, &dims));
    line += std::string(" ") + name + "/" + TRITONSERVER_DataTypeString(datatype) + "/" +
            std::to_string(shape[0]) + "/dims" + std::to_string(dims);
  }
  std::printf("outputs%s\n", line.c_str());
  TRITONSERVER_DataType datatype;
  const int64_t* shape = nullptr;
  uint64_t dims = 0;
  expect_error("unknown_output", TRITONBACKEND_InferenceResponseOutputByName(
                                     backend_response, "NOPE", &datatype, &shape, &dims));
  TRITONSERVER_InferenceResponseDelete(flight.done.response);
  // Cancelled after its release: the factory tells, as in Triton.
  check("cancel", TRITONSERVER_InferenceRequestCancel(flight.request));
  check("factory cancelled", TRITONBACKEND_ResponseFactoryIsCancelled(factory, &cancelled));
  std::printf("cancelled_after %s\n", cancelled ? "true" : "false");
  check("factory delete", TRITONBACKEND_ResponseFactoryDelete(factory));
  check("request delete", TRITONSERVER_InferenceRequestDelete(flight.request));
  TRITONSERVER_ResponseAllocatorDelete(allocator);
  check("delete", TRITONSERVER_ServerDelete(server));
  std::printf("done\n");
  return 0;
}

// The pids of this process's children (python backend stubs among them), from /proc.
std::string children() {
  std::string pids;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return pids;
  while (dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream file(std::string("/proc/self/task/") + task->d_name + "/children");
    std::string pid;
    while (file >> pid) pids += " " + pid;
  }
  closedir(tasks);
  return pids;
}

// Exits with the server still running: the process must end, its stubs too.
int exit_running(const char* repository, const char* backends) {
  TRITONSERVER_Server* server = new_server(repository, backends, TRITONSERVER_MODEL_CONTROL_NONE);
  infer_add_sub(server, "infer_python", "add_sub", 4, TRITONSERVER_TYPE_FP32);
  std::printf("children%s\n", children().c_str());
  std::printf("exiting\n");
  std::fflush(stdout);
  return 0;
}

int missing(const char* repository) {
  TRITONSERVER_ServerOptions* options = nullptr;
  check("options", TRITONSERVER_ServerOptionsNew(&options));
  check("repository", TRITONSERVER_ServerOptionsSetModelRepositoryPath(options, repository));
  check("log info", TRITONSERVER_ServerOptionsSetLogInfo(options, false));
  TRITONSERVER_Server* server = nullptr;
  expect_error("server_new", TRITONSERVER_ServerNew(&server, options));
  TRITONSERVER_ServerOptionsDelete(options);
  std::printf("done\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "simple") == 0) return simple(argv[2], argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "errors") == 0) return errors(argv[2], argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "cancel") == 0) return cancel(argv[2], argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "exit") == 0) return exit_running(argv[2], argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "placement") == 0) return placement(argv[2], argv[3]);
  if (argc >= 4 && std::strcmp(argv[1], "cast") == 0) return cast(argv[2], argv[3]);
  if (argc >= 3 && std::strcmp(argv[1], "missing") == 0) return missing(argv[2]);
  std::fprintf(stderr, "usage: server_program simple|errors|cancel|exit|placement|cast REPOSITORY BACKENDS"
                       " | missing REPOSITORY\n");
  return 2;
}

// Tritium's side of the C API: the objects behind the opaque handles, and the host table
// through which the library calls back into the Python server (taking the GIL there).
//
// Hot-path objects (requests, inputs, responses, outputs, errors, messages) are plain C++
// here; the library holds no lock while it calls the host, so a backend thread calling in
// while the server calls out cannot deadlock on a library lock.
#pragma once
#define TRITIUM_COMPILING_SERVER 1
#include "../include/tritium_triton_api.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#define TRITIUM_EXPORT extern "C" __attribute__((__visibility__("default")))

struct TRITONSERVER_Error {
  TRITONSERVER_Error_Code code;
  std::string message;
};

struct TRITONSERVER_Message {
  std::string json;
};

struct TRITONSERVER_BufferAttributes {
  int64_t memory_type_id = 0;
  TRITONSERVER_MemoryType memory_type = TRITONSERVER_MEMORY_CPU;
  void* cuda_ipc_handle = nullptr;
  size_t byte_size = 0;
};

struct TRITONSERVER_Parameter {
  std::string name;
  TRITONSERVER_ParameterType type;
  std::string string_value;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
  const void* bytes = nullptr;
  uint64_t byte_size = 0;
};

// A request/response parameter as TRITONBACKEND_RequestParameter hands it out.
struct Parameter {
  std::string key;
  TRITONSERVER_ParameterType type;
  std::string string_value;
  int64_t int_value = 0;
  bool bool_value = false;
  double double_value = 0;
  const void* value() const;
  // A value of each type (the key is set by the caller, once it has checked it); `of_host`:
  // what the Python server passes, every field given and the type saying which is meant.
  static Parameter of_string(const char* value);
  static Parameter of_int(int64_t value);
  static Parameter of_bool(bool value);
  static Parameter of_double(double value);
  static Parameter of_host(const char* key, int type, const char* string_value,
                           int64_t int_value, double double_value);
};

struct TRITONBACKEND_Backend {
  uint64_t token;
  std::string name, location;
  TRITONSERVER_Message config;  // {"cmdline": {...}}, owned by the server
  void* state = nullptr;
  TRITONBACKEND_ExecutionPolicy policy = TRITONBACKEND_EXECUTION_BLOCKING;
};

struct TRITONBACKEND_Model {
  uint64_t token;
  TRITONBACKEND_Backend* backend;
  std::string name, repository;
  uint64_t version;
  bool auto_complete;
  void* state = nullptr;
  struct StateConfig {
    std::string output_name, input_name;
    bool same_buffer;  // use_same_buffer_for_input_output
  };
  std::vector<StateConfig> states;  // sequence_batching.state
};

struct TRITONBACKEND_ModelInstance {
  uint64_t token;
  TRITONBACKEND_Model* model;
  std::string name;
  TRITONSERVER_InstanceGroupKind kind;
  int32_t device_id;
  bool passive;
  std::vector<std::string> profiles;
  TRITONSERVER_Message host_policy;  // {"<policy name>": {}}, owned by the server
  void* state = nullptr;
};

struct TRITONBACKEND_BackendAttribute {
  struct Group {
    TRITONSERVER_InstanceGroupKind kind;
    uint64_t count;
  };
  std::vector<Group> groups;
  bool parallel_loading = false;
};

struct Buffer {
  const void* base;
  uint64_t byte_size;
  TRITONSERVER_BufferAttributes attributes;
};

struct TRITONBACKEND_Input {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<Buffer> buffers;
  uint64_t byte_size = 0;
};

// What outlives a TRITONBACKEND_Request: responses and factories refer to it by token, so
// they stay valid after the request is released (as Triton's response factory does).
// When the last handle goes (request released, factories and responses deleted), the host
// hears of it: a request that got no FINAL response by then never will.
// Statistics a backend reports as a success before the FINAL response travel with that
// response. Responses whose statistics are reported are numbered per request, whichever
// factory sent them (Triton numbers them on the request's one response factory).
struct RequestState {
  uint64_t token;
  TRITONBACKEND_ModelInstance* instance;
  std::atomic<bool> final_sent{false};
  // Released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE: this execution sends no FINAL
  // response, so statistics reported after the release are recorded at once.
  bool rescheduled = false;
  bool has_stamps = false;
  uint64_t stamps[4] = {0, 0, 0, 0};
  std::atomic<uint64_t> response_index{0};
  ~RequestState();
};

// What a backend fills in for TRITONBACKEND_ModelInstanceReportResponseStatistics. The
// request's state is held, so a factory deleted before the report leaves nothing dangling.
struct TRITONBACKEND_ModelInstanceResponseStatistics {
  TRITONBACKEND_ModelInstance* instance = nullptr;
  std::shared_ptr<RequestState> request;
  uint64_t response_start = 0, compute_output_start = 0, response_end = 0;
  TRITONSERVER_Error* error = nullptr;  // the backend's: never freed here
};

struct TRITONBACKEND_State {
  std::shared_ptr<RequestState> request;
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  std::vector<char> buffer;
  // With use_same_buffer_for_input_output: the request's input of this state, whose memory
  // (the sequence's own state array, on the server's side) TRITONBACKEND_StateBuffer hands
  // out when the size matches, so the backend updates the state in place. `in_place`: it did.
  char* input = nullptr;
  uint64_t input_size = 0;
  bool in_place = false;
  // A buffer the backend asked for in GPU memory (attributes say which device); its bytes are
  // copied to `buffer` when the state is updated. Freed with the state (state.cc).
  void* device = nullptr;
  TRITONSERVER_BufferAttributes attributes;
  ~TRITONBACKEND_State();
};

// Triton's core has one object behind TRITONSERVER_InferenceRequest and TRITONBACKEND_Request
// (and one behind the two response types), and its own API tests cast one to the other. Here
// they are different objects, so each starts with a tag, and the backend calls that such a
// cast reaches look at it (inference.h: the server's objects).
enum ObjectTag : uint32_t {
  kBackendRequestTag = 0x42524551,  // "BREQ"
  kServerRequestTag = 0x53524551,   // "SREQ"
  kBackendResponseTag = 0x42525350,
  kServerResponseTag = 0x53525350,
};

struct TRITONBACKEND_Request {
  const uint32_t tag = kBackendRequestTag;
  std::shared_ptr<RequestState> state;
  std::string id, correlation_id_string;
  uint64_t correlation_id = 0;
  bool correlation_is_string = false;
  uint32_t flags = 0;
  uint64_t timeout_us = 0;
  std::deque<TRITONBACKEND_Input> inputs;  // deque: input pointers stay valid while adding
  std::vector<std::string> requested_outputs;
  std::vector<Parameter> parameters;
  std::vector<std::unique_ptr<TRITONBACKEND_State>> states;
};

// Whether the last Execute this thread ran released `request` (and so deleted it already);
// forgotten once this thread builds the next batch (its requests may reuse those addresses).
bool tritium_released_by_last_execute(TRITONBACKEND_Request* request);
void tritium_forget_released();

struct TRITONBACKEND_ResponseFactory {
  std::shared_ptr<RequestState> request;
  // Made from a TRITONSERVER_InferenceRequest cast to a TRITONBACKEND_Request (as Triton's
  // core tests do): it tells that request's cancellation and sends nothing.
  TRITONSERVER_InferenceRequest* server_request = nullptr;
};

struct TRITONBACKEND_Output {
  std::string name;
  TRITONSERVER_DataType datatype;
  std::vector<int64_t> shape;
  void* buffer = nullptr;  // owned by the server: freed with the response
  uint64_t byte_size = 0;
  // What the backend asked TRITONBACKEND_OutputBuffer for: the buffer is host memory, and the
  // preference goes on to the allocator of a request made through the C API, as Triton's does.
  TRITONSERVER_MemoryType preferred_type = TRITONSERVER_MEMORY_CPU;
  int64_t preferred_id = 0;
  TRITONSERVER_BufferAttributes attributes;
  ~TRITONBACKEND_Output() { free(buffer); }
};

struct TRITONBACKEND_Response {
  const uint32_t tag = kBackendResponseTag;
  std::shared_ptr<RequestState> request;
  std::deque<TRITONBACKEND_Output> outputs;
  std::vector<Parameter> parameters;
};

// The callbacks into the server. Every one may be called from any thread; the Python side
// takes the GIL. Callbacks returning TRITONSERVER_Error* hand ownership to the library.
struct TritiumHost {
  TRITONSERVER_Error* (*response)(uint64_t token, TRITONBACKEND_Response* response,
                                  uint32_t flags, TRITONSERVER_Error* error,
                                  const uint64_t* stamps);
  TRITONSERVER_Error* (*release)(uint64_t token, uint32_t flags);
  int (*is_cancelled)(uint64_t token);
  void (*log)(int level, const char* file, int line, const char* message);
  int (*log_enabled)(int level);
  TRITONSERVER_Error* (*model_config)(uint64_t model_token, TRITONSERVER_Message** config);
  TRITONSERVER_Error* (*model_set_config)(uint64_t model_token, const char* json);
  // TRITONBACKEND_ModelInstanceReport{,Batch,Response}Statistics, recorded at once.
  void (*statistics)(uint64_t instance_token, uint64_t request_token, int success,
                     const uint64_t* timestamps);
  void (*batch_statistics)(uint64_t instance_token, uint64_t batch_size,
                           const uint64_t* timestamps);
  TRITONSERVER_Error* (*response_statistics)(uint64_t instance_token, uint64_t index,
                                             TRITONSERVER_Error* error,
                                             const uint64_t* timestamps);
  TRITONSERVER_Error* (*state_update)(uint64_t token, TRITONBACKEND_State* state);
  // Server queries and model control: `op` names the call, answers come back in out_int
  // and/or out_message (a JSON message the caller owns).
  TRITONSERVER_Error* (*server_call)(int op, const char* name, int64_t version,
                                     const char* argument, int64_t* out_int,
                                     TRITONSERVER_Message** out_message);
  TRITONSERVER_Error* (*infer_async)(TRITONSERVER_InferenceRequest* request);
  // Metrics: op names the call; handles are the server's ids for families and metrics.
  TRITONSERVER_Error* (*metric_call)(int op, uint64_t handle, int kind, const char* name,
                                     const char* description, double value,
                                     const double* buckets, uint64_t bucket_count,
                                     uint64_t* out_handle, double* out_value);
  // A request whose last handle went without a FINAL response (one that got its FINAL is
  // queued instead, see tritium_drain_finished: no callback on the hot path).
  void (*request_gone)(uint64_t token, int final_sent);
  // TRITONBACKEND_Model{,Instance}ReportMemoryUsage: `token` names the model or instance;
  // entry i is `sizes[i]` bytes of memory type `types[i]` on device `ids[i]`.
  TRITONSERVER_Error* (*memory_usage)(uint64_t token, uint32_t count, const int* types,
                                      const int64_t* ids, const uint64_t* sizes);
  // The server object a program made (TRITONSERVER_ServerNew and the calls on it): as
  // server_call, `op` (ServerObjectOp) names the call; UNSUPPORTED where no program made one.
  TRITONSERVER_Error* (*server_object)(int op, const char* name, int64_t version,
                                       const char* argument, int64_t* out_int,
                                       TRITONSERVER_Message** out_message);
  // TRITONBACKEND_RequestOutputBufferProperties: the request's client says where it wants
  // the output (`name` and `byte_size` may be null; `type` and `id` carry the backend's
  // preference in and the answer out).
  TRITONSERVER_Error* (*output_properties)(uint64_t token, const char* name, size_t* byte_size,
                                           TRITONSERVER_MemoryType* type, int64_t* id);
};

// The server a backend or a program refers to. Calls on it go to the host (one server per
// process), so it carries nothing.
struct TRITONSERVER_Server {
  int unused;
};

// server_call ops
enum ServerOp {
  OP_MODEL_READY = 1, OP_MODEL_TXN = 2, OP_MODEL_BATCH = 3, OP_LOAD = 4, OP_UNLOAD = 5,
  OP_UNLOAD_DEPENDENTS = 6, OP_SERVER_METADATA = 7, OP_MODEL_METADATA = 8, OP_MODEL_CONFIG = 9,
  OP_MODEL_INDEX = 11, OP_SERVER_READY = 12, OP_CANCEL = 13, OP_MODEL_SERVES = 14
};
// server_object ops
enum ServerObjectOp {
  SOP_NEW = 1, SOP_STOP = 2, SOP_DELETE = 3, SOP_EXIT_TIMEOUT = 4, SOP_REGISTER = 5,
  SOP_UNREGISTER = 6, SOP_POLL = 7, SOP_LIVE = 8, SOP_STATISTICS = 9, SOP_METRICS = 10
};
// metric_call ops
enum MetricOp {
  MOP_FAMILY_NEW = 1, MOP_FAMILY_DELETE = 2, MOP_METRIC_NEW = 3, MOP_METRIC_DELETE = 4,
  MOP_VALUE = 5, MOP_INCREMENT = 6, MOP_SET = 7, MOP_OBSERVE = 8
};

extern TritiumHost g_host;
extern bool g_host_set;

TRITONSERVER_Error* make_error(TRITONSERVER_Error_Code code, const std::string& message);
TRITONSERVER_Error* unsupported(const char* function);
TRITONSERVER_Error* no_host(const char* function);
// `s` as a JSON string literal (quotes, backslashes and control characters escaped).
std::string json_string(const std::string& s);
// `size` bytes at `data` as lowercase hex digits (bytes that travel inside JSON or Python text).
std::string hex_string(const void* data, size_t size);

#define TRITIUM_REQUIRE(cond, code, msg) \
  do {                                    \
    if (!(cond)) return make_error(code, msg); \
  } while (0)
// Triton's error for an index past the end of `items`: "out of bounds index I: <owner> N <noun>".
#define TRITIUM_REQUIRE_INDEX(index, items, owner, noun)                                         \
  TRITIUM_REQUIRE((index) < (items).size(), TRITONSERVER_ERROR_INVALID_ARG,                      \
                  "out of bounds index " + std::to_string(index) + ": " + std::string(owner) + \
                      " " + std::to_string((items).size()) + " " + (noun))
#define TRITIUM_NOT_NULL(ptr, fn) \
  TRITIUM_REQUIRE((ptr) != nullptr, TRITONSERVER_ERROR_INVALID_ARG, \
                  std::string(fn) + ": " #ptr " must not be null")

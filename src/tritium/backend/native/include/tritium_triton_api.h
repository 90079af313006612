/* Tritium's declarations of Triton's server-side C API (TRITONSERVER_*, TRITONBACKEND_*,
 * and the TRITONREPOAGENT_* / TRITONCACHE_* entry points Triton's libtritonserver.so also
 * exports), written from the documented ABI of Triton 2.51: server API 1.34, backend API 1.19.
 *
 * Names, signatures and enum values are the ABI facts a compiled backend was built against;
 * everything else here is Tritium's own. Backends compiled against Triton's headers link to
 * Tritium's libtritonserver.so unchanged; Tritium's tests compile their backends against this
 * header. Define TRITIUM_COMPILING_SERVER when building the library to export the symbols.
 */
#ifndef TRITIUM_TRITON_API_H
#define TRITIUM_TRITON_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TRITIUM_COMPILING_SERVER) && defined(__GNUC__)
#define TRITIUM_API __attribute__((__visibility__("default")))
#else
#define TRITIUM_API
#endif

/* Triton's export (DECLSPEC) and import (ISPEC) markers, for code written against Triton's
 * headers (a backend marks its entry points TRITONBACKEND_ISPEC). */
#if defined(__GNUC__)
#define TRITIUM_DEFAULT_VISIBILITY __attribute__((__visibility__("default")))
#else
#define TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONSERVER_DECLSPEC
#define TRITONSERVER_DECLSPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONBACKEND_DECLSPEC
#define TRITONBACKEND_DECLSPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONBACKEND_ISPEC
#define TRITONBACKEND_ISPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONREPOAGENT_DECLSPEC
#define TRITONREPOAGENT_DECLSPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONREPOAGENT_ISPEC
#define TRITONREPOAGENT_ISPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONCACHE_DECLSPEC
#define TRITONCACHE_DECLSPEC TRITIUM_DEFAULT_VISIBILITY
#endif
#ifndef TRITONCACHE_ISPEC
#define TRITONCACHE_ISPEC TRITIUM_DEFAULT_VISIBILITY
#endif

#define TRITONSERVER_API_VERSION_MAJOR 1
#define TRITONSERVER_API_VERSION_MINOR 34
#define TRITONBACKEND_API_VERSION_MAJOR 1
#define TRITONBACKEND_API_VERSION_MINOR 19

/* ---- opaque objects ---- */
typedef struct TRITONSERVER_BufferAttributes TRITONSERVER_BufferAttributes;
typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONSERVER_InferenceRequest TRITONSERVER_InferenceRequest;
typedef struct TRITONSERVER_InferenceResponse TRITONSERVER_InferenceResponse;
typedef struct TRITONSERVER_InferenceTrace TRITONSERVER_InferenceTrace;
typedef struct TRITONSERVER_Message TRITONSERVER_Message;
typedef struct TRITONSERVER_Metrics TRITONSERVER_Metrics;
typedef struct TRITONSERVER_Parameter TRITONSERVER_Parameter;
typedef struct TRITONSERVER_ResponseAllocator TRITONSERVER_ResponseAllocator;
typedef struct TRITONSERVER_Server TRITONSERVER_Server;
typedef struct TRITONSERVER_ServerOptions TRITONSERVER_ServerOptions;
typedef struct TRITONSERVER_Metric TRITONSERVER_Metric;
typedef struct TRITONSERVER_MetricFamily TRITONSERVER_MetricFamily;
typedef struct TRITONSERVER_MetricArgs TRITONSERVER_MetricArgs;

typedef struct TRITONBACKEND_MemoryManager TRITONBACKEND_MemoryManager;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;
typedef struct TRITONBACKEND_State TRITONBACKEND_State;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_ResponseFactory TRITONBACKEND_ResponseFactory;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Backend TRITONBACKEND_Backend;
typedef struct TRITONBACKEND_Model TRITONBACKEND_Model;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_BackendAttribute TRITONBACKEND_BackendAttribute;
typedef struct TRITONBACKEND_Batcher TRITONBACKEND_Batcher;
typedef struct TRITONBACKEND_ModelInstanceResponseStatistics
    TRITONBACKEND_ModelInstanceResponseStatistics;

typedef struct TRITONREPOAGENT_Agent TRITONREPOAGENT_Agent;
typedef struct TRITONREPOAGENT_AgentModel TRITONREPOAGENT_AgentModel;
typedef struct TRITONCACHE_Cache TRITONCACHE_Cache;
typedef struct TRITONCACHE_CacheEntry TRITONCACHE_CacheEntry;
typedef struct TRITONCACHE_Allocator TRITONCACHE_Allocator;

/* ---- enums (values are ABI) ---- */
typedef enum TRITONSERVER_datatype_enum {
  TRITONSERVER_TYPE_INVALID, TRITONSERVER_TYPE_BOOL, TRITONSERVER_TYPE_UINT8,
  TRITONSERVER_TYPE_UINT16, TRITONSERVER_TYPE_UINT32, TRITONSERVER_TYPE_UINT64,
  TRITONSERVER_TYPE_INT8, TRITONSERVER_TYPE_INT16, TRITONSERVER_TYPE_INT32,
  TRITONSERVER_TYPE_INT64, TRITONSERVER_TYPE_FP16, TRITONSERVER_TYPE_FP32,
  TRITONSERVER_TYPE_FP64, TRITONSERVER_TYPE_BYTES, TRITONSERVER_TYPE_BF16
} TRITONSERVER_DataType;

typedef enum TRITONSERVER_memorytype_enum {
  TRITONSERVER_MEMORY_CPU, TRITONSERVER_MEMORY_CPU_PINNED, TRITONSERVER_MEMORY_GPU
} TRITONSERVER_MemoryType;

typedef enum TRITONSERVER_parametertype_enum {
  TRITONSERVER_PARAMETER_STRING, TRITONSERVER_PARAMETER_INT, TRITONSERVER_PARAMETER_BOOL,
  TRITONSERVER_PARAMETER_DOUBLE, TRITONSERVER_PARAMETER_BYTES
} TRITONSERVER_ParameterType;

typedef enum TRITONSERVER_instancegroupkind_enum {
  TRITONSERVER_INSTANCEGROUPKIND_AUTO, TRITONSERVER_INSTANCEGROUPKIND_CPU,
  TRITONSERVER_INSTANCEGROUPKIND_GPU, TRITONSERVER_INSTANCEGROUPKIND_MODEL
} TRITONSERVER_InstanceGroupKind;

typedef enum TRITONSERVER_loglevel_enum {
  TRITONSERVER_LOG_INFO, TRITONSERVER_LOG_WARN, TRITONSERVER_LOG_ERROR, TRITONSERVER_LOG_VERBOSE
} TRITONSERVER_LogLevel;

typedef enum TRITONSERVER_logformat_enum {
  TRITONSERVER_LOG_DEFAULT, TRITONSERVER_LOG_ISO8601
} TRITONSERVER_LogFormat;

typedef enum TRITONSERVER_errorcode_enum {
  TRITONSERVER_ERROR_UNKNOWN, TRITONSERVER_ERROR_INTERNAL, TRITONSERVER_ERROR_NOT_FOUND,
  TRITONSERVER_ERROR_INVALID_ARG, TRITONSERVER_ERROR_UNAVAILABLE, TRITONSERVER_ERROR_UNSUPPORTED,
  TRITONSERVER_ERROR_ALREADY_EXISTS, TRITONSERVER_ERROR_CANCELLED
} TRITONSERVER_Error_Code;

typedef enum tritonserver_metricformat_enum { TRITONSERVER_METRIC_PROMETHEUS } TRITONSERVER_MetricFormat;

typedef enum tritonserver_tracelevel_enum {
  TRITONSERVER_TRACE_LEVEL_DISABLED = 0, TRITONSERVER_TRACE_LEVEL_MIN = 1,
  TRITONSERVER_TRACE_LEVEL_MAX = 2, TRITONSERVER_TRACE_LEVEL_TIMESTAMPS = 0x4,
  TRITONSERVER_TRACE_LEVEL_TENSORS = 0x8
} TRITONSERVER_InferenceTraceLevel;

typedef enum tritonserver_traceactivity_enum {
  TRITONSERVER_TRACE_REQUEST_START = 0, TRITONSERVER_TRACE_QUEUE_START = 1,
  TRITONSERVER_TRACE_COMPUTE_START = 2, TRITONSERVER_TRACE_COMPUTE_INPUT_END = 3,
  TRITONSERVER_TRACE_COMPUTE_OUTPUT_START = 4, TRITONSERVER_TRACE_COMPUTE_END = 5,
  TRITONSERVER_TRACE_REQUEST_END = 6, TRITONSERVER_TRACE_TENSOR_QUEUE_INPUT = 7,
  TRITONSERVER_TRACE_TENSOR_BACKEND_INPUT = 8, TRITONSERVER_TRACE_TENSOR_BACKEND_OUTPUT = 9,
  TRITONSERVER_TRACE_CUSTOM_ACTIVITY = 10
} TRITONSERVER_InferenceTraceActivity;

typedef enum tritonserver_requestflag_enum {
  TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1, TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
} TRITONSERVER_RequestFlag;

typedef enum tritonserver_requestreleaseflag_enum {
  TRITONSERVER_REQUEST_RELEASE_ALL = 1, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
} TRITONSERVER_RequestReleaseFlag;

typedef enum tritonserver_responsecompleteflag_enum {
  TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
} TRITONSERVER_ResponseCompleteFlag;

typedef enum tritonserver_modelcontrolmode_enum {
  TRITONSERVER_MODEL_CONTROL_NONE, TRITONSERVER_MODEL_CONTROL_POLL,
  TRITONSERVER_MODEL_CONTROL_EXPLICIT
} TRITONSERVER_ModelControlMode;

typedef enum tritonserver_ratelimitmode_enum {
  TRITONSERVER_RATE_LIMIT_OFF, TRITONSERVER_RATE_LIMIT_EXEC_COUNT
} TRITONSERVER_RateLimitMode;

typedef enum tritonserver_batchflag_enum {
  TRITONSERVER_BATCH_UNKNOWN = 1, TRITONSERVER_BATCH_FIRST_DIM = 2
} TRITONSERVER_ModelBatchFlag;

typedef enum tritonserver_modelindexflag_enum { TRITONSERVER_INDEX_FLAG_READY = 1 } TRITONSERVER_ModelIndexFlag;

typedef enum tritonserver_txn_property_flag_enum {
  TRITONSERVER_TXN_ONE_TO_ONE = 1, TRITONSERVER_TXN_DECOUPLED = 2
} TRITONSERVER_ModelTxnPropertyFlag;

typedef enum TRITONSERVER_metrickind_enum {
  TRITONSERVER_METRIC_KIND_COUNTER, TRITONSERVER_METRIC_KIND_GAUGE,
  TRITONSERVER_METRIC_KIND_HISTOGRAM
} TRITONSERVER_MetricKind;

typedef enum TRITONBACKEND_artifacttype_enum { TRITONBACKEND_ARTIFACT_FILESYSTEM } TRITONBACKEND_ArtifactType;
typedef enum TRITONBACKEND_execpolicy_enum {
  TRITONBACKEND_EXECUTION_BLOCKING, TRITONBACKEND_EXECUTION_DEVICE_BLOCKING
} TRITONBACKEND_ExecutionPolicy;
typedef enum TRITONREPOAGENT_artifacttype_enum {
  TRITONREPOAGENT_ARTIFACT_FILESYSTEM, TRITONREPOAGENT_ARTIFACT_REMOTE_FILESYSTEM
} TRITONREPOAGENT_ArtifactType;
typedef enum TRITONREPOAGENT_actiontype_enum {
  TRITONREPOAGENT_ACTION_LOAD, TRITONREPOAGENT_ACTION_LOAD_COMPLETE,
  TRITONREPOAGENT_ACTION_LOAD_FAIL, TRITONREPOAGENT_ACTION_UNLOAD,
  TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE
} TRITONREPOAGENT_ActionType;

/* ---- callback types ---- */
typedef TRITONSERVER_Error* (*TRITONSERVER_ResponseAllocatorAllocFn_t)(
    TRITONSERVER_ResponseAllocator* allocator, const char* tensor_name, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id, void* userp, void** buffer,
    void** buffer_userp, TRITONSERVER_MemoryType* actual_memory_type,
    int64_t* actual_memory_type_id);
typedef TRITONSERVER_Error* (*TRITONSERVER_ResponseAllocatorBufferAttributesFn_t)(
    TRITONSERVER_ResponseAllocator* allocator, const char* tensor_name,
    TRITONSERVER_BufferAttributes* buffer_attributes, void* userp, void* buffer_userp);
typedef TRITONSERVER_Error* (*TRITONSERVER_ResponseAllocatorQueryFn_t)(
    TRITONSERVER_ResponseAllocator* allocator, void* userp, const char* tensor_name,
    size_t* byte_size, TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
typedef TRITONSERVER_Error* (*TRITONSERVER_ResponseAllocatorReleaseFn_t)(
    TRITONSERVER_ResponseAllocator* allocator, void* buffer, void* buffer_userp,
    size_t byte_size, TRITONSERVER_MemoryType memory_type, int64_t memory_type_id);
typedef TRITONSERVER_Error* (*TRITONSERVER_ResponseAllocatorStartFn_t)(
    TRITONSERVER_ResponseAllocator* allocator, void* userp);
typedef void (*TRITONSERVER_InferenceTraceActivityFn_t)(
    TRITONSERVER_InferenceTrace* trace, TRITONSERVER_InferenceTraceActivity activity,
    uint64_t timestamp_ns, void* userp);
typedef void (*TRITONSERVER_InferenceTraceTensorActivityFn_t)(
    TRITONSERVER_InferenceTrace* trace, TRITONSERVER_InferenceTraceActivity activity,
    const char* name, TRITONSERVER_DataType datatype, const void* base, size_t byte_size,
    const int64_t* shape, uint64_t dim_count, TRITONSERVER_MemoryType memory_type,
    int64_t memory_type_id, void* userp);
typedef void (*TRITONSERVER_InferenceTraceReleaseFn_t)(TRITONSERVER_InferenceTrace* trace, void* userp);
typedef void (*TRITONSERVER_InferenceRequestReleaseFn_t)(
    TRITONSERVER_InferenceRequest* request, const uint32_t flags, void* userp);
typedef void (*TRITONSERVER_InferenceResponseCompleteFn_t)(
    TRITONSERVER_InferenceResponse* response, const uint32_t flags, void* userp);

/* ================= TRITONSERVER ================= */
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ApiVersion(uint32_t* major, uint32_t* minor);
TRITIUM_API const char* TRITONSERVER_DataTypeString(TRITONSERVER_DataType datatype);
TRITIUM_API TRITONSERVER_DataType TRITONSERVER_StringToDataType(const char* dtype);
TRITIUM_API uint32_t TRITONSERVER_DataTypeByteSize(TRITONSERVER_DataType datatype);
TRITIUM_API const char* TRITONSERVER_MemoryTypeString(TRITONSERVER_MemoryType memtype);
TRITIUM_API const char* TRITONSERVER_ParameterTypeString(TRITONSERVER_ParameterType paramtype);
TRITIUM_API TRITONSERVER_Parameter* TRITONSERVER_ParameterNew(
    const char* name, const TRITONSERVER_ParameterType type, const void* value);
TRITIUM_API TRITONSERVER_Parameter* TRITONSERVER_ParameterBytesNew(
    const char* name, const void* byte_ptr, const uint64_t size);
TRITIUM_API void TRITONSERVER_ParameterDelete(TRITONSERVER_Parameter* parameter);
TRITIUM_API const char* TRITONSERVER_InstanceGroupKindString(TRITONSERVER_InstanceGroupKind kind);
TRITIUM_API bool TRITONSERVER_LogIsEnabled(TRITONSERVER_LogLevel level);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_LogMessage(
    TRITONSERVER_LogLevel level, const char* filename, const int line, const char* msg);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ErrorNew(TRITONSERVER_Error_Code code, const char* msg);
TRITIUM_API void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
TRITIUM_API TRITONSERVER_Error_Code TRITONSERVER_ErrorCode(TRITONSERVER_Error* error);
TRITIUM_API const char* TRITONSERVER_ErrorCodeString(TRITONSERVER_Error* error);
TRITIUM_API const char* TRITONSERVER_ErrorMessage(TRITONSERVER_Error* error);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorNew(
    TRITONSERVER_ResponseAllocator** allocator, TRITONSERVER_ResponseAllocatorAllocFn_t alloc_fn,
    TRITONSERVER_ResponseAllocatorReleaseFn_t release_fn,
    TRITONSERVER_ResponseAllocatorStartFn_t start_fn);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetBufferAttributesFunction(
    TRITONSERVER_ResponseAllocator* allocator,
    TRITONSERVER_ResponseAllocatorBufferAttributesFn_t buffer_attributes_fn);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorSetQueryFunction(
    TRITONSERVER_ResponseAllocator* allocator, TRITONSERVER_ResponseAllocatorQueryFn_t query_fn);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ResponseAllocatorDelete(
    TRITONSERVER_ResponseAllocator* allocator);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MessageNewFromSerializedJson(
    TRITONSERVER_Message** message, const char* base, size_t byte_size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MessageDelete(TRITONSERVER_Message* message);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MessageSerializeToJson(
    TRITONSERVER_Message* message, const char** base, size_t* byte_size);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricsDelete(TRITONSERVER_Metrics* metrics);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricsFormatted(
    TRITONSERVER_Metrics* metrics, TRITONSERVER_MetricFormat format, const char** base,
    size_t* byte_size);

TRITIUM_API const char* TRITONSERVER_InferenceTraceLevelString(TRITONSERVER_InferenceTraceLevel level);
TRITIUM_API const char* TRITONSERVER_InferenceTraceActivityString(
    TRITONSERVER_InferenceTraceActivity activity);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceNew(
    TRITONSERVER_InferenceTrace** trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void* trace_userp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceTensorNew(
    TRITONSERVER_InferenceTrace** trace, TRITONSERVER_InferenceTraceLevel level,
    uint64_t parent_id, TRITONSERVER_InferenceTraceActivityFn_t activity_fn,
    TRITONSERVER_InferenceTraceTensorActivityFn_t tensor_activity_fn,
    TRITONSERVER_InferenceTraceReleaseFn_t release_fn, void* trace_userp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceReportActivity(
    TRITONSERVER_InferenceTrace* trace, uint64_t timestamp, const char* activity_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceDelete(TRITONSERVER_InferenceTrace* trace);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceId(TRITONSERVER_InferenceTrace* trace, uint64_t* id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceParentId(
    TRITONSERVER_InferenceTrace* trace, uint64_t* parent_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelName(
    TRITONSERVER_InferenceTrace* trace, const char** model_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceModelVersion(
    TRITONSERVER_InferenceTrace* trace, int64_t* model_version);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceRequestId(
    TRITONSERVER_InferenceTrace* trace, const char** request_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceSpawnChildTrace(
    TRITONSERVER_InferenceTrace* trace, TRITONSERVER_InferenceTrace** child_trace);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceSetContext(
    TRITONSERVER_InferenceTrace* trace, const char* trace_context);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceTraceContext(
    TRITONSERVER_InferenceTrace* trace, const char** trace_context);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestNew(
    TRITONSERVER_InferenceRequest** inference_request, TRITONSERVER_Server* server,
    const char* model_name, const int64_t model_version);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestDelete(TRITONSERVER_InferenceRequest* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestId(TRITONSERVER_InferenceRequest* r, const char** id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetId(TRITONSERVER_InferenceRequest* r, const char* id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestFlags(TRITONSERVER_InferenceRequest* r, uint32_t* flags);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetFlags(TRITONSERVER_InferenceRequest* r, uint32_t flags);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationId(
    TRITONSERVER_InferenceRequest* r, uint64_t* correlation_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestCorrelationIdString(
    TRITONSERVER_InferenceRequest* r, const char** correlation_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationId(
    TRITONSERVER_InferenceRequest* r, uint64_t correlation_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetCorrelationIdString(
    TRITONSERVER_InferenceRequest* r, const char* correlation_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestCancel(TRITONSERVER_InferenceRequest* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestIsCancelled(
    TRITONSERVER_InferenceRequest* r, bool* is_cancelled);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriority(TRITONSERVER_InferenceRequest* r, uint32_t* priority);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestPriorityUInt64(
    TRITONSERVER_InferenceRequest* r, uint64_t* priority);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriority(TRITONSERVER_InferenceRequest* r, uint32_t priority);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetPriorityUInt64(
    TRITONSERVER_InferenceRequest* r, uint64_t priority);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestTimeoutMicroseconds(
    TRITONSERVER_InferenceRequest* r, uint64_t* timeout_us);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetTimeoutMicroseconds(
    TRITONSERVER_InferenceRequest* r, uint64_t timeout_us);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddInput(
    TRITONSERVER_InferenceRequest* r, const char* name, const TRITONSERVER_DataType datatype,
    const int64_t* shape, uint64_t dim_count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRawInput(TRITONSERVER_InferenceRequest* r, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveInput(TRITONSERVER_InferenceRequest* r, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputs(TRITONSERVER_InferenceRequest* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputData(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithHostPolicy(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base, size_t byte_size,
    TRITONSERVER_MemoryType memory_type, int64_t memory_type_id, const char* host_policy_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAppendInputDataWithBufferAttributes(
    TRITONSERVER_InferenceRequest* r, const char* name, const void* base,
    TRITONSERVER_BufferAttributes* buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllInputData(
    TRITONSERVER_InferenceRequest* r, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestAddRequestedOutput(
    TRITONSERVER_InferenceRequest* r, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveRequestedOutput(
    TRITONSERVER_InferenceRequest* r, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestRemoveAllRequestedOutputs(
    TRITONSERVER_InferenceRequest* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetReleaseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_InferenceRequestReleaseFn_t request_release_fn,
    void* request_release_userp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetResponseCallback(
    TRITONSERVER_InferenceRequest* r, TRITONSERVER_ResponseAllocator* response_allocator,
    void* response_allocator_userp, TRITONSERVER_InferenceResponseCompleteFn_t response_fn,
    void* response_userp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetStringParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const char* value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetIntParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const int64_t value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetBoolParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const bool value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceRequestSetDoubleParameter(
    TRITONSERVER_InferenceRequest* r, const char* key, const double value);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseDelete(TRITONSERVER_InferenceResponse* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseError(TRITONSERVER_InferenceResponse* r);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseModel(
    TRITONSERVER_InferenceResponse* r, const char** model_name, int64_t* model_version);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseId(TRITONSERVER_InferenceResponse* r, const char** request_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameterCount(
    TRITONSERVER_InferenceResponse* r, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseParameter(
    TRITONSERVER_InferenceResponse* r, const uint32_t index, const char** name,
    TRITONSERVER_ParameterType* type, const void** vvalue);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputCount(
    TRITONSERVER_InferenceResponse* r, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutput(
    TRITONSERVER_InferenceResponse* r, const uint32_t index, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape, uint64_t* dim_count,
    const void** base, size_t* byte_size, TRITONSERVER_MemoryType* memory_type,
    int64_t* memory_type_id, void** userp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_InferenceResponseOutputClassificationLabel(
    TRITONSERVER_InferenceResponse* r, const uint32_t index, const size_t class_index,
    const char** label);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesNew(TRITONSERVER_BufferAttributes** a);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesDelete(TRITONSERVER_BufferAttributes* a);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryTypeId(TRITONSERVER_BufferAttributes* a, int64_t memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetMemoryType(
    TRITONSERVER_BufferAttributes* a, TRITONSERVER_MemoryType memory_type);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetCudaIpcHandle(TRITONSERVER_BufferAttributes* a, void* handle);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesSetByteSize(TRITONSERVER_BufferAttributes* a, size_t byte_size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryTypeId(TRITONSERVER_BufferAttributes* a, int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesMemoryType(
    TRITONSERVER_BufferAttributes* a, TRITONSERVER_MemoryType* memory_type);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesCudaIpcHandle(TRITONSERVER_BufferAttributes* a, void** handle);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_BufferAttributesByteSize(TRITONSERVER_BufferAttributes* a, size_t* byte_size);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsNew(TRITONSERVER_ServerOptions** options);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsDelete(TRITONSERVER_ServerOptions* options);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetServerId(TRITONSERVER_ServerOptions* o, const char* server_id);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelRepositoryPath(TRITONSERVER_ServerOptions* o, const char* path);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelControlMode(
    TRITONSERVER_ServerOptions* o, TRITONSERVER_ModelControlMode mode);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStartupModel(TRITONSERVER_ServerOptions* o, const char* model_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictModelConfig(TRITONSERVER_ServerOptions* o, bool strict);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelConfigName(TRITONSERVER_ServerOptions* o, const char* name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRateLimiterMode(
    TRITONSERVER_ServerOptions* o, TRITONSERVER_RateLimitMode mode);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsAddRateLimiterResource(
    TRITONSERVER_ServerOptions* o, const char* resource_name, const size_t resource_count, const int device);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(TRITONSERVER_ServerOptions* o, uint64_t size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(
    TRITONSERVER_ServerOptions* o, int gpu_device, uint64_t size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(
    TRITONSERVER_ServerOptions* o, int gpu_device, size_t cuda_virtual_address_size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetResponseCacheByteSize(TRITONSERVER_ServerOptions* o, uint64_t size);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheConfig(
    TRITONSERVER_ServerOptions* o, const char* cache_name, const char* config_json);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheDirectory(TRITONSERVER_ServerOptions* o, const char* dir);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMinSupportedComputeCapability(TRITONSERVER_ServerOptions* o, double cc);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitOnError(TRITONSERVER_ServerOptions* o, bool exit);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStrictReadiness(TRITONSERVER_ServerOptions* o, bool strict);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetExitTimeout(TRITONSERVER_ServerOptions* o, unsigned int timeout);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(TRITONSERVER_ServerOptions* o, unsigned int n);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadThreadCount(TRITONSERVER_ServerOptions* o, unsigned int n);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadRetryCount(TRITONSERVER_ServerOptions* o, unsigned int n);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelNamespacing(TRITONSERVER_ServerOptions* o, bool enable);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetEnablePeerAccess(TRITONSERVER_ServerOptions* o, bool enable);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFile(TRITONSERVER_ServerOptions* o, const char* file);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogInfo(TRITONSERVER_ServerOptions* o, bool log);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogWarn(TRITONSERVER_ServerOptions* o, bool log);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogError(TRITONSERVER_ServerOptions* o, bool log);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFormat(
    TRITONSERVER_ServerOptions* o, const TRITONSERVER_LogFormat format);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogVerbose(TRITONSERVER_ServerOptions* o, int level);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetrics(TRITONSERVER_ServerOptions* o, bool metrics);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetGpuMetrics(TRITONSERVER_ServerOptions* o, bool gpu_metrics);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCpuMetrics(TRITONSERVER_ServerOptions* o, bool cpu_metrics);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsInterval(TRITONSERVER_ServerOptions* o, uint64_t ms);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendDirectory(TRITONSERVER_ServerOptions* o, const char* dir);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRepoAgentDirectory(TRITONSERVER_ServerOptions* o, const char* dir);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(
    TRITONSERVER_ServerOptions* o, const TRITONSERVER_InstanceGroupKind kind, const int device_id,
    const double fraction);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendConfig(
    TRITONSERVER_ServerOptions* o, const char* backend_name, const char* setting, const char* value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetHostPolicy(
    TRITONSERVER_ServerOptions* o, const char* policy_name, const char* setting, const char* value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsConfig(
    TRITONSERVER_ServerOptions* o, const char* name, const char* setting, const char* value);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerNew(TRITONSERVER_Server** server, TRITONSERVER_ServerOptions* options);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerDelete(TRITONSERVER_Server* server);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerStop(TRITONSERVER_Server* server);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerSetExitTimeout(TRITONSERVER_Server* server, unsigned int timeout);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerRegisterModelRepository(
    TRITONSERVER_Server* server, const char* repository_path,
    const TRITONSERVER_Parameter** name_mapping, const uint32_t mapping_count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerUnregisterModelRepository(
    TRITONSERVER_Server* server, const char* repository_path);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerPollModelRepository(TRITONSERVER_Server* server);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerIsLive(TRITONSERVER_Server* server, bool* live);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerIsReady(TRITONSERVER_Server* server, bool* ready);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelIsReady(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version, bool* ready);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelBatchProperties(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version,
    uint32_t* flags, void** voidp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelTransactionProperties(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version,
    uint32_t* txn_flags, void** voidp);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerMetadata(TRITONSERVER_Server* server, TRITONSERVER_Message** metadata);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelMetadata(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version,
    TRITONSERVER_Message** model_metadata);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelStatistics(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version,
    TRITONSERVER_Message** model_stats);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelConfig(
    TRITONSERVER_Server* server, const char* model_name, const int64_t model_version,
    const uint32_t config_version, TRITONSERVER_Message** model_config);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerModelIndex(
    TRITONSERVER_Server* server, uint32_t flags, TRITONSERVER_Message** model_index);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerLoadModel(TRITONSERVER_Server* server, const char* model_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerLoadModelWithParameters(
    TRITONSERVER_Server* server, const char* model_name, const TRITONSERVER_Parameter** parameters,
    const uint64_t parameter_count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerUnloadModel(TRITONSERVER_Server* server, const char* model_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerUnloadModelAndDependents(
    TRITONSERVER_Server* server, const char* model_name);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerMetrics(TRITONSERVER_Server* server, TRITONSERVER_Metrics** metrics);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_ServerInferAsync(
    TRITONSERVER_Server* server, TRITONSERVER_InferenceRequest* inference_request,
    TRITONSERVER_InferenceTrace* trace);

TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(
    TRITONSERVER_MetricFamily** family, const TRITONSERVER_MetricKind kind, const char* name,
    const char* description);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily* family);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs** args);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricArgsSetHistogram(
    TRITONSERVER_MetricArgs* args, const double* buckets, const uint64_t buckets_count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(TRITONSERVER_MetricArgs* args);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricNew(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricNewWithArgs(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count,
    const TRITONSERVER_MetricArgs* args);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric* metric);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricValue(TRITONSERVER_Metric* metric, double* value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric* metric, double value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric* metric, double value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_MetricObserve(TRITONSERVER_Metric* metric, double value);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_GetMetricKind(TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind);
TRITIUM_API TRITONSERVER_Error* TRITONSERVER_GetMetricFamilyKind(
    TRITONSERVER_MetricFamily* family, TRITONSERVER_MetricKind* kind);

/* ================= TRITONBACKEND ================= */
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ApiVersion(uint32_t* major, uint32_t* minor);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_MemoryManagerAllocate(
    TRITONBACKEND_MemoryManager* manager, void** buffer, const TRITONSERVER_MemoryType memory_type,
    const int64_t memory_type_id, const uint64_t byte_size);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_MemoryManagerFree(
    TRITONBACKEND_MemoryManager* manager, void* buffer, const TRITONSERVER_MemoryType memory_type,
    const int64_t memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InputProperties(
    TRITONBACKEND_Input* input, const char** name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InputPropertiesForHostPolicy(
    TRITONBACKEND_Input* input, const char* host_policy_name, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape, uint32_t* dims_count,
    uint64_t* byte_size, uint32_t* buffer_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InputBuffer(
    TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
    uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InputBufferForHostPolicy(
    TRITONBACKEND_Input* input, const char* host_policy_name, const uint32_t index,
    const void** buffer, uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
    int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InputBufferAttributes(
    TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
    TRITONSERVER_BufferAttributes** buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(
    TRITONBACKEND_Output* output, void** buffer, const uint64_t buffer_byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_OutputBufferAttributes(
    TRITONBACKEND_Output* output, TRITONSERVER_BufferAttributes** buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestId(TRITONBACKEND_Request* request, const char** id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestIsCancelled(TRITONBACKEND_Request* request, bool* is_cancelled);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryIsCancelled(
    TRITONBACKEND_ResponseFactory* factory, bool* is_cancelled);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationId(TRITONBACKEND_Request* request, uint64_t* id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InferenceRequestTimeoutMicroseconds(
    TRITONBACKEND_Request* request, uint64_t* timeout);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestCorrelationIdString(TRITONBACKEND_Request* request, const char** id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestFlags(TRITONBACKEND_Request* request, uint32_t* flags);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestParameterCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestParameter(
    TRITONBACKEND_Request* request, const uint32_t index, const char** key,
    TRITONSERVER_ParameterType* type, const void** vvalue);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestInputName(
    TRITONBACKEND_Request* request, const uint32_t index, const char** input_name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestInput(
    TRITONBACKEND_Request* request, const char* name, TRITONBACKEND_Input** input);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestInputByIndex(
    TRITONBACKEND_Request* request, const uint32_t index, TRITONBACKEND_Input** input);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(TRITONBACKEND_Request* request, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(
    TRITONBACKEND_Request* request, const uint32_t index, const char** output_name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestOutputBufferProperties(
    TRITONBACKEND_Request* request, const char* name, size_t* byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestRelease(TRITONBACKEND_Request* request, uint32_t release_flags);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_RequestTrace(
    TRITONBACKEND_Request* request, TRITONSERVER_InferenceTrace** trace);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryNew(
    TRITONBACKEND_ResponseFactory** factory, TRITONBACKEND_Request* request);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseFactoryDelete(TRITONBACKEND_ResponseFactory* factory);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseFactorySendFlags(
    TRITONBACKEND_ResponseFactory* factory, const uint32_t send_flags);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseNew(
    TRITONBACKEND_Response** response, TRITONBACKEND_Request* request);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseNewFromFactory(
    TRITONBACKEND_Response** response, TRITONBACKEND_ResponseFactory* factory);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseDelete(TRITONBACKEND_Response* response);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseSetStringParameter(
    TRITONBACKEND_Response* response, const char* name, const char* value);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseSetIntParameter(
    TRITONBACKEND_Response* response, const char* name, const int64_t value);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseSetBoolParameter(
    TRITONBACKEND_Response* response, const char* name, const bool value);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseSetDoubleParameter(
    TRITONBACKEND_Response* response, const char* name, const double value);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(
    TRITONBACKEND_Response* response, TRITONBACKEND_Output** output, const char* name,
    const TRITONSERVER_DataType datatype, const int64_t* shape, const uint32_t dims_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ResponseSend(
    TRITONBACKEND_Response* response, const uint32_t send_flags, TRITONSERVER_Error* error);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_StateNew(
    TRITONBACKEND_State** state, TRITONBACKEND_Request* request, const char* name,
    const TRITONSERVER_DataType datatype, const int64_t* shape, const uint32_t dims_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_StateUpdate(TRITONBACKEND_State* state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_StateBuffer(
    TRITONBACKEND_State* state, void** buffer, const uint64_t buffer_byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_StateBufferAttributes(
    TRITONBACKEND_State* state, TRITONSERVER_BufferAttributes** buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendName(TRITONBACKEND_Backend* backend, const char** name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendConfig(
    TRITONBACKEND_Backend* backend, TRITONSERVER_Message** backend_config);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendExecutionPolicy(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ExecutionPolicy* policy);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendSetExecutionPolicy(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ExecutionPolicy policy);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendArtifacts(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_ArtifactType* artifact_type, const char** location);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendMemoryManager(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_MemoryManager** manager);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendState(TRITONBACKEND_Backend* backend, void** state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendSetState(TRITONBACKEND_Backend* backend, void* state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelName(TRITONBACKEND_Model* model, const char** name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelVersion(TRITONBACKEND_Model* model, uint64_t* version);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelRepository(
    TRITONBACKEND_Model* model, TRITONBACKEND_ArtifactType* artifact_type, const char** location);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelConfig(
    TRITONBACKEND_Model* model, const uint32_t config_version, TRITONSERVER_Message** model_config);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelAutoCompleteConfig(TRITONBACKEND_Model* model, bool* auto_complete_config);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelSetConfig(
    TRITONBACKEND_Model* model, const uint32_t config_version, TRITONSERVER_Message* model_config);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelServer(TRITONBACKEND_Model* model, TRITONSERVER_Server** server);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelBackend(TRITONBACKEND_Model* model, TRITONBACKEND_Backend** backend);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelState(TRITONBACKEND_Model* model, void** state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelSetState(TRITONBACKEND_Model* model, void* state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelReportMemoryUsage(
    TRITONBACKEND_Model* model, TRITONSERVER_BufferAttributes** usage, uint32_t usage_size);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceName(TRITONBACKEND_ModelInstance* instance, const char** name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceKind(
    TRITONBACKEND_ModelInstance* instance, TRITONSERVER_InstanceGroupKind* kind);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceDeviceId(TRITONBACKEND_ModelInstance* instance, int32_t* device_id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceHostPolicy(
    TRITONBACKEND_ModelInstance* instance, TRITONSERVER_Message** host_policy);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceIsPassive(TRITONBACKEND_ModelInstance* instance, bool* is_passive);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileCount(TRITONBACKEND_ModelInstance* instance, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceProfileName(
    TRITONBACKEND_ModelInstance* instance, const uint32_t index, const char** profile_name);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceCount(
    TRITONBACKEND_ModelInstance* instance, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSecondaryDeviceProperties(
    TRITONBACKEND_ModelInstance* instance, uint32_t index, const char** kind, int64_t* id);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceModel(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Model** model);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceState(TRITONBACKEND_ModelInstance* instance, void** state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceSetState(TRITONBACKEND_ModelInstance* instance, void* state);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportMemoryUsage(
    TRITONBACKEND_ModelInstance* instance, TRITONSERVER_BufferAttributes** usage, uint32_t usage_size);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request, const bool success,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns, const uint64_t exec_end_ns);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsNew(
    TRITONBACKEND_ModelInstanceResponseStatistics** response_statistics);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsDelete(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetModelInstance(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    TRITONBACKEND_ModelInstance* model_instance);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseFactory(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics,
    TRITONBACKEND_ResponseFactory* response_factory);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, uint64_t response_start);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetComputeOutputStart(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, uint64_t compute_output_start);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetResponseEnd(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, uint64_t response_end);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceResponseStatisticsSetError(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics, TRITONSERVER_Error* error);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportResponseStatistics(
    TRITONBACKEND_ModelInstanceResponseStatistics* response_statistics);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendAttributeAddPreferredInstanceGroup(
    TRITONBACKEND_BackendAttribute* backend_attributes, const TRITONSERVER_InstanceGroupKind kind,
    const uint64_t count, const uint64_t* device_ids, const uint64_t id_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_BackendAttributeSetParallelModelInstanceLoading(
    TRITONBACKEND_BackendAttribute* backend_attributes, bool enabled);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutputByName(
    TRITONBACKEND_Response* response, const char* name, TRITONSERVER_DataType* datatype,
    const int64_t** shape, uint64_t* dim_count);
TRITIUM_API TRITONSERVER_Error* TRITONBACKEND_InferenceResponseOutput(
    TRITONBACKEND_Response* response, const uint32_t index, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape, uint64_t* dim_count);

/* Entry points a backend implements (found by name with dlsym). */
TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend);
TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend);
TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model);
TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance);
TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
    const uint32_t request_count);
TRITONSERVER_Error* TRITONBACKEND_GetBackendAttribute(
    TRITONBACKEND_Backend* backend, TRITONBACKEND_BackendAttribute* backend_attributes);

/* What a custom batching strategy library defines (all five or none): found in the model's
 * TRITON_BATCH_STRATEGY_PATH parameter or a batchstrategy.so, consulted by the dynamic batcher. */
TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelBatcherInitialize(
    TRITONBACKEND_Batcher** batcher, TRITONBACKEND_Model* model);
TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelBatcherFinalize(
    TRITONBACKEND_Batcher* batcher);
TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelBatchIncludeRequest(
    TRITONBACKEND_Request* request, void* userp, bool* should_include);
TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelBatchInitialize(
    const TRITONBACKEND_Batcher* batcher, void** userp);
TRITONBACKEND_ISPEC TRITONSERVER_Error* TRITONBACKEND_ModelBatchFinalize(void* userp);

/* ================= TRITONREPOAGENT (repository agents, API 0.1) ========================== */
#define TRITONREPOAGENT_API_VERSION_MAJOR 0
#define TRITONREPOAGENT_API_VERSION_MINOR 1
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ApiVersion(uint32_t* major, uint32_t* minor);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocation(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
    TRITONREPOAGENT_ArtifactType* artifact_type, const char** location);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationAcquire(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char** location);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationRelease(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const char* location);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryUpdate(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char* location);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelParameterCount(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, uint32_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelParameter(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model, const uint32_t index,
    const char** parameter_name, const char** parameter_value);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelConfig(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
    const uint32_t config_version, TRITONSERVER_Message** model_config);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelState(TRITONREPOAGENT_AgentModel* model, void** state);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_ModelSetState(TRITONREPOAGENT_AgentModel* model, void* state);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_State(TRITONREPOAGENT_Agent* agent, void** state);
TRITIUM_API TRITONSERVER_Error* TRITONREPOAGENT_SetState(TRITONREPOAGENT_Agent* agent, void* state);
/* What a repository agent library defines (Initialize, Finalize and the model pair optional). */
TRITONREPOAGENT_ISPEC TRITONSERVER_Error* TRITONREPOAGENT_Initialize(TRITONREPOAGENT_Agent* agent);
TRITONREPOAGENT_ISPEC TRITONSERVER_Error* TRITONREPOAGENT_Finalize(TRITONREPOAGENT_Agent* agent);
TRITONREPOAGENT_ISPEC TRITONSERVER_Error* TRITONREPOAGENT_ModelInitialize(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model);
TRITONREPOAGENT_ISPEC TRITONSERVER_Error* TRITONREPOAGENT_ModelFinalize(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model);
TRITONREPOAGENT_ISPEC TRITONSERVER_Error* TRITONREPOAGENT_ModelAction(
    TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
    const TRITONREPOAGENT_ActionType action_type);

/* ================= TRITONCACHE (exported, not implemented) ============================== */
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_ApiVersion(uint32_t* major, uint32_t* minor);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntryBufferCount(TRITONCACHE_CacheEntry* entry, size_t* count);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntryAddBuffer(
    TRITONCACHE_CacheEntry* entry, void* base, TRITONSERVER_BufferAttributes* buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntryGetBuffer(
    TRITONCACHE_CacheEntry* entry, size_t index, void** base,
    TRITONSERVER_BufferAttributes* buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntrySetBuffer(
    TRITONCACHE_CacheEntry* entry, size_t index, void* new_base,
    TRITONSERVER_BufferAttributes* buffer_attributes);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntryNew(TRITONCACHE_CacheEntry** entry);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_CacheEntryDelete(TRITONCACHE_CacheEntry* entry);
TRITIUM_API TRITONSERVER_Error* TRITONCACHE_Copy(TRITONCACHE_Allocator* allocator, TRITONCACHE_CacheEntry* entry);

#ifdef __cplusplus
}
#endif
#endif

// TRITONSERVER_ServerOptions: what a program sets before TRITONSERVER_ServerNew. The options
// are kept here, with Triton's defaults for its C API (POLL control mode, strict model
// configuration, logging of info, warnings and errors on), and travel to the Python server
// as one JSON object named as `tritium.inprocess.Options` names them (server_options_json).
// Options about pinned memory, CUDA memory pools, repository agents and host policies are
// accepted and kept, as Tritium has nothing they act on.
#include <map>
#include <sstream>

#include "server_object.h"

// {group: {setting: value}}: backend and metrics configuration.
using Settings = std::map<std::string, std::map<std::string, std::string>>;

struct TRITONSERVER_ServerOptions {
  std::string server_id = "triton";
  std::vector<std::string> repositories;
  int control_mode = TRITONSERVER_MODEL_CONTROL_POLL;
  std::vector<std::string> startup_models;
  bool strict_model_config = true;
  std::string model_config_name;
  int rate_limit_mode = TRITONSERVER_RATE_LIMIT_OFF;
  std::map<int, std::map<std::string, size_t>> rate_limit_resources;  // device -> name -> n
  std::map<std::string, std::string> cache_configs;                   // name -> JSON text
  double min_compute_capability = 6.0;
  bool exit_on_error = true;
  bool strict_readiness = true;
  bool model_namespacing = false;
  unsigned int exit_timeout = 30;
  unsigned int model_load_thread_count = 4;
  unsigned int model_load_retry_count = 0;
  std::string log_file;
  bool log_info = true, log_warn = true, log_error = true;
  int log_format = TRITONSERVER_LOG_DEFAULT;
  int log_verbose = 0;
  bool metrics = true, gpu_metrics = true, cpu_metrics = true;
  uint64_t metrics_interval_ms = 2000;
  std::string backend_directory = "/opt/tritonserver/backends";
  std::string repo_agent_directory = "/opt/tritonserver/repoagents";
  Settings backend_config;
  std::map<int, double> gpu_load_limits;
  Settings metrics_config;
};

static TRITONSERVER_Error* require_options(TRITONSERVER_ServerOptions* o, const char* fn) {
  if (o == nullptr) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, std::string(fn) + ": options must not be null");
  }
  return nullptr;
}
#define TRITIUM_OPTIONS(fn)                                        \
  do {                                                             \
    if (TRITONSERVER_Error* err = require_options(o, fn)) return err; \
  } while (0)
// TRITONSERVER_ServerOptions<Name>(options, value): keeps `convert(value)` in `field`.
#define TRITIUM_SETTER(Name, Type, field, convert)                                          \
  TRITONSERVER_Error* TRITONSERVER_ServerOptions##Name(TRITONSERVER_ServerOptions* o,      \
                                                       Type value) {                       \
    TRITIUM_OPTIONS("TRITONSERVER_ServerOptions" #Name);                                   \
    o->field = convert(value);                                                             \
    return nullptr;                                                                        \
  }

static std::string text(const char* s) { return s != nullptr ? s : ""; }

// `group`'s `setting` = `value` (backend and metrics configuration; a null group is "").
static TRITONSERVER_Error* add_setting(Settings* groups, const char* fn, const char* group,
                                       const char* setting, const char* value) {
  TRITIUM_NOT_NULL(setting, fn);
  TRITIUM_NOT_NULL(value, fn);
  (*groups)[text(group)][setting] = value;
  return nullptr;
}

std::string server_options_json(const TRITONSERVER_ServerOptions* o) {
  std::ostringstream out;
  out.precision(17);
  auto strings = [&](const std::vector<std::string>& items) {
    out << "[";
    for (size_t i = 0; i < items.size(); ++i) out << (i ? "," : "") << json_string(items[i]);
    out << "]";
  };
  auto flag = [](bool b) { return b ? "true" : "false"; };
  auto settings = [&](const Settings& groups) {
    out << "{";
    bool first_group = true;
    for (const auto& group : groups) {
      out << (first_group ? "" : ",") << json_string(group.first) << ":{";
      bool first_setting = true;
      for (const auto& setting : group.second) {
        out << (first_setting ? "" : ",") << json_string(setting.first) << ":"
            << json_string(setting.second);
        first_setting = false;
      }
      out << "}";
      first_group = false;
    }
    out << "}";
  };
  out << "{\"server_id\":" << json_string(o->server_id) << ",\"model_repository\":";
  strings(o->repositories);
  out << ",\"model_control_mode\":" << o->control_mode << ",\"startup_models\":";
  strings(o->startup_models);
  out << ",\"strict_model_config\":" << flag(o->strict_model_config)
      << ",\"model_config_name\":" << json_string(o->model_config_name)
      << ",\"rate_limiter_mode\":" << o->rate_limit_mode << ",\"rate_limiter_resources\":[";
  bool first = true;
  for (const auto& device : o->rate_limit_resources) {
    for (const auto& resource : device.second) {
      out << (first ? "" : ",") << "[" << json_string(resource.first) << "," << resource.second
          << "," << device.first << "]";
      first = false;
    }
  }
  out << "],\"cache_config\":{";
  first = true;
  for (const auto& cache : o->cache_configs) {
    out << (first ? "" : ",") << json_string(cache.first) << ":" << json_string(cache.second);
    first = false;
  }
  out << "},\"min_supported_compute_capability\":" << o->min_compute_capability
      << ",\"exit_on_error\":" << flag(o->exit_on_error)
      << ",\"strict_readiness\":" << flag(o->strict_readiness)
      << ",\"model_namespacing\":" << flag(o->model_namespacing)
      << ",\"exit_timeout\":" << o->exit_timeout
      << ",\"model_load_thread_count\":" << o->model_load_thread_count
      << ",\"model_load_retry_count\":" << o->model_load_retry_count
      << ",\"log_file\":" << json_string(o->log_file) << ",\"log_info\":" << flag(o->log_info)
      << ",\"log_warn\":" << flag(o->log_warn) << ",\"log_error\":" << flag(o->log_error)
      << ",\"log_format\":" << o->log_format << ",\"log_verbose\":" << o->log_verbose
      << ",\"metrics\":" << flag(o->metrics) << ",\"gpu_metrics\":" << flag(o->gpu_metrics)
      << ",\"cpu_metrics\":" << flag(o->cpu_metrics)
      << ",\"metrics_interval\":" << o->metrics_interval_ms
      << ",\"backend_directory\":" << json_string(o->backend_directory)
      << ",\"repo_agent_directory\":" << json_string(o->repo_agent_directory)
      << ",\"backend_configuration\":";
  settings(o->backend_config);
  out << ",\"metrics_configuration\":";
  settings(o->metrics_config);
  out << ",\"model_load_gpu_limit\":{";
  first = true;
  for (const auto& limit : o->gpu_load_limits) {
    out << (first ? "" : ",") << "\"" << limit.first << "\":" << limit.second;
    first = false;
  }
  out << "}}";
  return out.str();
}

extern "C" {

TRITONSERVER_Error* TRITONSERVER_ServerOptionsNew(TRITONSERVER_ServerOptions** options) {
  TRITIUM_NOT_NULL(options, "TRITONSERVER_ServerOptionsNew");
  *options = new TRITONSERVER_ServerOptions{};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsDelete(TRITONSERVER_ServerOptions* options) {
  delete options;
  return nullptr;
}
TRITIUM_SETTER(SetServerId, const char*, server_id, text)
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelRepositoryPath(TRITONSERVER_ServerOptions* o, const char* path) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetModelRepositoryPath");
  TRITIUM_NOT_NULL(path, "TRITONSERVER_ServerOptionsSetModelRepositoryPath");
  // A set in Triton: the same path twice is one repository.
  for (const auto& known : o->repositories) {
    if (known == path) return nullptr;
  }
  o->repositories.emplace_back(path);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelControlMode(TRITONSERVER_ServerOptions* o, TRITONSERVER_ModelControlMode mode) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetModelControlMode");
  TRITIUM_REQUIRE(mode >= TRITONSERVER_MODEL_CONTROL_NONE && mode <= TRITONSERVER_MODEL_CONTROL_EXPLICIT,
                  TRITONSERVER_ERROR_INVALID_ARG,
                  "unknown control mode '" + std::to_string(static_cast<int>(mode)) + "'");
  o->control_mode = mode;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetStartupModel(TRITONSERVER_ServerOptions* o, const char* model_name) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetStartupModel");
  TRITIUM_NOT_NULL(model_name, "TRITONSERVER_ServerOptionsSetStartupModel");
  o->startup_models.emplace_back(model_name);
  return nullptr;
}
TRITIUM_SETTER(SetStrictModelConfig, bool, strict_model_config, )
TRITIUM_SETTER(SetModelConfigName, const char*, model_config_name, text)
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetRateLimiterMode(TRITONSERVER_ServerOptions* o, TRITONSERVER_RateLimitMode mode) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetRateLimiterMode");
  TRITIUM_REQUIRE(mode == TRITONSERVER_RATE_LIMIT_OFF || mode == TRITONSERVER_RATE_LIMIT_EXEC_COUNT,
                  TRITONSERVER_ERROR_INVALID_ARG,
                  "unknown rate limit mode '" + std::to_string(static_cast<int>(mode)) + "'");
  o->rate_limit_mode = mode;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsAddRateLimiterResource(TRITONSERVER_ServerOptions* o, const char* resource_name, const size_t resource_count, const int device) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsAddRateLimiterResource");
  TRITIUM_NOT_NULL(resource_name, "TRITONSERVER_ServerOptionsAddRateLimiterResource");
  // Added twice, a resource keeps the smaller count, as in Triton.
  auto& resources = o->rate_limit_resources[device];
  auto known = resources.emplace(resource_name, resource_count).first;
  if (known->second > resource_count) known->second = resource_count;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize(TRITONSERVER_ServerOptions* o, uint64_t) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetPinnedMemoryPoolByteSize");
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize(TRITONSERVER_ServerOptions* o, int, uint64_t) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetCudaMemoryPoolByteSize");
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize(TRITONSERVER_ServerOptions* o, int, size_t) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetCudaVirtualAddressSize");
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheConfig(TRITONSERVER_ServerOptions* o, const char* cache_name, const char* config_json) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetCacheConfig");
  TRITIUM_NOT_NULL(cache_name, "TRITONSERVER_ServerOptionsSetCacheConfig");
  TRITIUM_NOT_NULL(config_json, "TRITONSERVER_ServerOptionsSetCacheConfig");
  o->cache_configs[cache_name] = config_json;  // checked as JSON when the server is made
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetResponseCacheByteSize(TRITONSERVER_ServerOptions* o, uint64_t size) {
  // Triton's older call: a size is the local cache of that size; 0 changes nothing.
  if (size == 0) return nullptr;
  const std::string config = "{\"size\": " + std::to_string(size) + "}";
  return TRITONSERVER_ServerOptionsSetCacheConfig(o, "local", config.c_str());
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetCacheDirectory(TRITONSERVER_ServerOptions* o, const char*) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetCacheDirectory");
  return nullptr;  // Tritium's caches are built in: no directory to look in
}
TRITIUM_SETTER(SetMinSupportedComputeCapability, double, min_compute_capability, )
TRITIUM_SETTER(SetExitOnError, bool, exit_on_error, )
TRITIUM_SETTER(SetStrictReadiness, bool, strict_readiness, )
TRITIUM_SETTER(SetExitTimeout, unsigned int, exit_timeout, )
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBufferManagerThreadCount(TRITONSERVER_ServerOptions* o, unsigned int) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetBufferManagerThreadCount");
  return nullptr;
}
TRITIUM_SETTER(SetModelLoadThreadCount, unsigned int, model_load_thread_count, )
TRITIUM_SETTER(SetModelLoadRetryCount, unsigned int, model_load_retry_count, )
TRITIUM_SETTER(SetModelNamespacing, bool, model_namespacing, )
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetEnablePeerAccess(TRITONSERVER_ServerOptions* o, bool) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetEnablePeerAccess");
  return nullptr;
}
TRITIUM_SETTER(SetLogFile, const char*, log_file, text)
TRITIUM_SETTER(SetLogInfo, bool, log_info, )
TRITIUM_SETTER(SetLogWarn, bool, log_warn, )
TRITIUM_SETTER(SetLogError, bool, log_error, )
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetLogFormat(TRITONSERVER_ServerOptions* o, const TRITONSERVER_LogFormat format) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetLogFormat");
  TRITIUM_REQUIRE(format == TRITONSERVER_LOG_DEFAULT || format == TRITONSERVER_LOG_ISO8601,
                  TRITONSERVER_ERROR_INVALID_ARG,
                  "unknown log format '" + std::to_string(static_cast<int>(format)) + "'");
  o->log_format = format;
  return nullptr;
}
TRITIUM_SETTER(SetLogVerbose, int, log_verbose, )
TRITIUM_SETTER(SetMetrics, bool, metrics, )
TRITIUM_SETTER(SetGpuMetrics, bool, gpu_metrics, )
TRITIUM_SETTER(SetCpuMetrics, bool, cpu_metrics, )
TRITIUM_SETTER(SetMetricsInterval, uint64_t, metrics_interval_ms, )
TRITIUM_SETTER(SetBackendDirectory, const char*, backend_directory, text)
TRITIUM_SETTER(SetRepoAgentDirectory, const char*, repo_agent_directory, text)
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit(TRITONSERVER_ServerOptions* o, const TRITONSERVER_InstanceGroupKind kind, const int device_id, const double fraction) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetModelLoadDeviceLimit");
  TRITIUM_REQUIRE(device_id >= 0, TRITONSERVER_ERROR_INVALID_ARG,
                  "expects device ID >= 0, got " + std::to_string(device_id));
  TRITIUM_REQUIRE(fraction >= 0.0 && fraction <= 1.0, TRITONSERVER_ERROR_INVALID_ARG,
                  "expects limit fraction to be in range [0.0, 1.0], got " + std::to_string(fraction));
  TRITIUM_REQUIRE(kind == TRITONSERVER_INSTANCEGROUPKIND_GPU, TRITONSERVER_ERROR_INVALID_ARG,
                  std::string("given device kind is not supported, got: ") +
                      TRITONSERVER_InstanceGroupKindString(kind));
  o->gpu_load_limits[device_id] = fraction;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetBackendConfig(TRITONSERVER_ServerOptions* o, const char* backend_name, const char* setting, const char* value) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetBackendConfig");
  return add_setting(&o->backend_config, "TRITONSERVER_ServerOptionsSetBackendConfig", backend_name, setting, value);
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetHostPolicy(TRITONSERVER_ServerOptions* o, const char* policy_name, const char*, const char*) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetHostPolicy");
  TRITIUM_NOT_NULL(policy_name, "TRITONSERVER_ServerOptionsSetHostPolicy");
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_ServerOptionsSetMetricsConfig(TRITONSERVER_ServerOptions* o, const char* name, const char* setting, const char* value) {
  TRITIUM_OPTIONS("TRITONSERVER_ServerOptionsSetMetricsConfig");
  return add_setting(&o->metrics_config, "TRITONSERVER_ServerOptionsSetMetricsConfig", name, setting, value);
}

}  // extern "C"

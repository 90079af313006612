// Custom metrics a backend registers (TRITONSERVER_MetricFamily, TRITONSERVER_Metric): each
// family and metric is a handle on the Python server's own, exported on /metrics with them.
#include "host.h"

struct TRITONSERVER_MetricFamily {
  uint64_t handle;
  TRITONSERVER_MetricKind kind;
  std::atomic<int> metrics{0};
};

struct TRITONSERVER_Metric {
  uint64_t handle;
  TRITONSERVER_MetricFamily* family;
};

struct TRITONSERVER_MetricArgs {
  bool histogram = false;
  std::vector<double> buckets;
};

extern "C" {

TRITONSERVER_Error* TRITONSERVER_MetricFamilyNew(
    TRITONSERVER_MetricFamily** family, const TRITONSERVER_MetricKind kind, const char* name,
    const char* description) {
  TRITIUM_NOT_NULL(name, "TRITONSERVER_MetricFamilyNew");
  if (!g_host_set) return no_host("TRITONSERVER_MetricFamilyNew");
  uint64_t handle = 0;
  TRITONSERVER_Error* err = g_host.metric_call(MOP_FAMILY_NEW, 0, kind, name,
                                               description != nullptr ? description : "", 0,
                                               nullptr, 0, &handle, nullptr);
  if (err != nullptr) return err;
  *family = new TRITONSERVER_MetricFamily{};
  (*family)->handle = handle;
  (*family)->kind = kind;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricFamilyDelete(TRITONSERVER_MetricFamily* family) {
  TRITIUM_NOT_NULL(family, "TRITONSERVER_MetricFamilyDelete");
  if (family->metrics.load() > 0) {
    return make_error(TRITONSERVER_ERROR_INTERNAL,
                      "Must call MetricDelete on all dependent metrics before calling "
                      "MetricFamilyDelete.");
  }
  if (g_host_set) {
    g_host.metric_call(MOP_FAMILY_DELETE, family->handle, family->kind, "", "", 0, nullptr, 0,
                       nullptr, nullptr);
  }
  delete family;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsNew(TRITONSERVER_MetricArgs** args) {
  *args = new TRITONSERVER_MetricArgs{};
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsSetHistogram(
    TRITONSERVER_MetricArgs* args, const double* buckets, const uint64_t count) {
  args->histogram = true;
  args->buckets.assign(buckets, buckets + count);
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricArgsDelete(TRITONSERVER_MetricArgs* args) {
  delete args;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricNewWithArgs(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count,
    const TRITONSERVER_MetricArgs* args) {
  TRITIUM_NOT_NULL(family, "TRITONSERVER_MetricNew");
  if (!g_host_set) return no_host("TRITONSERVER_MetricNew");
  // Triton's checks and messages (MetricFamily::Add).
  bool histogram = family->kind == TRITONSERVER_METRIC_KIND_HISTOGRAM;
  if (!histogram && args != nullptr) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string("Unexpected args found in ") +
                          (family->kind == TRITONSERVER_METRIC_KIND_COUNTER ? "counter" : "gauge") +
                          " Metric constructor.");
  }
  if (histogram && args == nullptr) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, "Bucket boundaries not found in Metric args.");
  }
  if (histogram && !args->histogram) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG, "Metric args not set to histogram kind.");
  }
  std::string json = "{";
  for (uint64_t i = 0; i < label_count; ++i) {
    if (labels[i]->type != TRITONSERVER_PARAMETER_STRING) {
      return make_error(TRITONSERVER_ERROR_INVALID_ARG, "metric labels must be strings");
    }
    if (i > 0) json += ",";
    json += json_string(labels[i]->name) + ":" + json_string(labels[i]->string_value);
  }
  json += "}";
  uint64_t handle = 0;
  const double* buckets = histogram ? args->buckets.data() : nullptr;
  uint64_t bucket_count = histogram ? args->buckets.size() : 0;
  TRITONSERVER_Error* err = g_host.metric_call(MOP_METRIC_NEW, family->handle, family->kind,
                                               json.c_str(), "", 0, buckets, bucket_count,
                                               &handle, nullptr);
  if (err != nullptr) return err;
  *metric = new TRITONSERVER_Metric{handle, family};
  family->metrics += 1;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_MetricNew(
    TRITONSERVER_Metric** metric, TRITONSERVER_MetricFamily* family,
    const TRITONSERVER_Parameter** labels, const uint64_t label_count) {
  return TRITONSERVER_MetricNewWithArgs(metric, family, labels, label_count, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricDelete(TRITONSERVER_Metric* metric) {
  TRITIUM_NOT_NULL(metric, "TRITONSERVER_MetricDelete");
  if (g_host_set) {
    g_host.metric_call(MOP_METRIC_DELETE, metric->handle, metric->family->kind, "", "", 0,
                       nullptr, 0, nullptr, nullptr);
  }
  metric->family->metrics -= 1;
  delete metric;
  return nullptr;
}
static TRITONSERVER_Error* metric_op(int op, TRITONSERVER_Metric* metric, double value, double* out) {
  TRITIUM_NOT_NULL(metric, "TRITONSERVER_Metric*");
  if (!g_host_set) return no_host("TRITONSERVER_Metric*");
  return g_host.metric_call(op, metric->handle, metric->family->kind, "", "", value, nullptr, 0,
                            nullptr, out);
}
TRITONSERVER_Error* TRITONSERVER_MetricValue(TRITONSERVER_Metric* metric, double* value) {
  return metric_op(MOP_VALUE, metric, 0, value);
}
TRITONSERVER_Error* TRITONSERVER_MetricIncrement(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_INCREMENT, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricSet(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_SET, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_MetricObserve(TRITONSERVER_Metric* metric, double value) {
  return metric_op(MOP_OBSERVE, metric, value, nullptr);
}
TRITONSERVER_Error* TRITONSERVER_GetMetricKind(TRITONSERVER_Metric* metric, TRITONSERVER_MetricKind* kind) {
  *kind = metric->family->kind;
  return nullptr;
}
TRITONSERVER_Error* TRITONSERVER_GetMetricFamilyKind(TRITONSERVER_MetricFamily* family, TRITONSERVER_MetricKind* kind) {
  *kind = family->kind;
  return nullptr;
}
}  // extern "C"

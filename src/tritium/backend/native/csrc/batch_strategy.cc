// Custom batching strategies (Triton's TRITONBACKEND_ModelBatch* API): a library a model names
// (TRITON_BATCH_STRATEGY_PATH, or a batchstrategy.so beside it or its backend) that the dynamic
// batcher asks, request by request, whether the batch it is forming takes one more.
//
// The library is opened per model version, as Triton's TritonModel opens it: the batcher object
// the strategy makes at load (ModelBatcherInitialize) lives as long as the model, and each batch
// being formed gets its own user pointer between ModelBatchInitialize and ModelBatchFinalize.
// The Python side (batch_strategy.py) decides when each call is made.
#include <dlfcn.h>

#include <string>

#include "host.h"

namespace {

typedef TRITONSERVER_Error* (*IncludeFn)(TRITONBACKEND_Request*, void*, bool*);
typedef TRITONSERVER_Error* (*BatchInitFn)(const TRITONBACKEND_Batcher*, void**);
typedef TRITONSERVER_Error* (*BatchFiniFn)(void*);
typedef TRITONSERVER_Error* (*BatcherInitFn)(TRITONBACKEND_Batcher**, TRITONBACKEND_Model*);
typedef TRITONSERVER_Error* (*BatcherFiniFn)(TRITONBACKEND_Batcher*);

}  // namespace

struct TritiumBatchStrategy {
  void* handle = nullptr;
  IncludeFn include = nullptr;
  BatchInitFn batch_init = nullptr;
  BatchFiniFn batch_fini = nullptr;
  BatcherInitFn batcher_init = nullptr;
  BatcherFiniFn batcher_fini = nullptr;
  TRITONBACKEND_Batcher* batcher = nullptr;
};

// Opens `path` and, when it defines the strategy functions, makes the model's batcher with them.
// *out is null (and no error) for a library defining none of them: Triton then batches as usual.
// An error from ModelBatcherInitialize is the strategy's own, code and message, for the load.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_strategy_open(
    const char* path, const char* model_name, TRITONBACKEND_Model* model,
    TritiumBatchStrategy** out) {
  *out = nullptr;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return make_error(TRITONSERVER_ERROR_NOT_FOUND,
                      std::string("unable to load shared library: ") +
                          (reason != nullptr ? reason : path));
  }
  auto* s = new TritiumBatchStrategy{};
  s->handle = handle;
  s->include = reinterpret_cast<IncludeFn>(dlsym(handle, "TRITONBACKEND_ModelBatchIncludeRequest"));
  s->batch_init = reinterpret_cast<BatchInitFn>(dlsym(handle, "TRITONBACKEND_ModelBatchInitialize"));
  s->batch_fini = reinterpret_cast<BatchFiniFn>(dlsym(handle, "TRITONBACKEND_ModelBatchFinalize"));
  s->batcher_init =
      reinterpret_cast<BatcherInitFn>(dlsym(handle, "TRITONBACKEND_ModelBatcherInitialize"));
  s->batcher_fini =
      reinterpret_cast<BatcherFiniFn>(dlsym(handle, "TRITONBACKEND_ModelBatcherFinalize"));
  const int defined = (s->include != nullptr) + (s->batch_init != nullptr) +
                      (s->batch_fini != nullptr) + (s->batcher_init != nullptr) +
                      (s->batcher_fini != nullptr);
  if (defined != 5) {
    dlclose(handle);
    delete s;
    if (defined == 0) return nullptr;
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string(path) +
                          " does not define all required custom batching functions for model " +
                          model_name);
  }
  TRITONSERVER_Error* err = s->batcher_init(&s->batcher, model);
  if (err != nullptr) {
    dlclose(handle);
    delete s;
    return err;
  }
  *out = s;
  return nullptr;
}

// A batch is being formed: the strategy's user pointer for it.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_strategy_batch_begin(TritiumBatchStrategy* s,
                                                                void** userp) {
  *userp = nullptr;
  return s->batch_init(s->batcher, userp);
}

// Whether the batch under `userp` takes `request`.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_strategy_include(
    TritiumBatchStrategy* s, TRITONBACKEND_Request* request, void* userp, int* include) {
  bool should_include = false;
  TRITONSERVER_Error* err = s->include(request, userp, &should_include);
  *include = should_include ? 1 : 0;  // as the strategy left it, even when it failed
  return err;
}

// The batch is formed: the strategy frees what it kept for it.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_strategy_batch_end(TritiumBatchStrategy* s,
                                                              void* userp) {
  return s->batch_fini(userp);
}

// The model is unloading: ModelBatcherFinalize, then the library is closed (whatever it says).
TRITIUM_EXPORT TRITONSERVER_Error* tritium_strategy_close(TritiumBatchStrategy* s) {
  TRITONSERVER_Error* err = s->batcher_fini(s->batcher);
  dlclose(s->handle);
  delete s;
  return err;
}

// Test custom batching library that defines only one of the five strategy functions: the
// model naming it must fail to load (all or none).
#include "common.h"

extern "C" TRITONSERVER_Error* TRITONBACKEND_ModelBatchIncludeRequest(
    TRITONBACKEND_Request*, void*, bool* should_include) {
  *should_include = true;
  return nullptr;
}

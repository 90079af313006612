// Implicit state (sequence_batching.state): TRITONBACKEND_StateNew/Buffer/Update, and what the
// Python server calls to read a state the backend updated, which feeds the sequence batcher.
#include "host.h"

TRITIUM_EXPORT void tritium_state_read(
    TRITONBACKEND_State* s, const char** name, int* datatype, const int64_t** shape,
    uint32_t* dims, const void** buffer, uint64_t* byte_size) {
  *name = s->name.c_str();
  *datatype = s->datatype;
  *shape = s->shape.data();
  *dims = static_cast<uint32_t>(s->shape.size());
  *buffer = s->buffer.data();
  *byte_size = s->buffer.size();
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_StateNew(
    TRITONBACKEND_State** state, TRITONBACKEND_Request* request, const char* name,
    const TRITONSERVER_DataType datatype, const int64_t* shape, const uint32_t dims_count) {
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_StateNew");
  TRITIUM_NOT_NULL(name, "TRITONBACKEND_StateNew");
  const TRITONBACKEND_Model* model = request->state->instance->model;
  bool known = false;
  for (const auto& s : model->state_names) known = known || s == name;
  if (!known) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string("state '") + name + "' is not a valid state name.");
  }
  auto s = std::make_unique<TRITONBACKEND_State>();
  s->request = request->state;
  s->name = name;
  s->datatype = datatype;
  s->shape.assign(shape, shape + dims_count);
  *state = s.get();
  request->states.push_back(std::move(s));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateBuffer(
    TRITONBACKEND_State* state, void** buffer, const uint64_t byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  state->buffer.assign(byte_size, 0);
  state->attributes.byte_size = byte_size;
  *buffer = state->buffer.data();
  *memory_type = TRITONSERVER_MEMORY_CPU;
  *memory_type_id = 0;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateBufferAttributes(
    TRITONBACKEND_State* state, TRITONSERVER_BufferAttributes** attributes) {
  *attributes = &state->attributes;
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateUpdate(TRITONBACKEND_State* state) {
  TRITIUM_NOT_NULL(state, "TRITONBACKEND_StateUpdate");
  if (!g_host_set) return no_host("TRITONBACKEND_StateUpdate");
  return g_host.state_update(state->request->token, state);
}

}  // extern "C"

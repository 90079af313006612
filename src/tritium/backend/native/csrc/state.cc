// Implicit state (sequence_batching.state): TRITONBACKEND_StateNew/Buffer/Update, and what the
// Python server calls to read a state the backend updated, which feeds the sequence batcher.
#include "cuda_runtime.h"
#include "host.h"

TRITONBACKEND_State::~TRITONBACKEND_State() {
  if (device != nullptr) {
    TRITONSERVER_Error* err =
        cuda_runtime::release(attributes.memory_type_id, device, "TRITONBACKEND_State");
    if (err != nullptr) TRITONSERVER_ErrorDelete(err);
  }
}

// Gives back the device buffer of `state`, if it has one.
static TRITONSERVER_Error* release_device(TRITONBACKEND_State* state) {
  if (state->device == nullptr) return nullptr;
  void* device = state->device;
  state->device = nullptr;
  return cuda_runtime::release(state->attributes.memory_type_id, device, "TRITONBACKEND_StateBuffer");
}

TRITIUM_EXPORT void tritium_state_read(
    TRITONBACKEND_State* s, const char** name, int* datatype, const int64_t** shape,
    uint32_t* dims, const void** buffer, uint64_t* byte_size) {
  *name = s->name.c_str();
  *datatype = s->datatype;
  *shape = s->shape.data();
  *dims = static_cast<uint32_t>(s->shape.size());
  *buffer = s->in_place ? s->input : s->buffer.data();
  *byte_size = s->in_place ? s->input_size : s->buffer.size();
}

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_StateNew(
    TRITONBACKEND_State** state, TRITONBACKEND_Request* request, const char* name,
    const TRITONSERVER_DataType datatype, const int64_t* shape, const uint32_t dims_count) {
  TRITIUM_NOT_NULL(request, "TRITONBACKEND_StateNew");
  TRITIUM_NOT_NULL(name, "TRITONBACKEND_StateNew");
  const TRITONBACKEND_Model* model = request->state->instance->model;
  if (model->states.empty()) {  // Triton's words, for a model whose sequences have no state
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string("unable to add state '") + name +
                          "'. State configuration is missing for model '" + model->name + "'.");
  }
  const TRITONBACKEND_Model::StateConfig* config = nullptr;
  for (const auto& s : model->states) {
    if (s.output_name == name) config = &s;
  }
  if (config == nullptr) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string("state '") + name + "' is not a valid state name.");
  }
  auto s = std::make_unique<TRITONBACKEND_State>();
  s->request = request->state;
  s->name = name;
  s->datatype = datatype;
  s->shape.assign(shape, shape + dims_count);
  if (config->same_buffer) {
    for (auto& in : request->inputs) {
      if (in.name == config->input_name && in.buffers.size() == 1) {
        s->input = static_cast<char*>(const_cast<void*>(in.buffers[0].base));
        s->input_size = in.buffers[0].byte_size;
      }
    }
  }
  *state = s.get();
  request->states.push_back(std::move(s));
  return nullptr;
}

TRITONSERVER_Error* TRITONBACKEND_StateBuffer(
    TRITONBACKEND_State* state, void** buffer, const uint64_t byte_size,
    TRITONSERVER_MemoryType* memory_type, int64_t* memory_type_id) {
  TRITIUM_NOT_NULL(state, "TRITONBACKEND_StateBuffer");
  TRITONSERVER_Error* err = release_device(state);  // a new buffer replaces the last one
  if (err != nullptr) return err;
  state->attributes.byte_size = byte_size;
  state->attributes.memory_type = TRITONSERVER_MEMORY_CPU;
  state->attributes.memory_type_id = 0;
  state->in_place = false;
  state->buffer.clear();
  // GPU memory when asked for and the CUDA runtime gives it; else host memory, as the
  // server keeps states.
  if (*memory_type == TRITONSERVER_MEMORY_GPU) {
    void* device = nullptr;
    err = cuda_runtime::allocate(*memory_type_id, byte_size, &device, "TRITONBACKEND_StateBuffer");
    if (err == nullptr) {
      state->device = device;
      state->attributes.memory_type = TRITONSERVER_MEMORY_GPU;
      state->attributes.memory_type_id = *memory_type_id;
      *buffer = device;
      return nullptr;
    }
    TRITONSERVER_ErrorDelete(err);
  }
  // The input's own memory when it fits, as Triton reuses a buffer of the same size.
  state->in_place = state->input != nullptr && state->input_size == byte_size;
  if (state->in_place) {
    *buffer = state->input;
  } else {
    state->buffer.assign(byte_size, 0);
    *buffer = state->buffer.data();
  }
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
  if (state->device != nullptr) {  // the server keeps states in host memory
    state->buffer.resize(state->attributes.byte_size);
    TRITONSERVER_Error* err = cuda_runtime::copy(
        state->attributes.memory_type_id, state->buffer.data(), state->device,
        state->attributes.byte_size, cuda_runtime::kDeviceToHost,
        ("state '" + state->name + "'").c_str());
    if (err != nullptr) return err;
  }
  return g_host.state_update(state->request->token, state);
}

}  // extern "C"

// The hot path of native backends, as a CPython extension (tritium.backend.native._hotpath).
//
// Triton's core hands a backend a batch of requests and gets responses back without leaving
// C++. Tritium's server objects are Python, so something has to convert: doing it with ctypes
// costs a dozen foreign calls per request and per response. Here one call per Execute batch
// builds every TRITONBACKEND_Request from the server's InferenceRequests (inputs point into
// the request tensors' buffers), runs the backend's Execute with the GIL released, and turns
// the responses Execute sent into InferenceResponses whose numpy arrays wrap the outputs'
// buffers (taken from the library, no copy). Whatever is rare (BYTES or malformed outputs,
// response parameters, error responses) is handed to the Python functions given to `setup`.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <cstdlib>
#include <vector>

#include "../exports.h"

namespace {

// TRITONSERVER_DataType -> numpy type number (-1: not a fixed-size type, handled in Python).
const int kNumpyTypes[] = {-1, NPY_BOOL, NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64,
                           NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64, NPY_FLOAT16,
                           NPY_FLOAT32, NPY_FLOAT64, -1, NPY_UINT16 /* BF16 as raw uint16 */};
const uint64_t kItemSizes[] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8, 0, 2};
const char* const kDataTypeNames[] = {"INVALID", "BOOL", "UINT8", "UINT16", "UINT32", "UINT64",
                                      "INT8", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64",
                                      "BYTES", "BF16"};
constexpr int kDataTypeCount = sizeof(kDataTypeNames) / sizeof(*kDataTypeNames);
constexpr int kBytes = 13;
constexpr uint32_t kFinal = TRITONSERVER_RESPONSE_COMPLETE_FINAL;

// What `setup` was given: the server's types and the Python fallbacks.
struct Host {
  PyObject* tokens = nullptr;          // dict: token -> Python object (library.TOKENS)
  PyObject* counter = nullptr;         // iterator of new tokens (library._counter)
  PyObject* pending_type = nullptr;    // requests.PendingRequest
  PyObject* tensor_type = nullptr;     // tensor.Tensor
  PyObject* response_type = nullptr;   // request.InferenceResponse
  PyObject* contiguous = nullptr;      // numpy.ascontiguousarray
  PyObject* bytes_input = nullptr;     // (Tensor) -> bytes: a BYTES input serialised
  PyObject* read_response = nullptr;   // (handle, model name) -> InferenceResponse
  PyObject* deliver = nullptr;         // (token, handle, flags, error, stamps) -> None
  PyObject* error_type = nullptr;      // errors.TritonError: a response that cannot be
                                       // delivered (its request was answered) is dropped
  PyObject* type_names[kDataTypeCount] = {};
  PyObject* type_numbers = nullptr;    // dict: wire datatype name -> TRITONSERVER_DataType
} host;

struct Names {
  PyObject *id, *correlation_id, *flags, *timeout_us, *inputs, *requested_outputs, *parameters,
      *name, *datatype, *shape, *data, *keep, *request, *deliver, *reported_statistics;
} names;

bool intern(PyObject** slot, const char* text) {
  *slot = PyUnicode_InternFromString(text);
  return *slot != nullptr;
}

// ---- InferenceRequest -> TRITONBACKEND_Request ----

bool add_input(TRITONBACKEND_Request* creq, PyObject* name, PyObject* tensor, PyObject* keep) {
  const char* input_name = PyUnicode_AsUTF8(name);
  if (input_name == nullptr) return false;
  PyObject* datatype = PyObject_GetAttr(tensor, names.datatype);
  if (datatype == nullptr) return false;
  PyObject* number = PyDict_GetItemWithError(host.type_numbers, datatype);
  Py_DECREF(datatype);
  if (number == nullptr) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "input '%s' has an unknown datatype", input_name);
    return false;
  }
  int type = static_cast<int>(PyLong_AsLong(number));
  PyObject* shape = PyObject_GetAttr(tensor, names.shape);
  if (shape == nullptr) return false;
  PyObject* dims = PySequence_Fast(shape, "a tensor shape must be a sequence");
  Py_DECREF(shape);
  if (dims == nullptr) return false;
  Py_ssize_t rank = PySequence_Fast_GET_SIZE(dims);
  std::vector<int64_t> extents(static_cast<size_t>(rank));
  for (Py_ssize_t i = 0; i < rank; ++i) {
    extents[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(dims, i));
  }
  Py_DECREF(dims);
  if (PyErr_Occurred()) return false;

  PyObject* data;  // what the C input points into, kept alive by the pending request
  if (type == kBytes) {
    data = PyObject_CallOneArg(host.bytes_input, tensor);
  } else {
    PyObject* array = PyObject_GetAttr(tensor, names.data);
    if (array == nullptr) return false;
    if (PyArray_Check(array) && PyArray_IS_C_CONTIGUOUS(reinterpret_cast<PyArrayObject*>(array))) {
      data = array;
    } else {
      data = PyObject_CallOneArg(host.contiguous, array);
      Py_DECREF(array);
    }
  }
  if (data == nullptr) return false;
  Py_buffer view;
  if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) != 0) {  // bytes or a C-contiguous array
    Py_DECREF(data);
    return false;
  }
  tritium_request_add_input(creq, input_name, type, extents.data(), static_cast<uint32_t>(rank),
                            view.buf, static_cast<uint64_t>(view.len));
  PyBuffer_Release(&view);  // `data` itself stays referenced: its buffer cannot move
  int appended = PyList_Append(keep, data);
  Py_DECREF(data);
  return appended == 0;
}

bool add_parameter(TRITONBACKEND_Request* creq, PyObject* key, PyObject* value) {
  const char* name = PyUnicode_AsUTF8(key);
  if (name == nullptr) return false;
  if (PyBool_Check(value)) {
    tritium_request_add_parameter(creq, name, TRITONSERVER_PARAMETER_BOOL, nullptr,
                                  value == Py_True ? 1 : 0, 0.0);
  } else if (PyLong_Check(value)) {
    int64_t number = PyLong_AsLongLong(value);
    if (number == -1 && PyErr_Occurred()) return false;
    tritium_request_add_parameter(creq, name, TRITONSERVER_PARAMETER_INT, nullptr, number, 0.0);
  } else if (PyFloat_Check(value)) {
    tritium_request_add_parameter(creq, name, TRITONSERVER_PARAMETER_DOUBLE, nullptr, 0,
                                  PyFloat_AS_DOUBLE(value));
  } else {
    PyObject* text = PyObject_Str(value);
    if (text == nullptr) return false;
    const char* utf8 = PyUnicode_AsUTF8(text);
    if (utf8 != nullptr) {
      tritium_request_add_parameter(creq, name, TRITONSERVER_PARAMETER_STRING, utf8, 0, 0.0);
    }
    Py_DECREF(text);
    if (utf8 == nullptr) return false;
  }
  return true;
}

// The attribute `attr` of `obj` as a C integer (false with an exception on failure).
template <typename T>
bool int_attr(PyObject* obj, PyObject* attr, T* out) {
  PyObject* value = PyObject_GetAttr(obj, attr);
  if (value == nullptr) return false;
  unsigned long long number = PyLong_AsUnsignedLongLongMask(value);
  Py_DECREF(value);
  if (number == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
  *out = static_cast<T>(number);
  return true;
}

TRITONBACKEND_Request* build_request(TRITONBACKEND_ModelInstance* instance, uint64_t token,
                                     PyObject* request, PyObject* pending, PyObject* all_outputs) {
  PyObject* id = PyObject_GetAttr(request, names.id);
  if (id == nullptr) return nullptr;
  const char* id_text = PyUnicode_AsUTF8(id);
  PyObject* correlation = PyObject_GetAttr(request, names.correlation_id);
  uint32_t flags = 0;
  uint64_t timeout = 0;
  if (id_text == nullptr || correlation == nullptr || !int_attr(request, names.flags, &flags) ||
      !int_attr(request, names.timeout_us, &timeout)) {
    Py_DECREF(id);
    Py_XDECREF(correlation);
    return nullptr;
  }
  const char* text_id = nullptr;
  uint64_t number_id = 0;
  if (PyUnicode_Check(correlation)) {
    text_id = PyUnicode_AsUTF8(correlation);
  } else if (PyLong_Check(correlation)) {
    number_id = PyLong_AsUnsignedLongLongMask(correlation);
  }
  TRITONBACKEND_Request* creq = nullptr;
  if (!PyErr_Occurred()) {
    creq = tritium_request_new(instance, token, id_text, number_id, text_id, flags, timeout);
  }
  Py_DECREF(id);
  Py_DECREF(correlation);
  if (creq == nullptr) return nullptr;

  bool ok = true;
  PyObject* inputs = PyObject_GetAttr(request, names.inputs);
  PyObject* keep = PyObject_GetAttr(pending, names.keep);
  ok = inputs != nullptr && keep != nullptr && PyDict_Check(inputs) && PyList_Check(keep);
  if (ok) {
    Py_ssize_t position = 0;
    PyObject *name, *tensor;
    while (ok && PyDict_Next(inputs, &position, &name, &tensor)) {
      ok = add_input(creq, name, tensor, keep);
    }
  } else if (!PyErr_Occurred()) {
    PyErr_SetString(PyExc_TypeError, "request inputs must be a dict, pending.keep a list");
  }
  Py_XDECREF(inputs);
  Py_XDECREF(keep);

  // Every output of the model when the client names none, as Triton's core asks for them.
  PyObject* wanted = ok ? PyObject_GetAttr(request, names.requested_outputs) : nullptr;
  if (wanted != nullptr) {
    bool named = PyObject_IsTrue(wanted) == 1;
    PyObject* list = PySequence_Fast(named ? wanted : all_outputs, "outputs must be a sequence");
    for (Py_ssize_t i = 0; list != nullptr && ok && i < PySequence_Fast_GET_SIZE(list); ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(list, i);
      PyObject* output = named ? PyObject_GetAttr(item, names.name) : (Py_INCREF(item), item);
      const char* text = nullptr;
      if (output != nullptr) {
        text = PyBytes_Check(output) ? PyBytes_AS_STRING(output) : PyUnicode_AsUTF8(output);
      }
      if (text != nullptr) tritium_request_add_output(creq, text);
      ok = text != nullptr;
      Py_XDECREF(output);
    }
    ok = ok && list != nullptr;
    Py_XDECREF(list);
    Py_DECREF(wanted);
  } else {
    ok = false;
  }
  PyObject* parameters = ok ? PyObject_GetAttr(request, names.parameters) : nullptr;
  if (parameters != nullptr && PyDict_Check(parameters)) {
    Py_ssize_t position = 0;
    PyObject *key, *value;
    while (ok && PyDict_Next(parameters, &position, &key, &value)) {
      ok = add_parameter(creq, key, value);
    }
  } else {
    ok = false;
  }
  Py_XDECREF(parameters);
  if (!ok) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "malformed request");
    tritium_request_delete(creq);
    return nullptr;
  }
  return creq;
}

// ---- TRITONBACKEND_Response -> InferenceResponse ----

void free_buffer(PyObject* capsule) {
  free(PyCapsule_GetPointer(capsule, "tritium.output"));
}

// A numpy array over the output's buffer, which it then owns; nullptr with an exception set.
PyObject* wrap_output(TRITONBACKEND_Response* response, uint32_t index,
                      const TritiumOutputInfo& info) {
  std::vector<npy_intp> dims(info.shape, info.shape + info.dims);
  int type = kNumpyTypes[info.datatype];
  if (info.byte_size == 0) {
    return PyArray_ZEROS(static_cast<int>(info.dims), dims.data(), type, 0);
  }
  void* buffer = tritium_response_take_buffer(response, index);
  PyObject* array = PyArray_SimpleNewFromData(static_cast<int>(info.dims), dims.data(), type, buffer);
  PyObject* owner = array != nullptr ? PyCapsule_New(buffer, "tritium.output", free_buffer) : nullptr;
  if (owner == nullptr) {
    free(buffer);
    Py_XDECREF(array);
    return nullptr;
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(array), owner) != 0) {
    Py_DECREF(array);  // the base was stolen even so: the capsule goes with the array
    return nullptr;
  }
  return array;
}

// Whether every output is a fixed-size type whose buffer matches its shape, asked for in CPU
// memory (a preference for other memory travels with the response: read_response in Python).
bool plain(const TritiumOutputInfo* infos, uint32_t count) {
  for (uint32_t i = 0; i < count; ++i) {
    const TritiumOutputInfo& info = infos[i];
    if (info.preferred_type != TRITONSERVER_MEMORY_CPU) return false;
    if (info.datatype <= 0 || info.datatype >= kDataTypeCount || kNumpyTypes[info.datatype] < 0) {
      return false;
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < info.dims; ++d) {
      if (info.shape[d] < 0) return false;
      elements *= static_cast<uint64_t>(info.shape[d]);
    }
    uint64_t item = kItemSizes[info.datatype];
    if (elements * item != info.byte_size || (info.byte_size > 0 && info.buffer == nullptr)) {
      return false;
    }
  }
  return true;
}

constexpr uint32_t kOutputs = 16;

// The InferenceResponse for a response Execute sent, or nullptr (exception set).
PyObject* read_response(TRITONBACKEND_Response* response, PyObject* model) {
  TritiumOutputInfo infos[kOutputs];
  uint32_t count = tritium_response_outputs(response, infos, kOutputs);
  if (count > kOutputs || !plain(infos, count) || tritium_response_parameter_count(response) > 0) {
    PyObject* handle = PyLong_FromVoidPtr(response);
    PyObject* result = handle != nullptr
        ? PyObject_CallFunctionObjArgs(host.read_response, handle, model, nullptr) : nullptr;
    Py_XDECREF(handle);
    return result;
  }
  PyObject* outputs = PyList_New(count);
  if (outputs == nullptr) return nullptr;
  for (uint32_t i = 0; i < count; ++i) {
    const TritiumOutputInfo& info = infos[i];
    PyObject* array = wrap_output(response, i, info);
    PyObject* name = array != nullptr ? PyUnicode_FromString(info.name) : nullptr;
    PyObject* shape = name != nullptr ? PyTuple_New(info.dims) : nullptr;
    for (uint32_t d = 0; shape != nullptr && d < info.dims; ++d) {
      PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(info.shape[d]));
    }
    PyObject* tensor = shape != nullptr
        ? PyObject_CallFunctionObjArgs(host.tensor_type, name, host.type_names[info.datatype],
                                       shape, array, nullptr)
        : nullptr;
    Py_XDECREF(array);
    Py_XDECREF(name);
    Py_XDECREF(shape);
    if (tensor == nullptr) {
      Py_DECREF(outputs);
      return nullptr;
    }
    PyList_SET_ITEM(outputs, i, tensor);
  }
  PyObject* result = PyObject_CallOneArg(host.response_type, outputs);
  Py_DECREF(outputs);
  return result;
}

// What the backend reported as a success before this response (request.reported_statistics).
bool set_stamps(PyObject* pending, const uint64_t* stamps) {
  PyObject* request = PyObject_GetAttr(pending, names.request);
  if (request == nullptr) return false;
  PyObject* value = Py_BuildValue("(KKKK)", stamps[0], stamps[1], stamps[2], stamps[3]);
  bool ok = value != nullptr && PyObject_SetAttr(request, names.reported_statistics, value) == 0;
  Py_XDECREF(value);
  Py_DECREF(request);
  return ok;
}

// One response Execute sent from its own thread, delivered to its request.
bool deliver_queued(uint32_t index, PyObject* model) {
  uint64_t token = 0;
  TRITONBACKEND_Response* response = nullptr;
  uint32_t flags = 0;
  TRITONSERVER_Error* error = nullptr;
  const uint64_t* stamps = nullptr;
  tritium_queued(index, &token, &response, &flags, &error, &stamps);
  PyObject* key = PyLong_FromUnsignedLongLong(token);
  if (key == nullptr) return false;
  PyObject* pending = PyDict_GetItemWithError(host.tokens, key);  // borrowed
  bool fast = pending != nullptr && error == nullptr && response != nullptr &&
              PyObject_TypeCheck(pending, reinterpret_cast<PyTypeObject*>(host.pending_type));
  PyObject* done;
  if (!fast) {  // errors, empty FINAL flags, unknown requests: the Python path
    PyObject* stamp_tuple = stamps != nullptr
        ? Py_BuildValue("(KKKK)", stamps[0], stamps[1], stamps[2], stamps[3])
        : (Py_INCREF(Py_None), Py_None);
    done = PyObject_CallFunction(host.deliver, "OKIKO", key, (unsigned long long)(uintptr_t)response,
                                 flags, (unsigned long long)(uintptr_t)error, stamp_tuple);
    Py_XDECREF(stamp_tuple);
  } else {
    Py_INCREF(pending);
    done = nullptr;
    if (stamps == nullptr || set_stamps(pending, stamps)) {
      PyObject* result = read_response(response, model);
      PyObject* flag_value = result != nullptr ? PyLong_FromUnsignedLong(flags) : nullptr;
      if (flag_value != nullptr) {
        done = PyObject_CallMethodObjArgs(pending, names.deliver, result, flag_value, nullptr);
      }
      Py_XDECREF(result);
      Py_XDECREF(flag_value);
    }
    Py_DECREF(pending);
  }
  Py_DECREF(key);
  Py_XDECREF(done);
  if (done == nullptr && PyErr_ExceptionMatches(host.error_type)) {
    PyErr_Clear();  // as the Python path: the response is dropped, the batch goes on
    return true;
  }
  return done != nullptr;
}

// Forget the tokens of answered requests whose last handle is gone.
bool forget_finished() {
  uint64_t tokens[256];
  size_t count;
  do {
    count = tritium_drain_finished(tokens, 256);
    for (size_t i = 0; i < count; ++i) {
      PyObject* key = PyLong_FromUnsignedLongLong(tokens[i]);
      if (key == nullptr) return false;
      if (PyDict_DelItem(host.tokens, key) != 0) PyErr_Clear();  // already forgotten
      Py_DECREF(key);
    }
  } while (count == 256);
  return true;
}

// ---- module functions ----

PyObject* py_setup(PyObject*, PyObject* args) {
  PyObject *tokens, *counter, *pending_type, *tensor_type, *response_type, *contiguous,
      *bytes_input, *read, *deliver, *error_type;
  if (!PyArg_ParseTuple(args, "O!OOOOOOOOO", &PyDict_Type, &tokens, &counter, &pending_type,
                        &tensor_type, &response_type, &contiguous, &bytes_input, &read,
                        &deliver, &error_type)) {
    return nullptr;
  }
  if (!PyType_Check(pending_type)) {
    PyErr_SetString(PyExc_TypeError, "pending_type must be a type");
    return nullptr;
  }
  PyObject* numbers = PyDict_New();
  if (numbers == nullptr) return nullptr;
  for (int i = 0; i < kDataTypeCount; ++i) {
    PyObject* name = PyUnicode_InternFromString(kDataTypeNames[i]);
    PyObject* number = PyLong_FromLong(i);
    if (name == nullptr || number == nullptr || PyDict_SetItem(numbers, name, number) != 0) {
      Py_XDECREF(name);
      Py_XDECREF(number);
      Py_DECREF(numbers);
      return nullptr;
    }
    Py_DECREF(number);
    Py_XSETREF(host.type_names[i], name);
  }
  Py_XSETREF(host.type_numbers, numbers);
  PyObject** slots[] = {&host.tokens, &host.counter, &host.pending_type, &host.tensor_type,
                        &host.response_type, &host.contiguous, &host.bytes_input,
                        &host.read_response, &host.deliver, &host.error_type};
  PyObject* values[] = {tokens, counter, pending_type, tensor_type, response_type, contiguous,
                        bytes_input, read, deliver, error_type};
  for (size_t i = 0; i < sizeof(values) / sizeof(*values); ++i) {
    Py_INCREF(values[i]);
    Py_XSETREF(*slots[i], values[i]);
  }
  Py_RETURN_NONE;
}

// execute(execute, instance, model_name, queue, requests, all_outputs)
//   -> (error, pendings, handles)
// `error` is the TRITONSERVER_Error* Execute returned (0: none), which the caller owns;
// `handles` the TRITONBACKEND_Request* of each pending request (for when Execute failed).
PyObject* py_execute(PyObject*, PyObject* args) {
  unsigned long long execute_address, instance_address;
  PyObject *model, *requests, *all_outputs;
  int queue;
  if (!PyArg_ParseTuple(args, "KKUpOO", &execute_address, &instance_address, &model, &queue,
                        &requests, &all_outputs)) {
    return nullptr;
  }
  if (host.tokens == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "_hotpath.setup was not called");
    return nullptr;
  }
  auto* instance = reinterpret_cast<TRITONBACKEND_ModelInstance*>(instance_address);
  PyObject* batch = PySequence_Fast(requests, "requests must be a sequence");
  if (batch == nullptr) return nullptr;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(batch);
  PyObject* pendings = PyList_New(count);
  std::vector<TRITONBACKEND_Request*> handles;
  std::vector<PyObject*> keys;
  handles.reserve(static_cast<size_t>(count));
  bool ok = pendings != nullptr;
  for (Py_ssize_t i = 0; ok && i < count; ++i) {
    PyObject* request = PySequence_Fast_GET_ITEM(batch, i);
    PyObject* pending = PyObject_CallFunctionObjArgs(host.pending_type, request, model, nullptr);
    PyObject* key = pending != nullptr ? PyIter_Next(host.counter) : nullptr;
    if (key == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "token counter exhausted");
      Py_XDECREF(pending);
      ok = false;
      break;
    }
    PyList_SET_ITEM(pendings, i, pending);
    keys.push_back(key);
    TRITONBACKEND_Request* creq = nullptr;
    if (PyDict_SetItem(host.tokens, key, pending) == 0) {
      creq = build_request(instance, PyLong_AsUnsignedLongLong(key), request, pending, all_outputs);
    }
    ok = creq != nullptr;
    if (ok) handles.push_back(creq);
  }
  if (!ok) {  // nothing ran: forget the tokens first, so deleting a request answers nobody
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    for (PyObject* key : keys) {
      if (PyDict_DelItem(host.tokens, key) != 0) PyErr_Clear();
    }
    for (TRITONBACKEND_Request* creq : handles) tritium_request_delete(creq);
    PyErr_Restore(type, value, traceback);
  }
  for (PyObject* key : keys) Py_DECREF(key);
  Py_DECREF(batch);
  if (!ok) {
    Py_XDECREF(pendings);
    return nullptr;
  }

  TRITONSERVER_Error* error;
  Py_BEGIN_ALLOW_THREADS
  error = tritium_execute(reinterpret_cast<TritiumExecuteFn>(execute_address), instance,
                          handles.data(), static_cast<uint32_t>(handles.size()), queue);
  Py_END_ALLOW_THREADS

  // Every queued response is delivered even when one fails; the first failure is raised.
  PyObject *failure_type = nullptr, *failure = nullptr, *failure_traceback = nullptr;
  uint32_t queued = tritium_queued_count();
  for (uint32_t i = 0; i < queued; ++i) {
    if (!deliver_queued(i, model) && failure_type == nullptr) {
      PyErr_Fetch(&failure_type, &failure, &failure_traceback);
    }
    PyErr_Clear();
  }
  tritium_queued_clear();
  if (!forget_finished() && failure_type == nullptr) {
    PyErr_Fetch(&failure_type, &failure, &failure_traceback);
  }
  PyObject* handle_list = PyList_New(static_cast<Py_ssize_t>(handles.size()));
  for (size_t i = 0; handle_list != nullptr && i < handles.size(); ++i) {
    PyList_SET_ITEM(handle_list, static_cast<Py_ssize_t>(i), PyLong_FromVoidPtr(handles[i]));
  }
  if (failure_type != nullptr || handle_list == nullptr) {
    if (error != nullptr) TRITONSERVER_ErrorDelete(error);
    Py_XDECREF(handle_list);
    Py_DECREF(pendings);
    if (failure_type != nullptr) PyErr_Restore(failure_type, failure, failure_traceback);
    return nullptr;
  }
  return Py_BuildValue("(KNN)", (unsigned long long)(uintptr_t)error, pendings, handle_list);
}

PyObject* py_forget_finished(PyObject*, PyObject*) {
  if (host.tokens == nullptr) Py_RETURN_NONE;
  if (!forget_finished()) return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef kMethods[] = {
    {"setup", py_setup, METH_VARARGS,
     "setup(tokens, counter, PendingRequest, Tensor, InferenceResponse, ascontiguousarray, "
     "bytes_input, read_response, deliver, TritonError): what the hot path calls in Python."},
    {"execute", py_execute, METH_VARARGS,
     "execute(execute, instance, model_name, queue, requests, all_outputs) -> "
     "(error, pendings, handles): one Execute batch, converted both ways in C."},
    {"forget_finished", py_forget_finished, METH_NOARGS,
     "Drop the tokens of requests the library has finished with."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "_hotpath",
                       "The per-batch hot path of native backends (see hotpath.cc).", -1,
                       kMethods};

}  // namespace

PyMODINIT_FUNC PyInit__hotpath() {
  import_array();
  const char* const texts[] = {"id", "correlation_id", "flags", "timeout_us", "inputs",
                               "requested_outputs", "parameters", "name", "datatype", "shape",
                               "data", "keep", "request", "deliver", "reported_statistics"};
  PyObject** slots[] = {&names.id, &names.correlation_id, &names.flags, &names.timeout_us,
                        &names.inputs, &names.requested_outputs, &names.parameters, &names.name,
                        &names.datatype, &names.shape, &names.data, &names.keep, &names.request,
                        &names.deliver, &names.reported_statistics};
  for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); ++i) {
    if (!intern(slots[i], texts[i])) return nullptr;
  }
  return PyModule_Create(&kModule);
}

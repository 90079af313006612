// Starting Tritium's Python server from TRITONSERVER_ServerNew. Tritium's server is Python;
// this library is not linked with Python (a backend loaded into a Python server must bind to
// that interpreter, not to a second copy). So:
// - in a Python process (Py_IsInitialized is in the global scope and says so), the GIL is
//   taken and tritium.inprocess.c_api imported;
// - in a program with no Python, the Python that built this library (its libpython and its
//   executable, written into embedding_config.cc at build time) is opened and initialised as
//   that executable would be, so a virtual environment's packages are found, then the same
//   import runs and the GIL is released for the server's threads.
// The import installs the host table; a failure comes back as an UNAVAILABLE error with the
// Python exception's text.
#include <dlfcn.h>

#include <mutex>

#include "server_object.h"

extern const char kTritiumPythonExecutable[];  // embedding_config.cc (generated)
extern const char kTritiumPythonLibrary[];

namespace {

// The few CPython calls this needs, found at run time (stable ABI, so any 3.x works).
struct PythonApi {
  int (*is_initialized)();
  void (*set_program_name)(const wchar_t*);
  wchar_t* (*decode_locale)(const char*, size_t*);
  void (*initialize)(int);
  int (*gil_ensure)();
  void (*gil_release)(int);
  void* (*save_thread)();
  int (*run)(const char*);
};

template <typename F>
bool find(void* scope, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(scope, name));
  return *out != nullptr;
}

std::string this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ensure_python_server), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}

// Python that imports the server's side and installs the host; an exception's text is written
// into `error` (a char[size] at that address).
std::string bootstrap(char* error, size_t size) {
  const std::string library = this_library();
  return "def _tritium_start():\n"
         "    import ctypes, os\n"
         "    try:\n"
         "        from tritium.inprocess import c_api\n"
         "        c_api.install(os.fsdecode(bytes.fromhex('" + hex_string(library.data(), library.size()) +
         "')))\n"
         "    except BaseException as exc:\n"
         "        text = f'{type(exc).__name__}: {exc}'.encode('utf-8', 'replace')[:" +
         std::to_string(size - 1) + "]\n"
         "        ctypes.memmove(" + std::to_string(reinterpret_cast<uintptr_t>(error)) +
         ", text + b'\\0', len(text) + 1)\n"
         "_tritium_start()\n"
         "del _tritium_start\n";
}

TRITONSERVER_Error* unavailable(const char* caller, const std::string& why) {
  return make_error(TRITONSERVER_ERROR_UNAVAILABLE, std::string(caller) + ": " + why);
}

}  // namespace

TRITONSERVER_Error* ensure_python_server(const char* caller) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (g_host_set) return nullptr;

  PythonApi py{};
  void* scope = RTLD_DEFAULT;
  if (!find(scope, "Py_IsInitialized", &py.is_initialized)) {
    const std::string library = kTritiumPythonLibrary;
    if (library.empty()) {
      return unavailable(caller, std::string("Tritium's server runs on Python, and the Python that "
                         "built this library (") + kTritiumPythonExecutable +
                         ") has no shared library to load into this program: build "
                         "libtritonserver.so with a Python that has libpython "
                         "(python -m tritium.backend.native.build)");
    }
    scope = dlopen(library.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (scope == nullptr) {
      return unavailable(caller, "Tritium's server runs on Python, and " + library +
                                     " could not be loaded (" + dlerror() + "): install that "
                                     "Python's shared library, or rebuild libtritonserver.so "
                                     "with the Python Tritium is installed in "
                                     "(python -m tritium.backend.native.build)");
    }
    find(scope, "Py_IsInitialized", &py.is_initialized);
  }
  bool found = py.is_initialized != nullptr && find(scope, "Py_InitializeEx", &py.initialize) &&
               find(scope, "PyGILState_Ensure", &py.gil_ensure) &&
               find(scope, "PyGILState_Release", &py.gil_release) &&
               find(scope, "PyEval_SaveThread", &py.save_thread) &&
               find(scope, "PyRun_SimpleString", &py.run) &&
               find(scope, "Py_DecodeLocale", &py.decode_locale);
  find(scope, "Py_SetProgramName", &py.set_program_name);  // deprecated: used where present
  if (!found) return unavailable(caller, "the Python in this process lacks its C API");

  char error[4096] = {0};
  const std::string code = bootstrap(error, sizeof(error));
  if (py.is_initialized()) {
    const int gil = py.gil_ensure();
    py.run(code.c_str());
    py.gil_release(gil);
  } else {
    // As the executable would start: its pyvenv.cfg (a virtual environment) sets the paths.
    if (py.set_program_name != nullptr) {
      py.set_program_name(py.decode_locale(kTritiumPythonExecutable, nullptr));  // kept: Python holds it
    }
    py.initialize(0);  // no signal handlers: the program owns its signals
    py.run(code.c_str());
    py.save_thread();  // the server's threads need the GIL this thread holds
  }
  if (!g_host_set) {
    return unavailable(caller, std::string("Tritium's Python server could not start in this "
                                           "process: ") +
                                   (error[0] != 0 ? error : "see the error printed above"));
  }
  return nullptr;
}

// TRITONSERVER_Server as a program creates it (TRITONSERVER_ServerNew): the options, the
// Python server started in the program's process, and the calls the library makes on it.
#pragma once
#include "host.h"

// The options as one JSON object (see server_options.cc).
std::string server_options_json(const TRITONSERVER_ServerOptions* options);

// Makes sure the host table is installed: in a Python process that runs no Tritium server
// yet, and in a program that runs no Python at all, Python is started (or entered) and
// tritium.inprocess.c_api installs it. `caller` names the API call in errors.
TRITONSERVER_Error* ensure_python_server(const char* caller);

// Test repository agent "audit" (libtritonrepoagent_audit.so), written against Triton's
// TRITONREPOAGENT API as a real agent is. Its model parameters:
//   log       a file it appends one line per action to ("LOAD", "LOAD_COMPLETE", ...), with
//             what it saw at LOAD ("params=N", "agents_in_config=0|1", "location=<path>");
//   require   a file (relative to the model's location) whose absence refuses the load;
//   relocate  "true": copy the model's files to a location it acquires, renaming a folder
//             "sealed" to "1" there, and point the load at the copy (as a decrypting agent).
// The agent's own life (Initialize/Finalize) goes to $AUDIT_AGENT_LOG when it is set.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common.h"

namespace {

const char* kActions[] = {"LOAD", "LOAD_COMPLETE", "LOAD_FAIL", "UNLOAD", "UNLOAD_COMPLETE"};

void append(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::app);
  out << line << "\n";
}

std::string parameter(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
                      const std::string& wanted, uint32_t* count) {
  *count = 0;
  if (TRITONREPOAGENT_ModelParameterCount(agent, model, count) != nullptr) return "";
  for (uint32_t i = 0; i < *count; ++i) {
    const char* key = nullptr;
    const char* value = nullptr;
    if (TRITONREPOAGENT_ModelParameter(agent, model, i, &key, &value) == nullptr &&
        wanted == key) {
      return value;
    }
  }
  return "";
}

TRITONSERVER_Error* error(const std::string& message) {
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INVALID_ARG, message.c_str());
}

TRITONSERVER_Error* on_load(TRITONREPOAGENT_Agent* agent, TRITONREPOAGENT_AgentModel* model,
                            const std::string& log, uint32_t count) {
  TRITONREPOAGENT_ArtifactType type;
  const char* location = nullptr;
  RETURN_IF_ERROR(TRITONREPOAGENT_ModelRepositoryLocation(agent, model, &type, &location));
  TRITONSERVER_Message* config = nullptr;
  RETURN_IF_ERROR(TRITONREPOAGENT_ModelConfig(agent, model, 1, &config));
  const char* base = nullptr;
  size_t size = 0;
  RETURN_IF_ERROR(TRITONSERVER_MessageSerializeToJson(config, &base, &size));
  bool agents = std::string(base, size).find("model_repository_agents") != std::string::npos;
  RETURN_IF_ERROR(TRITONSERVER_MessageDelete(config));
  append(log, "params=" + std::to_string(count) + " agents_in_config=" + (agents ? "1" : "0") +
                  " location=" + location);

  uint32_t ignored = 0;
  std::string required = parameter(agent, model, "require", &ignored);
  if (!required.empty() && !std::filesystem::exists(std::filesystem::path(location) / required)) {
    return error("audit agent: missing file '" + required + "' in " + location);
  }
  if (parameter(agent, model, "relocate", &ignored) == "true") {
    const char* copy = nullptr;
    RETURN_IF_ERROR(TRITONREPOAGENT_ModelRepositoryLocationAcquire(
        agent, model, TRITONREPOAGENT_ARTIFACT_FILESYSTEM, &copy));
    std::error_code ec;
    std::filesystem::copy(location, copy, std::filesystem::copy_options::recursive, ec);
    if (ec) return error("audit agent: copy failed: " + ec.message());
    std::filesystem::path sealed = std::filesystem::path(copy) / "sealed";
    if (std::filesystem::exists(sealed)) {
      std::filesystem::rename(sealed, std::filesystem::path(copy) / "1", ec);
    }
    RETURN_IF_ERROR(TRITONREPOAGENT_ModelRepositoryUpdate(
        agent, model, TRITONREPOAGENT_ARTIFACT_FILESYSTEM, copy));
    RETURN_IF_ERROR(TRITONREPOAGENT_ModelSetState(model, const_cast<char*>(copy)));
    append(log, std::string("relocated ") + copy);
  }
  return nullptr;
}

}  // namespace

extern "C" {

TRITONSERVER_Error* TRITONREPOAGENT_Initialize(TRITONREPOAGENT_Agent* agent) {
  uint32_t major = 0, minor = 0;
  RETURN_IF_ERROR(TRITONREPOAGENT_ApiVersion(&major, &minor));
  if (major != TRITONREPOAGENT_API_VERSION_MAJOR || minor < TRITONREPOAGENT_API_VERSION_MINOR) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNSUPPORTED, "repo agent API too old");
  }
  const char* log = std::getenv("AUDIT_AGENT_LOG");
  append(log != nullptr ? log : "", "INITIALIZE");
  return TRITONREPOAGENT_SetState(agent, new int(0));
}

TRITONSERVER_Error* TRITONREPOAGENT_Finalize(TRITONREPOAGENT_Agent* agent) {
  void* state = nullptr;
  RETURN_IF_ERROR(TRITONREPOAGENT_State(agent, &state));
  delete static_cast<int*>(state);
  const char* log = std::getenv("AUDIT_AGENT_LOG");
  append(log != nullptr ? log : "", "FINALIZE");
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelFinalize(TRITONREPOAGENT_Agent* agent,
                                                  TRITONREPOAGENT_AgentModel* model) {
  void* copy = nullptr;
  RETURN_IF_ERROR(TRITONREPOAGENT_ModelState(model, &copy));
  if (copy != nullptr) {
    RETURN_IF_ERROR(TRITONREPOAGENT_ModelRepositoryLocationRelease(
        agent, model, static_cast<const char*>(copy)));
  }
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelAction(TRITONREPOAGENT_Agent* agent,
                                                TRITONREPOAGENT_AgentModel* model,
                                                const TRITONREPOAGENT_ActionType action) {
  uint32_t count = 0;
  std::string log = parameter(agent, model, "log", &count);
  append(log, kActions[action]);
  if (action != TRITONREPOAGENT_ACTION_LOAD) return nullptr;
  return on_load(agent, model, log, count);
}

}  // extern "C"

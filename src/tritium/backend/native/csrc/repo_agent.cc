// Repository agents (Triton's TRITONREPOAGENT API 0.1): a model's configuration names agents in
// `model_repository_agents`; each is a `libtritonrepoagent_<name>.so` that sees the model's
// files before it loads (a checksum agent checks them, a decrypting agent writes the plain files
// elsewhere and points the load there) and hears each step of the model's life after.
//
// The library keeps the agents and their per-model objects; the Python server
// (repository/repo_agents.py) decides when to create them and which action comes next. Each
// agent library is opened once and shared by the models naming it; it is finalized and closed
// when the last of them is gone, as Triton's manager does with its weak references.
#include <dlfcn.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <system_error>
#include <utility>

#include "host.h"

namespace {

typedef TRITONSERVER_Error* (*AgentFn)(TRITONREPOAGENT_Agent*);
typedef TRITONSERVER_Error* (*AgentModelFn)(TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel*);
typedef TRITONSERVER_Error* (*ActionFn)(TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel*,
                                        const TRITONREPOAGENT_ActionType);

void log_error(const std::string& message) {
  TRITONSERVER_LogMessage(TRITONSERVER_LOG_ERROR, "repo_agent.cc", __LINE__, message.c_str());
}

const char* action_name(int action) {
  static const char* names[] = {
      "TRITONREPOAGENT_ACTION_LOAD", "TRITONREPOAGENT_ACTION_LOAD_COMPLETE",
      "TRITONREPOAGENT_ACTION_LOAD_FAIL", "TRITONREPOAGENT_ACTION_UNLOAD",
      "TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE"};
  return action >= 0 && action < 5 ? names[action] : "Unknown TRITONREPOAGENT_ActionType";
}

}  // namespace

struct TRITONREPOAGENT_Agent {
  std::string path;
  void* handle = nullptr;
  AgentFn initialize = nullptr;
  AgentFn finalize = nullptr;
  AgentModelFn model_initialize = nullptr;
  AgentModelFn model_finalize = nullptr;
  ActionFn model_action = nullptr;
  void* state = nullptr;
  int users = 0;  // agent models holding it
};

struct TRITONREPOAGENT_AgentModel {
  TRITONREPOAGENT_Agent* agent = nullptr;
  TRITONREPOAGENT_ArtifactType type = TRITONREPOAGENT_ARTIFACT_FILESYSTEM;
  std::string location;
  std::string config_json;
  std::vector<std::pair<std::string, std::string>> parameters;
  void* state = nullptr;
  std::string acquired;  // a temporary directory the agent acquired, removed with the model
  bool action_set = false;
  int action = TRITONREPOAGENT_ACTION_LOAD;
};

namespace {

std::mutex g_agents_mu;
std::map<std::string, TRITONREPOAGENT_Agent*> g_agents;  // by library path

TRITONSERVER_Error* open_agent(const std::string& path, TRITONREPOAGENT_Agent** out) {
  std::lock_guard<std::mutex> lock(g_agents_mu);
  auto found = g_agents.find(path);
  if (found != g_agents.end()) {
    found->second->users += 1;
    *out = found->second;
    return nullptr;
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return make_error(TRITONSERVER_ERROR_NOT_FOUND,
                      "unable to load shared library: " + std::string(why ? why : path));
  }
  auto* agent = new TRITONREPOAGENT_Agent{};
  agent->path = path;
  agent->handle = handle;
  agent->initialize = reinterpret_cast<AgentFn>(dlsym(handle, "TRITONREPOAGENT_Initialize"));
  agent->finalize = reinterpret_cast<AgentFn>(dlsym(handle, "TRITONREPOAGENT_Finalize"));
  agent->model_initialize =
      reinterpret_cast<AgentModelFn>(dlsym(handle, "TRITONREPOAGENT_ModelInitialize"));
  agent->model_finalize =
      reinterpret_cast<AgentModelFn>(dlsym(handle, "TRITONREPOAGENT_ModelFinalize"));
  agent->model_action = reinterpret_cast<ActionFn>(dlsym(handle, "TRITONREPOAGENT_ModelAction"));
  if (agent->model_action == nullptr) {
    dlclose(handle);
    delete agent;
    return make_error(TRITONSERVER_ERROR_NOT_FOUND,
                      "unable to find required entrypoint 'TRITONREPOAGENT_ModelAction' in "
                      "shared library '" + path + "'");
  }
  if (agent->initialize != nullptr) {
    TRITONSERVER_Error* error = agent->initialize(agent);
    if (error != nullptr) {
      dlclose(handle);
      delete agent;
      return error;
    }
  }
  agent->users = 1;
  g_agents[path] = agent;
  *out = agent;
  return nullptr;
}

// One agent model let go of its agent: the last one finalizes and closes the library.
void release_agent(TRITONREPOAGENT_Agent* agent) {
  std::lock_guard<std::mutex> lock(g_agents_mu);
  if (--agent->users > 0) return;
  g_agents.erase(agent->path);
  if (agent->finalize != nullptr) {
    TRITONSERVER_Error* error = agent->finalize(agent);
    if (error != nullptr) {
      log_error("~TritonRepoAgent: " + error->message);
      delete error;
    }
  }
  dlclose(agent->handle);
  delete agent;
}

TRITONSERVER_Error* invoke(TRITONREPOAGENT_AgentModel* model, int action) {
  // The order Triton's TritonRepoAgentModel::InvokeAgent allows.
  int required = -1;
  switch (action) {
    case TRITONREPOAGENT_ACTION_LOAD: break;
    case TRITONREPOAGENT_ACTION_LOAD_COMPLETE:
    case TRITONREPOAGENT_ACTION_LOAD_FAIL: required = TRITONREPOAGENT_ACTION_LOAD; break;
    case TRITONREPOAGENT_ACTION_UNLOAD: required = TRITONREPOAGENT_ACTION_LOAD_COMPLETE; break;
    case TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE: required = TRITONREPOAGENT_ACTION_UNLOAD; break;
    default:
      return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                        "unknown repository agent action " + std::to_string(action));
  }
  if (!model->action_set && action != TRITONREPOAGENT_ACTION_LOAD) {
    return make_error(TRITONSERVER_ERROR_INTERNAL,
                      std::string("Unexpected lifecycle start state ") + action_name(action));
  }
  if ((action == TRITONREPOAGENT_ACTION_LOAD && model->action_set) ||
      (required >= 0 && model->action != required)) {
    return make_error(TRITONSERVER_ERROR_INTERNAL,
                      std::string("Unexpected lifecycle state transition from ") +
                          action_name(model->action) + " to " + action_name(action));
  }
  model->action = action;
  model->action_set = true;
  return model->agent->model_action(model->agent, model,
                                    static_cast<TRITONREPOAGENT_ActionType>(action));
}

void log_failed(TRITONSERVER_Error* error, const char* what) {
  if (error == nullptr) return;
  log_error(std::string(what) + ": " + error->message);
  delete error;
}

void remove_acquired(TRITONREPOAGENT_AgentModel* model) {
  std::error_code ec;
  std::filesystem::remove_all(model->acquired, ec);
  if (ec) {
    log_error("Failed to delete previously acquired location '" +
                                         model->acquired + "': " + ec.message());
  }
  model->acquired.clear();
}

}  // namespace

// ---- what the Python server calls ----

TRITIUM_EXPORT TRITONSERVER_Error* tritium_agent_model_new(
    const char* library_path, int artifact_type, const char* location, const char* config_json,
    TRITONREPOAGENT_AgentModel** out) {
  TRITONREPOAGENT_Agent* agent = nullptr;
  TRITONSERVER_Error* error = open_agent(library_path, &agent);
  if (error != nullptr) return error;
  auto* model = new TRITONREPOAGENT_AgentModel{};
  model->agent = agent;
  model->type = static_cast<TRITONREPOAGENT_ArtifactType>(artifact_type);
  model->location = location;
  model->config_json = config_json;
  *out = model;
  return nullptr;
}

TRITIUM_EXPORT void tritium_agent_model_add_parameter(TRITONREPOAGENT_AgentModel* model,
                                                      const char* key, const char* value) {
  model->parameters.emplace_back(key, value);
}

// TRITONREPOAGENT_ModelInitialize, once the parameters are in.
TRITIUM_EXPORT TRITONSERVER_Error* tritium_agent_model_initialize(
    TRITONREPOAGENT_AgentModel* model) {
  if (model->agent->model_initialize != nullptr) {
    TRITONSERVER_Error* error = model->agent->model_initialize(model->agent, model);
    if (error != nullptr) return error;
  }
  return nullptr;
}

TRITIUM_EXPORT TRITONSERVER_Error* tritium_agent_model_invoke(TRITONREPOAGENT_AgentModel* model,
                                                              int action) {
  return invoke(model, action);
}

// The artifact type; `*location`: where the model's files are now (valid until the next call).
TRITIUM_EXPORT int tritium_agent_model_location(TRITONREPOAGENT_AgentModel* model,
                                                const char** location) {
  *location = model->location.c_str();
  return model->type;
}

// The end of an agent model, as Triton's ~TritonRepoAgentModel: an agent that has not heard
// how its model's life ended hears it now (a load never completed fails; a loaded model
// unloads), then ModelFinalize, then what it acquired is removed.
TRITIUM_EXPORT void tritium_agent_model_delete(TRITONREPOAGENT_AgentModel* model) {
  TRITONREPOAGENT_Agent* agent = model->agent;
  if (model->action_set) {
    switch (model->action) {
      case TRITONREPOAGENT_ACTION_LOAD:
        log_failed(agent->model_action(agent, model, TRITONREPOAGENT_ACTION_LOAD_FAIL),
                   "Inform TRITONREPOAGENT_ACTION_LOAD_FAIL");
        break;
      case TRITONREPOAGENT_ACTION_LOAD_COMPLETE:
        log_failed(agent->model_action(agent, model, TRITONREPOAGENT_ACTION_UNLOAD),
                   "Inform TRITONREPOAGENT_ACTION_UNLOAD");
        log_failed(agent->model_action(agent, model, TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE),
                   "Inform TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE");
        break;
      case TRITONREPOAGENT_ACTION_UNLOAD:
        log_failed(agent->model_action(agent, model, TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE),
                   "Inform TRITONREPOAGENT_ACTION_UNLOAD_COMPLETE");
        break;
      default: break;
    }
  }
  if (agent->model_finalize != nullptr) {  // even after a failed ModelInitialize, as Triton
    log_failed(agent->model_finalize(agent, model), "~TritonRepoAgentModel");
  }
  if (!model->acquired.empty()) remove_acquired(model);
  delete model;
  release_agent(agent);
}

// ---- Triton's TRITONREPOAGENT API, what agents call ----

extern "C" {

TRITONSERVER_Error* TRITONREPOAGENT_ApiVersion(uint32_t* major, uint32_t* minor) {
  TRITIUM_NOT_NULL(major, "TRITONREPOAGENT_ApiVersion");
  TRITIUM_NOT_NULL(minor, "TRITONREPOAGENT_ApiVersion");
  *major = TRITONREPOAGENT_API_VERSION_MAJOR;
  *minor = TRITONREPOAGENT_API_VERSION_MINOR;
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocation(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model,
    TRITONREPOAGENT_ArtifactType* artifact_type, const char** location) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelRepositoryLocation");
  TRITIUM_REQUIRE(!model->location.empty(), TRITONSERVER_ERROR_INTERNAL,
                  "Model repository location is not set");
  *artifact_type = model->type;
  *location = model->location.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationAcquire(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char** location) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelRepositoryLocationAcquire");
  TRITIUM_REQUIRE(artifact_type == TRITONREPOAGENT_ARTIFACT_FILESYSTEM,
                  TRITONSERVER_ERROR_INVALID_ARG,
                  "Unexpected artifact type, expects 'TRITONREPOAGENT_ARTIFACT_FILESYSTEM'");
  if (model->acquired.empty()) {
    std::error_code ec;
    std::string base = std::filesystem::temp_directory_path(ec).string();
    if (ec) base = "/tmp";
    std::string pattern = base + "/folderXXXXXX";  // Triton's MakeTemporaryDirectory
    if (mkdtemp(pattern.data()) == nullptr) {
      return make_error(TRITONSERVER_ERROR_INTERNAL,
                        "Failed to create local temp folder: " + pattern + ", errno:" +
                            std::to_string(errno));
    }
    model->acquired = pattern;
  }
  *location = model->acquired.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryLocationRelease(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model, const char*) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelRepositoryLocationRelease");
  TRITIUM_REQUIRE(!model->acquired.empty(), TRITONSERVER_ERROR_UNAVAILABLE,
                  "No mutable location to be deleted");
  remove_acquired(model);
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelRepositoryUpdate(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model,
    const TRITONREPOAGENT_ArtifactType artifact_type, const char* location) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelRepositoryUpdate");
  TRITIUM_NOT_NULL(location, "TRITONREPOAGENT_ModelRepositoryUpdate");
  if (!model->action_set || model->action != TRITONREPOAGENT_ACTION_LOAD) {
    return make_error(TRITONSERVER_ERROR_INVALID_ARG,
                      std::string("location can only be updated during "
                                  "TRITONREPOAGENT_ACTION_LOAD, current action type is ") +
                          (model->action_set ? action_name(model->action) : "not set"));
  }
  model->type = artifact_type;
  model->location = location;
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelParameterCount(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model, uint32_t* count) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelParameterCount");
  TRITIUM_NOT_NULL(count, "TRITONREPOAGENT_ModelParameterCount");
  *count = static_cast<uint32_t>(model->parameters.size());
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelParameter(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model, const uint32_t index,
    const char** parameter_name, const char** parameter_value) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelParameter");
  TRITIUM_REQUIRE(index < model->parameters.size(), TRITONSERVER_ERROR_INVALID_ARG,
                  "index out of range for model parameters");
  *parameter_name = model->parameters[index].first.c_str();
  *parameter_value = model->parameters[index].second.c_str();
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelConfig(
    TRITONREPOAGENT_Agent*, TRITONREPOAGENT_AgentModel* model, const uint32_t config_version,
    TRITONSERVER_Message** model_config) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelConfig");
  TRITIUM_NOT_NULL(model_config, "TRITONREPOAGENT_ModelConfig");
  TRITIUM_REQUIRE(config_version == 1, TRITONSERVER_ERROR_INVALID_ARG,
                  "model configuration version " + std::to_string(config_version) +
                      " not supported, supported versions are: 1");
  *model_config = new TRITONSERVER_Message{model->config_json};
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelState(TRITONREPOAGENT_AgentModel* model, void** state) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelState");
  *state = model->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_ModelSetState(TRITONREPOAGENT_AgentModel* model,
                                                  void* state) {
  TRITIUM_NOT_NULL(model, "TRITONREPOAGENT_ModelSetState");
  model->state = state;
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_State(TRITONREPOAGENT_Agent* agent, void** state) {
  TRITIUM_NOT_NULL(agent, "TRITONREPOAGENT_State");
  *state = agent->state;
  return nullptr;
}

TRITONSERVER_Error* TRITONREPOAGENT_SetState(TRITONREPOAGENT_Agent* agent, void* state) {
  TRITIUM_NOT_NULL(agent, "TRITONREPOAGENT_SetState");
  agent->state = state;
  return nullptr;
}

}  // extern "C"

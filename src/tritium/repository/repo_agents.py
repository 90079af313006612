"""A model's repository agents (Triton's TritonRepoAgentModelList and the part of its
ModelRepositoryManager that starts them).

A configuration's `model_repository_agents` names agents, each a compiled
`<--repoagent-directory>/<name>/libtritonrepoagent_<name>.so`. When the model is about to load
(at start-up, by a poll or a load request), before its configuration is completed, each agent
in turn hears TRITONREPOAGENT_ACTION_LOAD with the model's files and configuration as the one
before it left them: an agent may refuse the load (a checksum that does not match) or point it
at other files (decrypted, downloaded). The model then loads from where the last agent points.
The agents hear how it went (LOAD_COMPLETE or LOAD_FAIL, last agent first) and, when the
versions of that load unload, UNLOAD (first agent first) and, once the last of them is gone,
UNLOAD_COMPLETE (last agent first). As in Triton, an error an agent returns after LOAD is
logged and changes nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

from tritonclient.grpc import model_config_pb2 as mc

from ..backend.native.repo_agent import Action, AgentModel
from ..config import model_config_to_json, read_model_config
from ..errors import TritonError

log = logging.getLogger("tritium.repository")

DEFAULT_REPOAGENT_DIRECTORY = Path("/opt/tritonserver/repoagents")

# The actions Triton delivers last agent first.
_REVERSED = (Action.LOAD_COMPLETE, Action.LOAD_FAIL, Action.UNLOAD_COMPLETE)


def agent_library(directory: Path, name: str) -> Path:
    """Where agent `name`'s library is; INVALID_ARG in Triton's words when it is not there."""
    filename = f"libtritonrepoagent_{name}.so"
    path = directory / name / filename
    if "/" in name or name in ("", ".", "..") or not path.is_file():
        raise TritonError.invalid_arg(
            f"unable to find '{filename}' for repo agent '{name}', searched: {directory}")
    return path


class RepoAgentModels:
    """The agents of one load of one model, in the configuration's order."""

    def __init__(self) -> None:
        self._models: list[AgentModel] = []
        self._last: Action | None = None
        self._lock = threading.Lock()
        self._holders: set[int] = set()  # ids of the loaded versions that came from this load

    @classmethod
    def start(cls, config: mc.ModelConfig, model_path: Path, directory: Path,
              config_name: str = "") -> RepoAgentModels:
        """Run every agent's LOAD over the model at `model_path`; TritonError with the first
        agent's refusal (the agents already started hear LOAD_FAIL)."""
        agents = cls()
        location = str(model_path)
        agent_config = config
        try:
            for entry in config.model_repository_agents.agents:
                if agents._models:
                    location = agents._models[-1].location()
                    # The next agent sees the configuration where the last one left the files.
                    try:
                        agent_config = read_model_config(Path(location), auto_complete=False,
                                                         config_name=config_name)
                    except TritonError:
                        agent_config = mc.ModelConfig()
                model = AgentModel(
                    agent_library(directory, entry.name), location,
                    json.dumps(model_config_to_json(agent_config), separators=(",", ":")),
                    list(entry.parameters.items()))
                agents._models.append(model)
                agents._last = Action.LOAD
                model.invoke(Action.LOAD)
        except BaseException:
            agents.close()
            raise
        return agents

    @property
    def location(self) -> Path:
        """Where the model loads from: the last agent's location."""
        return Path(self._models[-1].location())

    def _invoke(self, action: Action) -> None:
        """Every agent hears `action` in Triton's order; an error is logged, as Triton's life
        cycle does past LOAD. A second UNLOAD is not passed on."""
        with self._lock:
            if action is Action.UNLOAD and self._last is Action.UNLOAD:
                return
            self._last = action
            models = self._models[::-1] if action in _REVERSED else self._models
            for model in models:
                try:
                    model.invoke(action)
                except TritonError as exc:
                    log.error("Agent model returns error on %s: %s: %s", action.triton_name,
                              exc.code.status_text, exc.message)
                    return

    def load_failed(self) -> None:
        """The load failed: LOAD_FAIL, and the agents are done with the model."""
        self._invoke(Action.LOAD_FAIL)
        self.close()

    def loaded(self, versions: Sequence[object]) -> None:
        """The load succeeded with `versions` (the loaded models): LOAD_COMPLETE; the agents
        stay with the model until the last of those versions has unloaded."""
        self._invoke(Action.LOAD_COMPLETE)
        with self._lock:
            self._holders = {id(version) for version in versions}
            done = not self._holders
        if done:  # nothing serves from this load (every version was updated in place)
            self.close()

    def unloading(self) -> None:
        """A version of this load starts to unload: UNLOAD, once."""
        self._invoke(Action.UNLOAD)

    def unloaded(self, version: object) -> None:
        """A version of this load has unloaded; after the last, UNLOAD_COMPLETE."""
        with self._lock:
            self._holders.discard(id(version))
            done = not self._holders
        if done:
            self._invoke(Action.UNLOAD_COMPLETE)
            self.close()

    def close(self) -> None:
        """Finalize every agent model (one that has not heard how the model's life ended hears
        it first); idempotent."""
        with self._lock:
            models, self._models = self._models, []
        for model in models:
            model.close()

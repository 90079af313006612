"""One model's use of one repository agent (Triton's TritonRepoAgentModel), through the C API
library: the agent libraries are compiled Triton code, so they live where the backends do.

`csrc/repo_agent.cc` opens each `libtritonrepoagent_<name>.so` once, shares it between the
models naming it and implements the TRITONREPOAGENT_* calls the agent makes; this module is the
Python handle on one agent model. When each action is invoked, and in which order over a list
of agents, is the repository's business (repository/repo_agents.py).
"""

from __future__ import annotations

import ctypes
import enum
from ctypes import POINTER, c_char_p, c_int, c_void_p
from pathlib import Path
from typing import Any

from ...errors import TritonError
from .host import library


class Action(enum.IntEnum):
    """TRITONREPOAGENT_ActionType."""

    LOAD = 0
    LOAD_COMPLETE = 1
    LOAD_FAIL = 2
    UNLOAD = 3
    UNLOAD_COMPLETE = 4

    @property
    def triton_name(self) -> str:
        return f"TRITONREPOAGENT_ACTION_{self.name}"


# TRITONREPOAGENT_ARTIFACT_FILESYSTEM: Tritium's repositories are local folders.
_FILESYSTEM = 0

_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "tritium_agent_model_new": (c_void_p, [c_char_p, c_int, c_char_p, c_char_p,
                                           POINTER(c_void_p)]),
    "tritium_agent_model_add_parameter": (None, [c_void_p, c_char_p, c_char_p]),
    "tritium_agent_model_initialize": (c_void_p, [c_void_p]),
    "tritium_agent_model_invoke": (c_void_p, [c_void_p, c_int]),
    "tritium_agent_model_location": (c_int, [c_void_p, POINTER(c_char_p)]),
    "tritium_agent_model_delete": (None, [c_void_p]),
}



class AgentModel:
    """The agent at `library_path` taking part in one load of one model."""

    def __init__(self, library_path: Path, location: str, config_json: str,
                 parameters: list[tuple[str, str]]) -> None:
        self._lib = library()
        self._call = library().released(_PROTOTYPES)
        handle = c_void_p()
        self._raise(self._call["tritium_agent_model_new"](
            str(library_path).encode(), _FILESYSTEM, location.encode(),
            config_json.encode(), ctypes.byref(handle)))
        self._handle: int | None = handle.value
        for key, value in parameters:
            self._call["tritium_agent_model_add_parameter"](
                self._handle, key.encode(), value.encode())
        try:
            self._raise(self._call["tritium_agent_model_initialize"](self._handle))
        except TritonError:
            self.close()
            raise

    def _raise(self, error: int | None) -> None:
        raised = self._lib.take_error(error)
        if raised is not None:
            raise raised

    def invoke(self, action: Action) -> None:
        """TRITONREPOAGENT_ModelAction; TritonError with the agent's (or Triton's order) error."""
        assert self._handle is not None
        self._raise(self._call["tritium_agent_model_invoke"](self._handle, int(action)))

    def location(self) -> str:
        """Where the model's files are after this agent."""
        assert self._handle is not None
        text = c_char_p()
        self._call["tritium_agent_model_location"](self._handle, ctypes.byref(text))
        return (text.value or b"").decode("utf-8", "surrogateescape")

    def close(self) -> None:
        """The agent hears how the model's life ended if it has not yet, then ModelFinalize;
        a location it acquired is removed."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._call["tritium_agent_model_delete"](handle)

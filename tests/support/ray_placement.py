"""Repositories whose models place their instances on Ray, and a look at their actors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from support import PYTHON_MODELS


def ray_parameter(options: dict[str, Any], key: str = "ray") -> str:
    text = json.dumps(json.dumps(options))
    return f'parameters {{ key: "{key}" value: {{ string_value: {text} }} }}\n'


def copy_python_model(repo: Path, source: str, name: str, *, ray: dict[str, Any] | None,
                      count: int = 1) -> Path:
    """tests/support/python_models/repo/<source> as `name`, its instance group replaced by `count`
    CPU instances, placed on Ray with the actor options `ray` (None: local)."""
    target = repo / name
    shutil.copytree(PYTHON_MODELS / "repo" / source, target)
    config = target / "config.pbtxt"
    lines = [line for line in config.read_text().splitlines()
             if not line.startswith("instance_group")]
    text = "\n".join(lines).replace(f'name: "{source}"', f'name: "{name}"')
    text += f"\ninstance_group [ {{ kind: KIND_CPU count: {count} }} ]\n"
    if ray is not None:
        text += ray_parameter(ray)
    config.write_text(text)
    return target


def server_actors(server_id: str, model: str) -> dict[str, Any]:
    """The live actors serving `model` for the server started with `--id=<server_id>`, by actor
    name (Tritium names them `<id>.<random>/<model>/<version>/<instance>/<serial>`).

    An actor listed but ended before it is looked up (a reload or an unload ends actors at any
    moment) is not live: it is left out, not an error."""
    import ray

    found = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry["name"]
        if entry["namespace"] == "tritium" and name.startswith(f"{server_id}.") \
                and f"/{model}/" in name:
            try:
                found[name] = ray.get_actor(name, namespace="tritium")
            except ValueError:  # Ray's "Failed to look up actor": gone since the listing
                continue
    return found


def actor_nodes(server_id: str, model: str) -> dict[str, str]:
    """Actor name -> the Ray node its instance runs on, asked of each actor."""
    import ray

    return {name: ray.get(actor.where.remote())[0]
            for name, actor in server_actors(server_id, model).items()}

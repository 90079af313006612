"""The tests' look at a server's actors (`support.ray_placement.server_actors`) tolerates an
actor that ends between Ray's listing and its lookup, as a reload under load ends them.

Ray itself is replaced here by the two calls the helper makes (a race cannot be arranged
reliably on a real cluster): the listing still names the ended actor, and its lookup raises what
`ray.get_actor` raises for a name no actor holds (ValueError, "Failed to look up actor ...").
"""

from __future__ import annotations

import ray

from support.ray_placement import server_actors

LIVE = "listing.1/m/1/m_0/1"
ENDED = "listing.1/m/1/m_1/1"


def test_an_actor_ended_after_the_listing_is_left_out(monkeypatch):
    listing = [{"name": name, "namespace": "tritium"} for name in (LIVE, ENDED)]

    def get_actor(name: str, namespace: str | None = None) -> str:
        if name == ENDED:
            raise ValueError(f"Failed to look up actor with name '{name}'.")
        return f"handle of {name}"

    monkeypatch.setattr(ray.util, "list_named_actors", lambda all_namespaces=False: listing)
    monkeypatch.setattr(ray, "get_actor", get_actor)
    assert server_actors("listing", "m") == {LIVE: f"handle of {LIVE}"}

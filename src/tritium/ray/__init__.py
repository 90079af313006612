"""Model instances placed on a Ray cluster (`tritium serve --ray-address ...`).

Server side: `placement.py` (the model's hook, an InstancePlacement), `cluster.py` (the
connection and the actors), `options.py` (the `ray` model parameter), `remote_instance.py`
(one instance's actor, replaced when lost), `owner_calls.py` (what an actor asks of its
server). Actor side: `instance_actor.py` (the
backend's instance, run as locally), `owner_link.py` (the way back to the owning server).
`wire.py` is what crosses between them.

This `__init__` imports nothing: Ray is imported only by a server started with --ray-address.
"""

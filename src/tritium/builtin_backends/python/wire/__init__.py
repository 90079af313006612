"""What the python backend's server and stub processes share on the wire.

`messages` (control messages on the two unix sockets of an instance), `shm_ring` (the
shared-memory rings) and `shm_tensors` (tensors packed into them). Standard library and numpy
only: both processes import it, the stub possibly under another interpreter.
"""

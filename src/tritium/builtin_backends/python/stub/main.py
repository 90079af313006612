"""The stub process's entry point (Triton's triton_python_backend_stub): started by the python
backend (`server/stub_launcher.py`) as

    <python> -c <BOOTSTRAP> <tritium source dir> <exec in fd> <exec out fd> <async in fd>
             <async out fd> <in-ring fd> <out-ring fd> <in-ring capacity> <out-ring capacity>
             <instance name>

with the sockets of both channels (one per direction, see `messages.channel`) and both ring
regions inherited, it sets up the `Stub` (`pb_stub.py`) and
serves until FINALIZE, or until the server goes away.

This module imports only the standard library and the stub's own modules: the server imports
it for `BOOTSTRAP`, and the stub may run under another interpreter (an execution environment).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from ..wire.messages import DONE, Connection
from ..wire.shm_ring import Ring
from .pb_stub import Stub


def _server_decides(_signum: int, _frame: object) -> None:
    """SIGTERM to the stub: ignored (the server stops it)."""


def main(argv: list[str]) -> None:
    (source_dir, exec_in, exec_out, async_in, async_out, in_fd, out_fd, in_size, out_size,
     name) = argv
    # Ctrl-C in a terminal reaches the whole process group, and a service manager's stop
    # signal the whole group too: the server decides when the stub ends (FINALIZE, or EOF when
    # the server is gone), as Triton's stub skips both. SIGTERM gets a handler that does
    # nothing rather than SIG_IGN, which a program the model runs would inherit; a process
    # the model forks gets the default back.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _server_decides)
    os.register_at_fork(after_in_child=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    exec_conn = Connection(socket.socket(fileno=int(exec_in)), socket.socket(fileno=int(exec_out)))
    async_conn = Connection(socket.socket(fileno=int(async_in)),
                            socket.socket(fileno=int(async_out)))
    in_ring = Ring(int(in_fd), int(in_size))
    out_ring = Ring(int(out_fd), int(out_size))
    os.close(int(in_fd))
    os.close(int(out_fd))
    stub = Stub(exec_conn, async_conn, in_ring, out_ring, name)
    import c_python_backend_utils  # Triton's stub module, for models that use it
    import triton_python_backend_utils  # noqa: F401  (found through source_dir)

    c_python_backend_utils.shared_memory._attach(out_ring)
    # A model sees the argv Triton's stub gives it (an embedded interpreter's: one empty
    # string), not the stub's descriptors: `unittest.main(...)` in a model reads it.
    sys.argv = [""]

    # Imports of the model itself resolve in the interpreter's own environment.
    if sys.path and sys.path[0] == source_dir:
        del sys.path[0]
    threading.Thread(target=stub.read_async, name="stub-reader", daemon=True).start()
    stub.runtime.follow_forks()
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="stub-parent-watch",
                     daemon=True).start()
    exec_conn.send((DONE, None, {"pid": os.getpid()}))  # hello: ready for commands
    profile_dir = os.environ.get("TRITIUM_STUB_PROFILE")
    if profile_dir:  # development aid: a cProfile of the main thread per stub
        import cProfile

        cProfile.runctx("stub.serve()", globals(), {"stub": stub},
                        os.path.join(profile_dir, f"{name}.{os.getpid()}.prof"))
    else:
        stub.serve()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _exit_with_parent(parent: int) -> None:
    """End the stub once the server is gone, whatever the model is doing: a stub stuck in
    `finalize` (or any call) would otherwise outlive it (Triton's stub checks its parent every
    300 ms too). An orphan's parent becomes another process."""
    while True:
        time.sleep(_PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


_PARENT_CHECK_S = 0.3


# How the server starts a stub: its argv[1] is the directory holding `tritium` and
# `triton_python_backend_utils`, put first on sys.path only until they are imported. numpy
# comes first, from the interpreter's own environment (that directory may be the server's
# site-packages, whose numpy need not suit an execution environment's Python).
BOOTSTRAP = (
    "import sys, numpy; sys.path.insert(0, sys.argv[1]); "
    "from tritium.builtin_backends.python.stub.main import main; main(sys.argv[1:])"
)

"""PyTriton's module layout over Tritium: `pytriton.X` code imports `tritium.pytriton.X`.

PyTriton scripts import by module (`from pytriton.triton import Triton`, `from
pytriton.decorators import batch` ...). Each module here re-exports the names PyTriton's module
of the same path has, from tritium.inprocess.pytriton, so such a script needs only
`pytriton.` changed to `tritium.pytriton.`. There is deliberately no top-level `pytriton`
package: it would shadow an installed nvidia-pytriton (same import name, different project).
"""

from tritium.pytriton import client, decorators, exceptions, model_config, triton

__all__ = ["client", "decorators", "exceptions", "model_config", "triton"]

"""A model's load is logged as Triton logs it: "loading: <model>:<version>", then "successfully
loaded '<model>' version <version>" or "failed to load '<model>' version <version>: <Code>:
<reason>" (Triton's Status::AsString)."""

from __future__ import annotations

from support import ROOT
from support.server_process import ServerProcess

EXAMPLES = ROOT / "examples" / "model_repository"


def test_loading_then_the_result_of_each_version():
    # `simple` needs the example backend, not given here: it fails to load.
    with ServerProcess([EXAMPLES], "--model-control-mode=explicit",
                       "--load-model=identity_fp32", "--load-model=simple",
                       "--exit-on-error=false", "--strict-readiness=false") as server:
        lines = server.log().splitlines()

    def index(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert index("loading: identity_fp32:1") < index("successfully loaded 'identity_fp32' "
                                                     "version 1")
    assert index("loading: simple:1") < index(
        "failed to load 'simple' version 1: Invalid argument: unable to find backend 'addsub'")

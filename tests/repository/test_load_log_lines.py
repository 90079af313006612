"""A model's load is logged as Triton logs it: "loading: <model>:<version>" for each version,
"failed to load '<model>' version <version>: <Code>: <reason>" (Triton's Status::AsString) for
each that fails, then once for the model "successfully loaded '<model>'" or "failed to load
'<model>'"."""

from __future__ import annotations

from support import ROOT
from support.server_process import ServerProcess

EXAMPLES = ROOT / "examples" / "model_repository"


def test_loading_each_version_then_the_result_for_the_model():
    # `simple` needs the example backend, not given here: it fails to load.
    with ServerProcess([EXAMPLES], "--model-control-mode=explicit",
                       "--load-model=identity_fp32", "--load-model=simple",
                       "--exit-on-error=false", "--strict-readiness=false") as server:
        lines = server.log().splitlines()
        messages = server.log_messages()

    def index(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert index("loading: identity_fp32:1") < index("successfully loaded 'identity_fp32'")
    assert index("loading: simple:1") < index(
        "failed to load 'simple' version 1: Invalid argument: unable to find backend 'addsub'") \
        < index("failed to load 'simple'\"")
    assert messages.count("successfully loaded 'identity_fp32'") == 1
    assert messages.count("failed to load 'simple'") == 1
    assert not [m for m in messages if m.startswith("successfully loaded 'identity_fp32' ")]

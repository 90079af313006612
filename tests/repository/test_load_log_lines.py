"""A model's load is logged as Triton logs it: "loading: <model>:<version>" for each version,
"failed to load '<model>' version <version>: <Code>: <reason>" (Triton's Status::AsString) for
each that fails, then once for the model "successfully loaded '<model>'" or "failed to load
'<model>'"."""

from __future__ import annotations

import tritonclient.http as httpclient

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


def test_a_verbose_server_traces_each_load_and_unload_as_triton():
    """Triton's verbose (level 2) life-cycle trace: AsyncLoad() when a load starts,
    OnLoadFinal() once its versions are done, AsyncUnload() when an unload starts (L0_lifecycle
    reads their order)."""
    with ServerProcess([EXAMPLES], "--model-control-mode=explicit", "--log-verbose=2") as server:
        client = httpclient.InferenceServerClient(server.http_url)
        client.load_model("identity_fp32")
        client.unload_model("identity_fp32")
        messages = server.log_messages()
    trace = [m for m in messages if m.endswith("'identity_fp32'") and "()" in m
             or m == "OnLoadFinal() 'identity_fp32' for all version(s)"]
    assert trace == ["AsyncLoad() 'identity_fp32'",
                     "OnLoadFinal() 'identity_fp32' for all version(s)",
                     "AsyncUnload() 'identity_fp32'"], trace

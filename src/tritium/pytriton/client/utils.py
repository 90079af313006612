"""`pytriton.client.utils`: URL parsing, making a tritonclient, waiting for the server and a
model, reading a model's configuration."""

from tritium.inprocess.pytriton.client_utils import (
    DEFAULT_INFERENCE_TIMEOUT_S,
    LATEST_MODEL_VERSION,
    ModelState,
    TritonUrl,
    create_client_from_url,
    get_model_config,
    get_model_state,
    wait_for_model_ready,
    wait_for_server_ready,
)

__all__ = ["DEFAULT_INFERENCE_TIMEOUT_S", "LATEST_MODEL_VERSION", "ModelState", "TritonUrl",
           "create_client_from_url", "get_model_config", "get_model_state",
           "wait_for_model_ready", "wait_for_server_ready"]

"""Model configuration: config.pbtxt -> Triton's `ModelConfig`, auto-complete, validation, JSON.

The schema is Triton's own (`tritonclient.grpc.model_config_pb2`); this package only reproduces
what Triton core does to it, in the order Triton does it:

    config = read_model_config(model_path, auto_complete=auto_complete)   # repository poll
    normalize_model_config(config, model_path)
    validate_model_config(config)
    if not auto_complete:
        validate_model_io_config(config)
    # ... model load: the backend may auto-complete the config here ...
    normalize_instance_groups(config, backend_preferred_groups, gpus)
    validate_instance_groups(config, gpus=gpus)
    validate_model_io_config(config)

`model_config_to_json` is the body of GET /v2/models/<m>/config.
"""

from .json_form import model_config_from_json, model_config_to_json
from .loader import parse_config_text, read_model_config
from .normalize import (
    ENSEMBLE_PLATFORM,
    check_directory_name,
    normalize_instance_groups,
    normalize_model_config,
)
from .validate import validate_instance_groups, validate_model_config, validate_response_cache
from .validate_ensemble import validate_ensemble_steps
from .validate_io import validate_model_io_config

__all__ = [
    "ENSEMBLE_PLATFORM",
    "check_directory_name",
    "model_config_from_json",
    "model_config_to_json",
    "normalize_instance_groups",
    "normalize_model_config",
    "parse_config_text",
    "read_model_config",
    "validate_ensemble_steps",
    "validate_instance_groups",
    "validate_model_config",
    "validate_model_io_config",
    "validate_response_cache",
]

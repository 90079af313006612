"""Triton's SageMaker endpoint (`--allow-sagemaker`): /ping, /invocations and the multi-model
endpoint's /models (see `endpoint`; the models it loads: `multi_model`)."""

from .endpoint import BINARY_TYPE, SERVICE, SageMakerFrontend

__all__ = ["BINARY_TYPE", "SERVICE", "SageMakerFrontend"]

"""An OpenAI-compatible frontend for the models on the llm backend (`--openai-port`)."""

from .app import OpenAiFrontend

__all__ = ["OpenAiFrontend"]

"""The pytorch backend's Python-based runtime: the python backend runs model.py here for models
configured with `runtime: "model.py"` (see that file); the backend manager finds it by path."""

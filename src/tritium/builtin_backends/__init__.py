"""Built-in backends, each written on the backend API (`tritium.backend`) alone."""

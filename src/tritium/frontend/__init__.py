"""Frontends: the HTTP/REST, gRPC and metrics endpoints in front of an InferenceServer."""

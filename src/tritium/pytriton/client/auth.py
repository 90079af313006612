"""`pytriton.client.auth`: the access-token headers of each protocol."""

from tritium.inprocess.pytriton.client_utils import (
    create_auth_headers,
    extract_access_token_from_headers,
)

__all__ = ["create_auth_headers", "extract_access_token_from_headers"]

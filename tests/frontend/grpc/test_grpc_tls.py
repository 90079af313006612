"""gRPC over TLS as Triton 2.51 spells it: `--grpc-use-ssl`, `--grpc-server-cert`,
`--grpc-server-key`, and with `--grpc-use-ssl-mutual` a `--grpc-root-cert` that client
certificates must chain to. Certificates come from a throwaway CA (trustme); the client is
tritonclient.grpc with its `ssl=True` options.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import trustme
from tritonclient.utils import InferenceServerException

from support.server_process import ServerProcess


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """Files: the CA, the server's certificate and key (for 127.0.0.1), a client's."""
    folder = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1", "localhost")
    client_cert = ca.issue_cert("client@example.org")
    files = {
        "ca": folder / "ca.pem",
        "server_cert": folder / "server.pem", "server_key": folder / "server.key",
        "client_cert": folder / "client.pem", "client_key": folder / "client.key",
    }
    ca.cert_pem.write_to_path(files["ca"])
    server_cert.cert_chain_pems[0].write_to_path(files["server_cert"])
    server_cert.private_key_pem.write_to_path(files["server_key"])
    client_cert.cert_chain_pems[0].write_to_path(files["client_cert"])
    client_cert.private_key_pem.write_to_path(files["client_key"])
    return {name: str(path) for name, path in files.items()}


@pytest.fixture(scope="module")
def tls_server(standard_repo, pki):
    with ServerProcess([standard_repo], "--grpc-use-ssl=true",
                       f"--grpc-server-cert={pki['server_cert']}",
                       f"--grpc-server-key={pki['server_key']}") as process:
        yield process


@pytest.fixture(scope="module")
def mutual_server(standard_repo, pki):
    with ServerProcess([standard_repo], "--grpc-use-ssl-mutual=true",
                       f"--grpc-server-cert={pki['server_cert']}",
                       f"--grpc-server-key={pki['server_key']}",
                       f"--grpc-root-cert={pki['ca']}") as process:
        yield process


def _infer(client) -> None:
    data = np.arange(8, dtype=np.float32).reshape(1, 8)
    tensor = grpcclient.InferInput("INPUT0", [1, 8], "FP32")
    tensor.set_data_from_numpy(data)
    result = client.infer("identity_fp32", [tensor], client_timeout=10)
    np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), data)


def test_tritonclient_over_tls(tls_server, pki) -> None:
    with grpcclient.InferenceServerClient(tls_server.grpc_url, ssl=True,
                                          root_certificates=pki["ca"]) as client:
        assert client.is_server_live()
        _infer(client)


def test_tls_speaks_alpn_h2(tls_server, pki) -> None:
    context = ssl.create_default_context(cafile=pki["ca"])
    context.set_alpn_protocols(["h2"])
    host, port = tls_server.grpc_url.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.selected_alpn_protocol() == "h2"


def test_a_plaintext_client_gets_nothing_from_a_tls_port(tls_server, pki) -> None:
    with grpcclient.InferenceServerClient(tls_server.grpc_url) as client:
        with pytest.raises(InferenceServerException) as info:
            client.is_server_live(client_timeout=3)
        assert info.value.status() in ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED")
    # and the server still serves TLS clients
    with grpcclient.InferenceServerClient(tls_server.grpc_url, ssl=True,
                                          root_certificates=pki["ca"]) as client:
        assert client.is_server_live()


def test_mutual_tls_with_a_client_certificate(mutual_server, pki) -> None:
    with grpcclient.InferenceServerClient(mutual_server.grpc_url, ssl=True,
                                          root_certificates=pki["ca"],
                                          private_key=pki["client_key"],
                                          certificate_chain=pki["client_cert"]) as client:
        assert client.is_server_live()
        _infer(client)


def test_mutual_tls_refuses_a_client_without_a_certificate(mutual_server, pki) -> None:
    with grpcclient.InferenceServerClient(mutual_server.grpc_url, ssl=True,
                                          root_certificates=pki["ca"]) as client:
        with pytest.raises(InferenceServerException) as info:
            client.is_server_live(client_timeout=5)
        assert info.value.status() in ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED")


def test_mutual_tls_refuses_a_certificate_from_another_ca(mutual_server, pki, tmp_path) -> None:
    other = trustme.CA().issue_cert("intruder@example.org")
    other.cert_chain_pems[0].write_to_path(tmp_path / "c.pem")
    other.private_key_pem.write_to_path(tmp_path / "k.pem")
    with grpcclient.InferenceServerClient(mutual_server.grpc_url, ssl=True,
                                          root_certificates=pki["ca"],
                                          private_key=str(tmp_path / "k.pem"),
                                          certificate_chain=str(tmp_path / "c.pem")) as client, \
            pytest.raises(InferenceServerException):
        client.is_server_live(client_timeout=5)


def test_ssl_without_a_certificate_is_a_bad_option(standard_repo) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tritium", "serve", f"--model-repository={standard_repo}",
         "--grpc-use-ssl=true"],
        capture_output=True, text=True, timeout=60, env=ServerProcess([]).environment())
    assert result.returncode != 0
    assert "--grpc-server-cert" in result.stderr


"""A server told to use a Ray cluster that is not there fails soon, in one line that names the
address and Tritium's flag (Ray alone retries such an address for many minutes, and its own
messages name its `--address` flag)."""

from __future__ import annotations

import threading

import pytest

from support import ROOT
from support.server_process import ServerProcess, free_ports
from tritium.errors import TritonError
from tritium.ray import cluster

EXAMPLES = ROOT / "examples" / "model_repository"


def test_an_address_where_nothing_listens_fails_within_the_bound():
    (port,) = free_ports(1)
    server = ServerProcess([EXAMPLES], f"--ray-address=127.0.0.1:{port}").start(
        wait_ready=False)
    try:
        # The bound is 30 s and nothing answers at once; the rest is Python and Ray starting,
        # which takes minutes on a loaded machine (Ray alone would retry for over 600 s).
        assert server.wait_exit(timeout=400) != 0
    finally:
        server.stop()
    assert (f"unable to connect to the Ray cluster at '127.0.0.1:{port}' (--ray-address): "
            "Connection refused") in server.log()


def test_auto_without_a_cluster_names_tritiums_flag(monkeypatch):
    def no_cluster(**_: object) -> None:  # what ray.init says when it finds none
        raise ConnectionError("Could not find any running Ray instance. Please specify the one "
                              "to connect to by setting `--address` flag or `RAY_ADDRESS` "
                              "environment variable.")

    monkeypatch.setattr(cluster.ray, "init", no_cluster)
    with pytest.raises(TritonError) as caught:
        cluster.connect("auto")
    assert str(caught.value).startswith("--ray-address auto: no running Ray cluster found")
    assert "`--address`" not in str(caught.value)


def test_ray_that_never_answers_is_given_up_after_the_bound(monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(cluster.ray, "init", lambda **_: release.wait())
    monkeypatch.setattr(cluster, "_probe", lambda address, timeout_s: None)
    try:
        with pytest.raises(TritonError, match=r"at 'h:6379' \(--ray-address\): no answer within "
                                              r"0\.2 s"):
            cluster.connect("h:6379", timeout_s=0.2)
    finally:
        release.set()

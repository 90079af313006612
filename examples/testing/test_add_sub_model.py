"""A model author's test of examples/model_repository/add_sub, with Tritium's pytest plugin.

Run: pytest examples/testing --tritium-repository examples/model_repository
"""
import numpy as np


def test_add_sub(tritium_server):
    server = tritium_server(models=["add_sub"])
    a, b = np.arange(4, dtype=np.float32), np.ones(4, dtype=np.float32)
    out = server.infer("add_sub", INPUT0=a, INPUT1=b)
    assert out["OUTPUT0"].tolist() == [1, 2, 3, 4]
    assert out["OUTPUT1"].tolist() == [-1, 0, 1, 2]

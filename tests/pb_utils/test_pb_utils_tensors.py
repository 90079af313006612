"""Unit tests of triton_python_backend_utils' tensors: dtype maps and constants, BYTES
(de)serialisation, Tensor and DLPack. Expected messages are Triton 2.51's words (its resource
file and stub)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import triton_python_backend_utils as pb_utils

# `no_runtime` is autouse: every test here starts and ends with no runtime set.
from support.pb_utils_fake_runtime import no_runtime  # noqa: F401

# --- dtype maps and constants ---------------------------------------------------------------


def test_dtype_maps():
    assert pb_utils.triton_to_numpy_type(11) is np.float32
    assert pb_utils.triton_to_numpy_type(13) is np.object_
    assert pb_utils.triton_to_numpy_type(14) is None
    assert pb_utils.numpy_to_triton_type(np.float32) == 11
    assert pb_utils.numpy_to_triton_type(np.dtype("int64")) == 9
    assert pb_utils.numpy_to_triton_type(np.bool_) == 1
    assert pb_utils.numpy_to_triton_type(np.object_) == 13
    assert pb_utils.numpy_to_triton_type(np.bytes_) == 13
    assert pb_utils.numpy_to_triton_type(np.complex64) is None
    assert pb_utils.triton_string_to_numpy("TYPE_FP16") is np.float16
    assert pb_utils.TRITON_STRING_TO_NUMPY["TYPE_BOOL"] is bool
    assert pb_utils.TRITON_STRING_TO_NUMPY["TYPE_STRING"] is np.object_


def test_constants():
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_START == 1
    assert pb_utils.TRITONSERVER_REQUEST_FLAG_SEQUENCE_END == 2
    assert pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_ALL == 1
    assert pb_utils.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE == 2
    assert pb_utils.TRITONSERVER_MEMORY_GPU == 0
    assert pb_utils.TRITONSERVER_MEMORY_CPU == 1
    memory = pb_utils.PreferredMemory(pb_utils.TRITONSERVER_MEMORY_CPU)
    assert memory.preferred_memory_type == pb_utils.TRITONSERVER_MEMORY_CPU
    assert memory.preferred_device_id == 0


# --- BYTES (de)serialisation ----------------------------------------------------------------


def test_serialize_byte_tensor_wire_form():
    data = np.array([[b"ab", "c\u00e9"], [3, b""]], dtype=object)
    wire = pb_utils.serialize_byte_tensor(data)
    expected = b"".join(
        struct.pack("<I", len(x)) + x for x in (b"ab", "c\u00e9".encode(), b"3", b"")
    )
    assert wire == expected
    decoded = pb_utils.deserialize_bytes_tensor(wire)
    assert decoded.dtype == np.object_
    assert list(decoded) == [b"ab", "c\u00e9".encode(), b"3", b""]


def test_serialize_byte_tensor_edge_cases():
    assert pb_utils.serialize_byte_tensor(np.array([], dtype=object)) == ()
    assert pb_utils.serialize_byte_tensor(np.array([1, 2], np.int32)) is None
    fixed = np.array([b"x", b"yz"])  # numpy 'S' dtype
    assert pb_utils.serialize_byte_tensor(fixed) == b"\x01\x00\x00\x00x\x02\x00\x00\x00yz"
    # Fortran-ordered input is still written in C order.
    f_order = np.asfortranarray(np.array([[b"a", b"b"], [b"c", b"d"]], dtype=object))
    assert list(pb_utils.deserialize_bytes_tensor(pb_utils.serialize_byte_tensor(f_order))) == [
        b"a", b"b", b"c", b"d"
    ]


def test_deserialize_accepts_uint8_array():
    wire = np.frombuffer(b"\x02\x00\x00\x00hi", dtype=np.uint8)
    assert list(pb_utils.deserialize_bytes_tensor(wire)) == [b"hi"]
    assert pb_utils.deserialize_bytes_tensor(b"").shape == (0,)


# --- tensors --------------------------------------------------------------------------------


def test_tensor_basics():
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    tensor = pb_utils.Tensor("T", array)
    assert tensor.name() == "T"
    assert tensor.as_numpy() is array
    assert tensor.triton_dtype() == 11
    assert tensor.shape() == [2, 3]
    assert tensor.is_cpu()
    transposed = pb_utils.Tensor("T", array.T)
    assert transposed.as_numpy().flags.c_contiguous
    np.testing.assert_array_equal(transposed.as_numpy(), array.T)


def test_tensor_bytes():
    assert pb_utils.Tensor("S", np.array([b"a"], dtype=object)).triton_dtype() == 13
    assert pb_utils.Tensor("S", np.array([b"abc"])).triton_dtype() == 13
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("S", np.array([b"a"], dtype=object)).to_dlpack()
    assert str(e.value) == "DLPack does not have support for string tensors."


@pytest.mark.parametrize(
    "array",
    [np.array(["text"]), np.zeros(2, np.complex64), np.zeros(2, ">f4")],
)
def test_tensor_unsupported_dtypes(array):
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("T", array)
    assert str(e.value) == "NumPy dtype is not supported."


def test_tensor_argument_errors():
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor("", np.zeros(1))
    assert str(e.value) == "Tensor name cannot be an empty string."
    with pytest.raises(TypeError):
        pb_utils.Tensor("T", [1, 2, 3])  # Triton wants an ndarray too


def test_tensor_dlpack_round_trip_shares_memory():
    array = np.arange(4, dtype=np.int64)
    tensor = pb_utils.Tensor("A", array)
    back = pb_utils.Tensor.from_dlpack("B", tensor.to_dlpack())
    assert back.name() == "B" and back.triton_dtype() == 9
    array[0] = 42
    assert back.as_numpy()[0] == 42
    view = np.from_dlpack(tensor)  # Tensor implements __dlpack__ itself
    array[1] = 43  # (numpy 1.x makes every np.from_dlpack array read-only)
    assert view[1] == 43
    flags = pb_utils.Tensor.from_dlpack("F", np.array([True, False]))
    assert flags.triton_dtype() == 1
    assert list(flags.as_numpy()) == [True, False]


def test_tensor_dlpack_of_read_only_array():
    array = np.arange(3, dtype=np.float32)
    array.flags.writeable = False
    back = pb_utils.Tensor.from_dlpack("B", pb_utils.Tensor("A", array).to_dlpack())
    np.testing.assert_array_equal(back.as_numpy(), array)


def test_tensor_from_dlpack_errors():
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("T", np.arange(6).reshape(2, 3).T)
    assert str(e.value) == (
        "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored in "
        "C-Order are supported."
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("T", 5)
    assert str(e.value) == (
        "Provided tensor is not supported. Tensor must be a DLPack capsule         or have "
        "`__dlpack__` and `__dlpack_device__` attributes"
    )
    with pytest.raises(pb_utils.TritonModelException) as e:
        pb_utils.Tensor.from_dlpack("", np.arange(2))
    assert str(e.value) == "Tensor name cannot be an empty string."

    class OnGpu:
        def __dlpack__(self, stream=None):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)

    # A CUDA tensor of no framework the stub knows is viewed through torch or cupy; here
    # neither can (no CUDA), and the message says which tensor could not be used.
    with pytest.raises(pb_utils.TritonModelException,
                       match="a CUDA tensor of type 'OnGpu' (needs torch or cupy|cannot be used)"):
        pb_utils.Tensor.from_dlpack("T", OnGpu())

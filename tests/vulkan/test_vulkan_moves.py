"""1- and 2-byte data movement and BitCast on the Vulkan target (spirv/data_movement.py, pad.py,
gather_scatter.py through u8/u16 storage: kernels.MOVED_STORAGE): transpose, slice, concat, pad
(a constant of the element's dtype), gather, gather_elements and scatter_elements on u8, i8, bool,
f16, bf16 and i16, and BitCast between same-size dtypes (1, 2, 4 and 8 bytes), against numpy's
answer bit for bit (a move has no tolerance). A target without 8-bit storage refuses a u8 move at
compile time; a device without it refuses the shader at load."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import iree_py
from harness import model, run_iree
from iree_py.errors import CompileError
from iree_py.targets import load_target
from test_ops import retyped
from test_vulkan_device import _load_in_subprocess

rng = np.random.default_rng(13)
DTYPES = {"u8": (TensorProto.UINT8, np.uint8), "i8": (TensorProto.INT8, np.int8), "bool": (TensorProto.BOOL, np.bool_),
          "f16": (TensorProto.FLOAT16, np.float16), "bf16": (TensorProto.BFLOAT16, ml_dtypes.bfloat16),
          "i16": (TensorProto.INT16, np.int16)}


def _data(shape: tuple[int, ...], np_dtype) -> np.ndarray:
    if np_dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(np_dtype).kind == "f" or np_dtype == ml_dtypes.bfloat16:
        return (rng.standard_normal(shape) * 100).astype(np_dtype)
    info = np.iinfo(np_dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(np_dtype)


def _one(op: str, shape: tuple[int, ...], initializers: dict, **attrs):
    """One node named "move" on input x (float32 here: the callers retype x and y)."""
    return model([helper.make_node(op, ["x", *initializers], ["y"], name="move", **attrs)], {"x": shape}, ["y"],
                 initializers, opset=18)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8 if a.dtype.itemsize == 1 else np.uint16)


MOVES = {
    "transpose": lambda x: (_one("Transpose", x.shape, {}, perm=[2, 0, 1]), np.transpose(x, (2, 0, 1))),
    "slice": lambda x: (_one("Slice", x.shape, {"s": np.array([1, 0], np.int64), "e": np.array([3, 5], np.int64),
                                                   "a": np.array([0, 2], np.int64), "p": np.array([1, 2], np.int64)}),
                        x[1:3, :, 0:5:2]),
    "pad_constant": lambda x: (_one("Pad", x.shape, {"p": np.array([0, 1, 2, 1, 0, 0], np.int64)}),
                               np.pad(x, [(0, 1), (1, 0), (2, 0)])),
    "gather_axis1": lambda x: (_one("Gather", x.shape, {"i": np.array([3, -1, 0], np.int64)}, axis=1),
                               np.take(x, [3, 3, 0], axis=1)),
    "gather_elements": lambda x: (_one("GatherElements", x.shape, {"i": np.zeros((3, 4, 2), np.int64) + 1},
                                       axis=2), x[:, :, [1, 1]]),
}


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("move", sorted(MOVES))
def test_narrow_move_is_bit_exact_on_vulkan(move: str, dtype: str):
    onnx_dtype, np_dtype = DTYPES[dtype]
    x = _data((3, 4, 5), np_dtype)
    m, expected = MOVES[move](x)
    (y,) = run_iree(retyped(m, x=onnx_dtype, y=onnx_dtype), [x], "vulkan")
    assert y.shape == expected.shape and np.array_equal(_bits(y), _bits(expected))


@pytest.mark.parametrize("dtype", ["u8", "bf16"])
def test_narrow_concat_and_pad_value_on_vulkan(dtype: str):
    onnx_dtype, np_dtype = DTYPES[dtype]
    a, c = _data((2, 3), np_dtype), _data((2, 5), np_dtype)
    value = np.array(7, np_dtype)
    nodes = [helper.make_node("Concat", ["a", "c"], ["ac"], name="concat", axis=1),
             helper.make_node("Pad", ["ac", "p", "v"], ["y"], name="pad")]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info("a", onnx_dtype, [2, 3]),
                                           helper.make_tensor_value_info("c", onnx_dtype, [2, 5])],
                              [helper.make_tensor_value_info("y", onnx_dtype, None)],
                              [numpy_helper.from_array(np.array([1, 0, 0, 2], np.int64), "p"),
                               helper.make_tensor("v", onnx_dtype, (), [7])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    (y,) = run_iree(m, [a, c], "vulkan")
    expected = np.pad(np.concatenate([a, c], axis=1), [(1, 0), (0, 2)], constant_values=value)
    assert np.array_equal(_bits(y), _bits(expected))


def test_narrow_scatter_elements_on_vulkan():
    x, u = _data((4, 6), np.int8), _data((2, 6), np.int8)
    i = np.array([[3, 0, 1, 2, 0, 3], [1, 2, 3, 0, 1, 2]], np.int64)
    m = model([helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter", axis=0)],
              {"x": (4, 6), "u": (2, 6)}, ["y"], {"i": i}, opset=18)
    (y,) = run_iree(retyped(m, x=TensorProto.INT8, u=TensorProto.INT8, y=TensorProto.INT8), [x, u], "vulkan")
    expected = x.copy()
    np.put_along_axis(expected, i, u, axis=0)
    assert np.array_equal(y, expected)


BITCASTS = [(np.float32, TensorProto.FLOAT, np.int32, TensorProto.INT32),
            (np.float64, TensorProto.DOUBLE, np.int64, TensorProto.INT64),
            (np.uint16, TensorProto.UINT16, np.float16, TensorProto.FLOAT16),
            (np.int8, TensorProto.INT8, np.uint8, TensorProto.UINT8),
            (np.bool_, TensorProto.BOOL, np.uint8, TensorProto.UINT8)]


@pytest.mark.parametrize("src,src_onnx,dst,dst_onnx", BITCASTS, ids=lambda v: getattr(v, "__name__", None))
def test_bitcast_keeps_the_bits_on_vulkan(src, src_onnx: int, dst, dst_onnx: int):
    x = _data((3, 7), src) if src not in (np.float32, np.float64) else rng.standard_normal((3, 7)).astype(src)
    graph = helper.make_graph([helper.make_node("BitCast", ["x"], ["y"], name="bitcast", to=dst_onnx)], "t",
                              [helper.make_tensor_value_info("x", src_onnx, [3, 7])],
                              [helper.make_tensor_value_info("y", dst_onnx, [3, 7])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])
    m.ir_version = 11
    (y,) = run_iree(m, [x], "vulkan")
    assert y.dtype == np.dtype(dst) and np.array_equal(y.view(np.uint8), x.view(np.uint8))  # NaN codes too


def _u8_transpose() -> bytes:
    onnx_dtype, _ = DTYPES["u8"]
    return retyped(_one("Transpose", (3, 4, 5), {}, perm=[2, 0, 1]), x=onnx_dtype, y=onnx_dtype).SerializeToString()


def test_a_u8_move_without_8bit_storage_is_a_compile_error():
    target = dataclasses.replace(load_target("vulkan"), name="vulkan-no8", storage_buffer_8bit=False)
    with pytest.raises(CompileError, match=r"node 'move' \(op Transpose\): target vulkan-no8 \(backend spirv\) cannot "
                                           r"build kernel kind 'transpose': it needs SPIR-V capability "
                                           r"StorageBuffer8BitAccess, which target vulkan-no8 lacks"):
        iree_py.compile(_u8_transpose(), target=target)


def test_a_u8_move_is_refused_at_load_without_8bit_storage(tmp_path: Path):
    (tmp_path / "m.vmfb").write_bytes(iree_py.compile(_u8_transpose(), target="vulkan"))
    assert _load_in_subprocess(tmp_path / "m.vmfb", {}).returncode == 0
    result = _load_in_subprocess(tmp_path / "m.vmfb", {"IRP_VULKAN_DISABLE_FEATURES": "storageBuffer8BitAccess"})
    assert result.returncode != 0
    assert "needs the device feature storageBuffer8BitAccess" in result.stderr, result.stderr

"""Dynamic-dim conv2d, pooling and recurrent kernels (iree_py/codegen/llvm/: conv.py, pool.py,
recurrent.py) against the numpy references of the IR ops (iree_py/ir/ops/: conv.py, pool.py,
recurrent.py), each kernel built once and run at several symbol values (batch 0 included), within
1e-4 of the largest expected magnitude."""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from iree_py.codegen.kernel_spec import EpilogueOp, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.targets import load_target
from iree_py.codegen.llvm.recurrent import OPS
from iree_py.codegen.llvm.weight_packing import M_BLOCKED, m_blocked_shape, pack_m_blocked
from iree_py.ir.ops import KERNELS
from iree_py.ir.ops.recurrent import FUNCTIONS_PER_DIRECTION, GATES
from iree_py.ir.ops.recurrent import KERNELS as RECURRENT_KERNELS
from iree_py.ir.symbols import Expr, call, evaluate
from iree_py.ir.types import DType, TensorType
from tests.codegen.conftest import assert_close

RTOL = 1e-4
RNG = np.random.default_rng(11)
N, H, W = Expr.of("n"), Expr.of("h"), Expr.of("w")


def _f32(*shape) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def _out_size(size: Expr, kernel: int, stride: int, begin: int, end: int, dilation: int, ceil_mode: int = 0) -> Expr:
    """The ONNX window output size as the shape rules write it (ceil_mode: a last window that would
    start inside the end padding is dropped)."""
    room = size + begin + end - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return room // stride + 1
    return call("min", call("ceildiv", room, stride) + 1, call("ceildiv", size + begin, stride))


def _run_at_sizes(specs: list[KernelSpec], make_inputs, reference_of, sizes: list[dict[str, int]]) -> None:
    """Build `specs` once; run each at every symbol assignment and compare with its reference."""
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    for spec in specs:
        for symbols in sizes:
            arrays = make_inputs(spec, symbols)
            (got,) = lib.run(spec, arrays, symbols)
            want_shape = tuple(evaluate(d, symbols) for d in spec.outputs[0].shape)
            if not got.size:  # an empty batch: the kernel ran no workgroup (some references reject it)
                assert got.shape == want_shape, f"{spec.name} at {symbols}"
                continue
            assert_close(got, reference_of(spec, arrays), RTOL, f"{spec.name} at {symbols}")


# --- conv2d -------------------------------------------------------------------------------------


def _conv_spec(name: str, c: int, m: int, k: tuple[int, int], strides=(1, 1), pads=(0, 0, 0, 0),
               dilations=(1, 1), group: int = 1, bias: bool = True, epilogue=(), operands=(),
               hw: tuple = (H, W)) -> KernelSpec:
    """A conv2d spec over X[n, c, h, w] (`hw`: the spatial dims, symbolic unless given)."""
    oh = _out_size(Expr.of(hw[0]), k[0], strides[0], pads[0], pads[2], dilations[0])
    ow = _out_size(Expr.of(hw[1]), k[1], strides[1], pads[1], pads[3], dilations[1])
    out = _f32(N, m, oh, ow)
    inputs = [_f32(N, c, *hw), _f32(m, c // group, *k)]
    if bias:
        inputs.append(_f32(m))
    inputs += [out if kind == "full" else _f32(m) for kind in operands]
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": group}
    return KernelSpec(name, "conv2d", tuple(inputs), (out,), attrs, tuple(epilogue))


def _conv_inputs(spec: KernelSpec, symbols: dict[str, int]) -> list[np.ndarray]:
    return [RNG.standard_normal(tuple(evaluate(d, symbols) for d in t.shape)).astype(np.float32)
            for t in spec.inputs]


def _conv_reference(spec: KernelSpec, arrays: list[np.ndarray]) -> np.ndarray:
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in spec.attrs.items()}
    has_bias = len(arrays) >= 3 and all(op.operand != 2 for op in spec.epilogue)
    y = KERNELS["Conv"](arrays[:3] if has_bias else arrays[:2], attrs).astype(np.float64)
    for op in spec.epilogue:
        if op.op == "Relu":
            y = np.maximum(y, 0.0)
        elif op.op == "Add":
            operand = arrays[op.operand].astype(np.float64)
            y = y + (operand.reshape(1, -1, 1, 1) if op.operand_kind == "channel" else operand)
        elif op.op == "Mul":
            operand = arrays[op.operand].astype(np.float64)
            y = y * (operand.reshape(1, -1, 1, 1) if op.operand_kind == "channel" else operand)
        else:
            raise AssertionError(f"test reference lacks epilogue op {op.op}")
    return y.astype(np.float32)


CONV_SIZES = [{"n": 1, "h": 9, "w": 13}, {"n": 2, "h": 5, "w": 4}, {"n": 0, "h": 7, "w": 7},
              {"n": 1, "h": 3, "w": 30}, {"n": 3, "h": 16, "w": 17}]


def test_conv2d_dynamic_against_numpy() -> None:
    specs = [
        _conv_spec("dconv_s2_pads_bias_relu", 3, 6, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1),
                   epilogue=(EpilogueOp("Relu"),)),
        _conv_spec("dconv_plain", 4, 5, (3, 2), pads=(0, 2, 1, 0), bias=False),
        _conv_spec("dconv_dilated", 2, 3, (2, 3), strides=(1, 2), pads=(2, 1, 0, 2), dilations=(2, 2)),
        _conv_spec("dconv_depthwise", 8, 8, (3, 3), pads=(1, 1, 1, 1), group=8),
        _conv_spec("dconv_grouped", 6, 4, (3, 3), strides=(2, 1), pads=(0, 1, 2, 1), group=2),
        _conv_spec("dconv_pointwise", 5, 12, (1, 1), epilogue=(EpilogueOp("Add", operand=3, operand_kind="full"),
                                                               EpilogueOp("Relu")), operands=("full",)),
        _conv_spec("dconv_channel_epilogue", 3, 9, (1, 3), pads=(0, 1, 0, 1),
                   epilogue=(EpilogueOp("Mul", operand=3, operand_kind="channel"),), operands=("channel",)),
        _conv_spec("dconv_batch_only", 4, 16, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), hw=(11, 20)),
        _conv_spec("dconv_pointwise_batch_only", 8, 6, (1, 1), hw=(5, 7)),
    ]
    _run_at_sizes(specs, _conv_inputs, _conv_reference, CONV_SIZES)


# Rows from one column to several whole register tiles (AVX-512: 48 or 64 columns) and a remainder:
# the interior tiles, the masked edge tiles at both ends and a pad wider than a tile.
WIDE_CONV_SIZES = [{"n": 1, "h": 3, "w": w} for w in (1, 16, 17, 49, 64, 97, 130)]


def test_conv2d_dynamic_wide_rows_against_numpy() -> None:
    specs = [
        _conv_spec("wconv_pad1_relu", 8, 16, (3, 3), pads=(1, 1, 1, 1), epilogue=(EpilogueOp("Relu"),)),
        _conv_spec("wconv_s2", 3, 8, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
        _conv_spec("wconv_wide_pads", 2, 5, (3, 3), pads=(2, 70, 1, 69), bias=False),
        _conv_spec("wconv_dilated_s3", 3, 6, (3, 3), strides=(1, 3), pads=(2, 3, 2, 1), dilations=(2, 2)),
        _conv_spec("wconv_depthwise", 16, 16, (3, 3), pads=(1, 1, 1, 1), group=16),
        _conv_spec("wconv_full_operand", 4, 6, (3, 3), pads=(1, 1, 1, 1),
                   epilogue=(EpilogueOp("Add", operand=3, operand_kind="full"),), operands=("full",)),
    ]
    _run_at_sizes(specs, _conv_inputs, _conv_reference, WIDE_CONV_SIZES)


# --- pooling ------------------------------------------------------------------------------------


def _pool_spec(name: str, kind: str, c: int, k: tuple[int, int], strides=(1, 1), pads=(0, 0, 0, 0),
               dilations=(1, 1), ceil_mode: int = 0, **extra) -> KernelSpec:
    oh = _out_size(H, k[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    ow = _out_size(W, k[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    out = TensorType(DType.i64 if kind == "maxpool_index" else DType.f32, (N, c, oh, ow))
    attrs = {"kernel": k, "strides": strides, "pads": pads, "dilations": dilations, "ceil_mode": ceil_mode, **extra}
    return KernelSpec(name, kind, (_f32(N, c, H, W),), (out,), attrs)


def _pool_reference(spec: KernelSpec, arrays: list[np.ndarray]) -> np.ndarray:
    attrs = {k: list(v) if isinstance(v, tuple) else v for k, v in spec.attrs.items()}
    x = arrays[0]
    if spec.kind == "maxpool":
        return KERNELS["MaxPool"]([x], attrs)
    if spec.kind == "maxpool_index":
        return KERNELS["MaxPoolIndices"]([x], attrs)
    if spec.kind == "avgpool":
        return KERNELS["AveragePool"]([x], attrs)
    if spec.kind == "globalavgpool":
        return x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True).astype(np.float32)
    return KERNELS["LpPool"]([x], attrs)


# The wide rows give the maxpool/avgpool interior several whole vectors of output columns and a
# remainder, at 8 and at 16 lanes, for strides 1 and 2.
POOL_SIZES = [{"n": 1, "h": 7, "w": 9}, {"n": 2, "h": 4, "w": 5}, {"n": 0, "h": 6, "w": 6},
              {"n": 1, "h": 12, "w": 3}, {"n": 1, "h": 5, "w": 33}, {"n": 1, "h": 4, "w": 70},
              {"n": 2, "h": 5, "w": 133}]


def test_pools_dynamic_against_numpy() -> None:
    specs = [
        _pool_spec("dmax_plain", "maxpool", 3, (3, 3)),
        _pool_spec("dmax_ceil_pads", "maxpool", 2, (3, 3), strides=(2, 2), pads=(1, 0, 1, 1), ceil_mode=1),
        _pool_spec("dmax_dilated", "maxpool", 2, (2, 2), strides=(1, 2), pads=(1, 1, 0, 0), dilations=(2, 1)),
        _pool_spec("dmaxidx_ceil", "maxpool_index", 2, (2, 3), strides=(2, 2), pads=(0, 1, 0, 1), ceil_mode=1,
                   storage_order=0),
        _pool_spec("dmaxidx_colmajor", "maxpool_index", 2, (3, 2), strides=(1, 2), pads=(1, 0, 1, 0),
                   storage_order=1),
        _pool_spec("davg_include_pad", "avgpool", 3, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=1,
                   count_include_pad=1),
        _pool_spec("davg_exclude_pad", "avgpool", 2, (2, 3), strides=(1, 2), pads=(1, 2, 0, 1), count_include_pad=0),
        _pool_spec("dlp_p2_ceil", "lppool", 2, (3, 2), strides=(2, 2), pads=(1, 0, 0, 1), ceil_mode=1, p=2),
        _pool_spec("dlp_p3", "lppool", 2, (2, 2), dilations=(2, 1), p=3),
        KernelSpec("dglobal_avg", "globalavgpool", (_f32(N, 5, H, W),), (_f32(N, 5, 1, 1),)),
        KernelSpec("dglobal_avg_1d", "globalavgpool", (_f32(N, 3, Expr.of(W) * H),), (_f32(N, 3, 1),)),
        KernelSpec("dmax_batch_only", "maxpool", (_f32(N, 2, 6, 5),), (_f32(N, 2, 3, 2),),
                   {"kernel": (2, 2), "strides": (2, 2), "pads": (0, 0, 0, 0), "dilations": (1, 1), "ceil_mode": 0}),
    ]
    _run_at_sizes(specs, _conv_inputs, _pool_reference, POOL_SIZES)


def _fenced(a: np.ndarray) -> tuple[np.ndarray, mmap.mmap]:
    """A copy of `a` whose last byte is the last one before a page that cannot be read: a kernel
    that loads past its input's end faults instead of reading a neighbour's bytes. Keep the map."""
    page = mmap.PAGESIZE
    size = -(-a.nbytes // page) * page
    region = mmap.mmap(-1, size + page)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    assert libc.mprotect(start + size, page, 0) == 0, f"mprotect: errno {ctypes.get_errno()}"  # PROT_NONE
    fenced = np.frombuffer(region, dtype=a.dtype, count=a.size, offset=size - a.nbytes).reshape(a.shape)
    fenced[...] = a
    return fenced, region


def test_strided_windows_read_nothing_past_their_input() -> None:
    """Strided taps are whole-vector loads of a span (epilogue.load_span: the last load ends where
    the span does) — at the very end of the input too: the input is fenced by an unreadable page,
    for static and symbolic W and widths whose last span ends at the buffer's last float."""
    specs = [_pool_spec("fmax_s2", "maxpool", 2, (2, 2), strides=(2, 2)),
             _pool_spec("fmax_3x3_s2", "maxpool", 2, (3, 3), strides=(2, 2)),
             _pool_spec("favg_s2", "avgpool", 2, (2, 2), strides=(2, 2), count_include_pad=0),
             _conv_spec("fconv_s2", 3, 8, (3, 3), strides=(2, 2)),
             _conv_spec("fconv_s2_pads", 3, 8, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
             _conv_spec("fconv_s2_static", 3, 8, (3, 3), strides=(2, 2), hw=(9, 33))]
    lib = LoadedLibrary(build_executable(specs, load_target("host")))
    for spec in specs:
        for symbols in ({"n": 1, "h": 9, "w": 33}, {"n": 1, "h": 4, "w": 64}, {"n": 1, "h": 5, "w": 130}):
            if not isinstance(spec.inputs[0].shape[3], Expr):
                symbols = {"n": 1}
            arrays = _conv_inputs(spec, symbols)
            fenced, region = _fenced(arrays[0])
            (got,) = lib.run(spec, [fenced, *arrays[1:]], symbols)
            reference = _conv_reference if spec.kind == "conv2d" else _pool_reference
            assert_close(got, reference(spec, arrays), RTOL, f"{spec.name} at {symbols}")
            del fenced
            region.close()


# --- LSTM / GRU / RNN ---------------------------------------------------------------------------

SEQ, BATCH = Expr.of("seq"), Expr.of("batch")
RECURRENT_RESULTS = {"LSTM": ("Y", "Y_h", "Y_c"), "GRU": ("Y", "Y_h"), "RNN": ("Y", "Y_h")}
RECURRENT_ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh", "HardSigmoid", "ScaledTanh", "Affine"],
                         "GRU": ["Sigmoid", "Tanh", "LeakyRelu", "Elu"], "RNN": ["Tanh", "Relu"]}
INPUT_SIZE, HIDDEN = 5, 6


def _recurrent_spec(op: str, direction: str, result: str, variant: int) -> KernelSpec:
    dirs = 2 if direction == "bidirectional" else 1
    rows = GATES[op] * HIDDEN
    count = FUNCTIONS_PER_DIRECTION[op] * dirs
    names = RECURRENT_ACTIVATIONS[op][:count]
    attrs = {"direction": direction, "hidden_size": HIDDEN, "activations": names,
             "activation_alpha": [0.3] * count, "activation_beta": [0.6] * count,
             "clip": 2.5 if variant else float("inf"), "result": result}
    variant %= 2
    inputs = [_f32(SEQ, BATCH, INPUT_SIZE), _f32(dirs, rows, INPUT_SIZE), _f32(dirs, rows, HIDDEN),
              _f32(dirs, 2 * rows), TensorType(DType.i32, (BATCH,)), _f32(dirs, BATCH, HIDDEN)]
    if op == "LSTM":
        inputs += [_f32(dirs, BATCH, HIDDEN), _f32(dirs, 3 * HIDDEN)]
        attrs["input_forget"] = variant
    if op == "GRU":
        attrs["linear_before_reset"] = variant
    out = _f32(SEQ, dirs, BATCH, HIDDEN) if result == "Y" else _f32(dirs, BATCH, HIDDEN)
    return KernelSpec(f"d{op}_{direction}_{result}_{variant}".lower(), op.lower(), tuple(inputs), (out,), attrs)


def _recurrent_inputs(spec: KernelSpec, symbols: dict[str, int]) -> list[np.ndarray]:
    """Random weights (scaled down), sequence_lens cycling through full, short, zero, longer than
    seq and negative lengths."""
    arrays = []
    for i, t in enumerate(spec.inputs):
        shape = tuple(evaluate(d, symbols) for d in t.shape)
        if i == 4:
            seq = symbols["seq"]
            choices = [seq, max(seq - 2, 0), 0, seq + 3, -1]
            arrays.append(np.array([choices[k % len(choices)] for k in range(shape[0])], np.int32))
        else:
            scale = 0.5 if i in (1, 2, 3) else 1.0
            arrays.append((RNG.standard_normal(shape) * scale).astype(np.float32))
    return arrays


def _recurrent_reference(spec: KernelSpec, arrays: list[np.ndarray]) -> np.ndarray:
    return RECURRENT_KERNELS[OPS[spec.kind]](arrays, spec.attrs)


RECURRENT_SIZES = [{"seq": 4, "batch": 3}, {"seq": 1, "batch": 5}, {"seq": 6, "batch": 0},
                   {"seq": 0, "batch": 2}, {"seq": 3, "batch": 1}]


def test_recurrent_dynamic_against_numpy() -> None:
    specs = [_recurrent_spec(op, direction, result, variant)
             for op in sorted(GATES)
             for variant, direction in enumerate(("forward", "bidirectional", "reverse"))  # reverse: variant 2 → 0
             for result in RECURRENT_RESULTS[op]
             if direction == "bidirectional" or result == "Y" or op == "LSTM"]
    _run_at_sizes(specs, _recurrent_inputs, _recurrent_reference, RECURRENT_SIZES)


def _packed(spec: KernelSpec, lanes: int) -> KernelSpec:
    """`spec` on the channel-vector path (conv_channels.py): its weight, input 1, packed m_blocked
    with V = `lanes`; _packed_inputs packs the array to match."""
    m, cg, kh, kw = spec.inputs[1].shape
    packed = m_blocked_shape((m, cg, kh, kw), spec.attrs["group"], lanes)
    return KernelSpec(spec.name, "conv2d", (spec.inputs[0], _f32(*packed), *spec.inputs[2:]), spec.outputs,
                      {**spec.attrs, "weight_layout": M_BLOCKED, "weight_lanes": lanes}, spec.epilogue)


def _channel_path_case(lanes: int):
    """(make_inputs, reference) for _packed specs: plain inputs are drawn and referenced, the weight
    handed to the kernel packed."""
    plain: dict[int, list[np.ndarray]] = {}

    def make_inputs(spec: KernelSpec, symbols: dict[str, int]) -> list[np.ndarray]:
        m, cg = spec.outputs[0].shape[1], spec.inputs[1].shape[3]
        shapes = [spec.inputs[0].shape, (m, cg, *spec.inputs[1].shape[1:3]), *(t.shape for t in spec.inputs[2:])]
        arrays = [RNG.standard_normal(tuple(evaluate(d, symbols) for d in shape)).astype(np.float32)
                  for shape in shapes]
        packed = [arrays[0], pack_m_blocked(arrays[1], spec.attrs["group"], lanes), *arrays[2:]]
        plain[id(packed[1])] = arrays
        return packed

    def reference(spec: KernelSpec, arrays: list[np.ndarray]) -> np.ndarray:
        return _conv_reference(spec, plain.pop(id(arrays[1])))
    return make_inputs, reference


@pytest.mark.parametrize("lanes", [8, 4])
def test_conv2d_channel_path_dynamic_against_numpy(lanes: int) -> None:
    """The channel-vector path on symbolic N, H, W: borders, interior tiles and the one-column
    remainder at every row length (1 to 130 columns, an empty batch), full and partial channel
    vectors, groups, strides, dilation, a 1x1 conv seen as one row of H*W pixels, and epilogues
    whose "full" operand is gathered with the run-time OH*OW lane stride."""
    specs = [_packed(spec, lanes) for spec in [
        _conv_spec(f"chconv{lanes}_pad1_relu", 8, 16, (3, 3), pads=(1, 1, 1, 1), epilogue=(EpilogueOp("Relu"),)),
        _conv_spec(f"chconv{lanes}_s2_partial", 6, 13, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1)),
        _conv_spec(f"chconv{lanes}_pointwise", 9, 20, (1, 1), bias=False),
        _conv_spec(f"chconv{lanes}_group2", 8, 2 * lanes, (3, 3), pads=(1, 1, 1, 1), group=2),
        _conv_spec(f"chconv{lanes}_dilated_asym", 4, 9, (3, 3), pads=(2, 1, 0, 2), dilations=(2, 2)),
        _conv_spec(f"chconv{lanes}_wide_kernel", 4, 8, (5, 5), pads=(3, 3, 3, 3)),
        _conv_spec(f"chconv{lanes}_full_operand", 4, 11, (3, 3), pads=(1, 1, 1, 1),
                   epilogue=(EpilogueOp("Add", operand=3, operand_kind="full"), EpilogueOp("Relu")),
                   operands=("full",)),
        _conv_spec(f"chconv{lanes}_channel_operand", 5, 10, (1, 3), pads=(0, 1, 0, 1),
                   epilogue=(EpilogueOp("Mul", operand=3, operand_kind="channel"),), operands=("channel",)),
        _conv_spec(f"chconv{lanes}_batch_only", 4, 16, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), hw=(11, 20)),
    ]]
    make_inputs, reference = _channel_path_case(lanes)
    sizes = CONV_SIZES + [{"n": 1, "h": 4, "w": w} for w in (1, 2, 49, 130)]
    _run_at_sizes(specs, make_inputs, reference, sizes)


def test_every_window_kernel_builds_for_arm64() -> None:
    specs = [_conv_spec("a_conv", 3, 6, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), epilogue=(EpilogueOp("Relu"),)),
             _conv_spec("a_pointwise", 8, 4, (1, 1)),
             _pool_spec("a_max", "maxpool", 2, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), ceil_mode=1),
             _pool_spec("a_avg", "avgpool", 2, (2, 2), count_include_pad=1),
             KernelSpec("a_global", "globalavgpool", (_f32(N, 5, H, W),), (_f32(N, 5, 1, 1),)),
             _recurrent_spec("LSTM", "bidirectional", "Y", 1), _recurrent_spec("GRU", "forward", "Y_h", 0)]
    blob = build_executable(specs, load_target("arm64"))
    assert blob.arch == "aarch64"
    assert [k.name for k in blob.kernels] == [s.name for s in specs]
    assert all(k.push_constants for k in blob.kernels)

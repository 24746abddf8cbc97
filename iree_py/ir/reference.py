"""numpy implementation of every normalized op, and `evaluate(graph, inputs)`.

Used by constant folding and as the reference in tests. Written for clarity, not speed.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from iree_py.ir import indexing_ops, rational_math
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.opdef import pool_output_size
from iree_py.ir.reference_convt import KERNELS as CONVT_KERNELS
from iree_py.ir.reference_datadep import KERNELS as DATADEP_KERNELS
from iree_py.ir.reference_nms import KERNELS as NMS_KERNELS
from iree_py.ir.ops_strings import STRING_KERNELS
from iree_py.ir.reference_control_flow import KERNELS as CONTROL_FLOW_KERNELS
from iree_py.ir.reference_logic import KERNELS as LOGIC_KERNELS
from iree_py.ir.reference_misc import KERNELS as MISC_KERNELS
from iree_py.ir.ops_dims import KERNELS as DIM_VALUES_KERNELS
from iree_py.ir.reference_quant import KERNELS as QUANT_KERNELS
from iree_py.ir.ops_qlookup import QLOOKUP_KERNELS
from iree_py.ir.reference_qsoftmax import QSOFTMAX_KERNELS
from iree_py.ir.reference_resize_pad import KERNELS as RESIZE_PAD_KERNELS
from iree_py.ir.reference_recurrent import KERNELS as RECURRENT_KERNELS
from iree_py.ir.ops_rt_reduce import rt_reduce_reference
from iree_py.ir.ops_rt_resize import rt_resize_reference
from iree_py.ir.reference_symbolic import evaluate_symbolic, has_symbols

Kernel = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]


def _pad_nchw(x: np.ndarray, pads: list[int], value: float) -> np.ndarray:
    top, left, bottom, right = pads
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def _windows(x: np.ndarray, kernel: tuple[int, int], strides: list[int], dilations: list[int],
             out_hw: tuple[int, int]) -> np.ndarray:
    """[N, C, OH, OW, KH, KW] view of the windows of padded x (x may be extended by the caller)."""
    kh, kw = kernel
    oh, ow = out_hw
    n, c = x.shape[:2]
    sn, sc, sh, sw = x.strides
    return np.lib.stride_tricks.as_strided(
        x, (n, c, oh, ow, kh, kw),
        (sn, sc, sh * strides[0], sw * strides[1], sh * dilations[0], sw * dilations[1]),
        writeable=False)


def conv(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, w = ins[0], ins[1]
    group = attrs["group"]
    m, cg, kh, kw = w.shape
    pads, strides, dil = attrs["pads"], attrs["strides"], attrs["dilations"]
    oh = pool_output_size(x.shape[2], kh, strides[0], pads[0], pads[2], dil[0], 0)
    ow = pool_output_size(x.shape[3], kw, strides[1], pads[1], pads[3], dil[1], 0)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), pads, 0.0))
    win = _windows(xp, (kh, kw), strides, dil, (oh, ow))  # N, C, OH, OW, KH, KW
    mg = m // group
    outs = []
    for g in range(group):
        wg = w[g * mg:(g + 1) * mg].astype(np.float64)
        outs.append(np.einsum("nchwij,mcij->nmhw", win[:, g * cg:(g + 1) * cg], wg))
    y = np.concatenate(outs, axis=1)
    if len(ins) == 3:
        y = y + ins[2].astype(np.float64).reshape(1, m, 1, 1)
    return y.astype(x.dtype)


def _pool_padded_extent(x: np.ndarray, attrs: dict[str, Any], out_hw: tuple[int, int]) -> list[int]:
    """Pads extended at the bottom/right so every ceil_mode window lies inside the array."""
    (kh, kw), strides, pads = attrs["kernel"], attrs["strides"], attrs["pads"]
    dil = attrs.get("dilations", [1, 1])
    need_h = (out_hw[0] - 1) * strides[0] + dil[0] * (kh - 1) + 1
    need_w = (out_hw[1] - 1) * strides[1] + dil[1] * (kw - 1) + 1
    extra_b = max(0, need_h - (x.shape[2] + pads[0] + pads[2]))
    extra_r = max(0, need_w - (x.shape[3] + pads[1] + pads[3]))
    return [pads[0], pads[1], pads[2] + extra_b, pads[3] + extra_r]


def _pool_out_hw(x: np.ndarray, attrs: dict[str, Any]) -> tuple[int, int]:
    (kh, kw), s, p = attrs["kernel"], attrs["strides"], attrs["pads"]
    d = attrs.get("dilations", [1, 1])
    return (pool_output_size(x.shape[2], kh, s[0], p[0], p[2], d[0], attrs["ceil_mode"]),
            pool_output_size(x.shape[3], kw, s[1], p[1], p[3], d[1], attrs["ceil_mode"]))


def max_pool_indices(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """The flat index in X of each window's first maximum (padding never wins)."""
    x = ins[0]
    n, c, h, w = x.shape
    out_hw = _pool_out_hw(x, attrs)
    ext = _pool_padded_extent(x, attrs, out_hw)
    plane = np.arange(h * w).reshape(h, w) if not attrs["storage_order"] else np.arange(h * w).reshape(w, h).T
    flat = (np.arange(n * c).reshape(n, c, 1, 1) * (h * w) + plane).astype(np.float64)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), ext, -np.inf))
    ip = np.ascontiguousarray(_pad_nchw(flat, ext, -1.0))
    kernel, strides, dilations = tuple(attrs["kernel"]), attrs["strides"], attrs["dilations"]
    values = _windows(xp, kernel, strides, dilations, out_hw).reshape(n, c, *out_hw, -1)
    indices = _windows(ip, kernel, strides, dilations, out_hw).reshape(n, c, *out_hw, -1)
    first = values.argmax(axis=-1)[..., None]
    return np.take_along_axis(indices, first, axis=-1)[..., 0].astype(np.int64)


def max_pool(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    out_hw = _pool_out_hw(x, attrs)
    lowest = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min  # quant: i8/u8 too
    xp = np.ascontiguousarray(_pad_nchw(x, _pool_padded_extent(x, attrs, out_hw), lowest))
    win = _windows(xp, tuple(attrs["kernel"]), attrs["strides"], attrs["dilations"], out_hw)
    return win.max(axis=(4, 5)).astype(x.dtype)


def average_pool(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """count_include_pad counts the declared pads but never the ceil_mode overhang."""
    x = ins[0]
    out_hw = _pool_out_hw(x, attrs)
    ext = _pool_padded_extent(x, attrs, out_hw)
    xp = np.ascontiguousarray(_pad_nchw(x.astype(np.float64), ext, 0.0))
    dilations = attrs["dilations"]
    win = _windows(xp, tuple(attrs["kernel"]), attrs["strides"], dilations, out_hw)
    sums = win.sum(axis=(4, 5))
    pads = attrs["pads"]
    h, w = x.shape[2], x.shape[3]
    if attrs["count_include_pad"]:
        mask = _pad_nchw(np.zeros((1, 1, h, w)), pads, 0.0) + 1.0
    else:
        mask = _pad_nchw(np.ones((1, 1, h, w)), pads, 0.0)
    mask = np.ascontiguousarray(_pad_nchw(mask, [0, 0, ext[2] - pads[2], ext[3] - pads[3]], 0.0))
    counts = _windows(mask, tuple(attrs["kernel"]), attrs["strides"], dilations, out_hw).sum(axis=(4, 5))
    return (sums / counts).astype(x.dtype)


def batch_norm(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x, scale, bias, mean, var = ins
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = [a.astype(np.float64).reshape(shape) for a in (scale, bias, mean, var)]
    y = (x - f[2]) / np.sqrt(f[3] + attrs["epsilon"]) * f[0] + f[1]
    return y.astype(x.dtype)


def lrn(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    size = attrs["size"]
    c = x.shape[1]
    sq = x * x
    total = np.zeros_like(x)
    lo, hi = (size - 1) // 2, size // 2  # ONNX: floor((size-1)/2) before, ceil((size-1)/2) after
    for ch in range(c):
        total[:, ch] = sq[:, max(0, ch - lo):min(c, ch + hi + 1)].sum(axis=1)
    y = x / (attrs["bias"] + attrs["alpha"] / size * total) ** attrs["beta"]
    return y.astype(ins[0].dtype)


def softmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(ins[0].dtype)


def log_softmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    x = ins[0].astype(np.float64)
    shifted = x - x.max(axis=attrs["axis"], keepdims=True)
    return (shifted - np.log(np.exp(shifted).sum(axis=attrs["axis"], keepdims=True))).astype(ins[0].dtype)


def hardmax(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    """1 at the first maximum along the axis, 0 elsewhere."""
    x, axis = ins[0], attrs["axis"]
    first = np.expand_dims(np.argmax(x, axis=axis), axis)
    return (np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)]) == first).astype(x.dtype)


def _logsumexp(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    m = x.max(axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.exp(x - m).sum(axis=axes, keepdims=True)) + m


REDUCERS: dict[str, Callable[[np.ndarray, tuple[int, ...]], np.ndarray]] = {
    "sum": lambda x, axes: x.sum(axis=axes, keepdims=True),
    "mean": lambda x, axes: x.mean(axis=axes, keepdims=True),
    "max": lambda x, axes: x.max(axis=axes, keepdims=True),
    "min": lambda x, axes: x.min(axis=axes, keepdims=True),
    "prod": lambda x, axes: x.prod(axis=axes, keepdims=True),
    "l1": lambda x, axes: np.abs(x).sum(axis=axes, keepdims=True),
    "l2": lambda x, axes: np.sqrt((x * x).sum(axis=axes, keepdims=True)),
    "logsum": lambda x, axes: np.log(x.sum(axis=axes, keepdims=True)),
    "logsumexp": _logsumexp,
    "sumsquare": lambda x, axes: (x * x).sum(axis=axes, keepdims=True),
}


def reduce(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    axes = tuple(attrs["axes"])
    with np.errstate(all="ignore"):
        y = REDUCERS[attrs["kind"]](ins[0].astype(np.float64), axes)
    if not attrs["keepdims"]:
        y = np.squeeze(y, axis=axes)
    return np.asarray(y).astype(ins[0].dtype)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Kernel:
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        a, b = ins
        if np.issubdtype(a.dtype, np.integer) and fn is np.divide:  # ONNX integer Div truncates
            return (np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)).astype(a.dtype)
        return fn(a, b).astype(a.dtype)
    return run


def _matmul(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
    a, b = ins
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)


def _f64(fn: Callable[..., np.ndarray]) -> Kernel:
    """An elementwise op computed in float64 (attrs passed by keyword), result in the input's dtype."""
    def run(ins: list[np.ndarray], attrs: dict[str, Any]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(x.astype(np.float64) for x in ins), **attrs)).astype(ins[0].dtype)
    return run


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


_ERF = np.vectorize(math.erf, otypes=[np.float64])

ELEMENTWISE_KERNELS: dict[str, Kernel] = {
    "Exp": _f64(np.exp), "Log": _f64(np.log), "Sqrt": _f64(np.sqrt), "Abs": _f64(np.abs), "Neg": _f64(np.negative),
    "Reciprocal": _f64(np.reciprocal), "Floor": _f64(np.floor), "Ceil": _f64(np.ceil),
    "Round": _f64(np.round),  # half to even, as ONNX
    "Sign": _f64(np.sign), "Erf": _f64(_ERF), "Softplus": _f64(_softplus),
    "Softsign": _f64(lambda x: x / (1 + np.abs(x))),
    "HardSigmoid": _f64(lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1)),
    "HardSwish": _f64(lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "Elu": _f64(lambda x, alpha: np.where(x < 0, alpha * np.expm1(x), x)),
    "Selu": _f64(lambda x, alpha, gamma: gamma * np.where(x <= 0, alpha * np.expm1(x), x)),
    "Celu": _f64(lambda x, alpha: np.maximum(0, x) + np.minimum(0, alpha * np.expm1(x / alpha))),
    "ThresholdedRelu": _f64(lambda x, alpha: np.where(x > alpha, x, 0.0)),
    "Mish": _f64(lambda x: x * np.tanh(_softplus(x))),
    "Gelu": _f64(lambda x: 0.5 * x * (1 + _ERF(x / math.sqrt(2)))),
    "GeluTanh": _f64(lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))),
    "Sin": _f64(np.sin), "Cos": _f64(np.cos), "Tan": _f64(np.tan), "Atan": _f64(np.arctan),
    "Asin": _f64(np.arcsin), "Acos": _f64(np.arccos), "Sinh": _f64(np.sinh), "Cosh": _f64(np.cosh),
    "Asinh": _f64(np.arcsinh), "Acosh": _f64(np.arccosh), "Atanh": _f64(np.arctanh),
    "Pow": _f64(np.power), "Min": _f64(np.minimum), "Max": _f64(np.maximum),
    "PRelu": _f64(lambda x, slope: np.where(x < 0, x * slope, x)), "Mod": _f64(np.fmod),
}

def slice_(ins: list[np.ndarray], a: dict) -> np.ndarray:
    """Normalized Slice: indices start, start + step, ... short of end (end -1 with a negative step:
    through index 0)."""
    x = ins[0]
    for axis, (start, end, step) in enumerate(zip(a["starts"], a["ends"], a["steps"])):
        x = np.take(x, np.arange(start, end, step, dtype=np.int64), axis=axis)
    return x


KERNELS: dict[str, Kernel] = {
    **ELEMENTWISE_KERNELS,
    "Conv": conv,
    "MatMul": _matmul,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(np.divide),
    "Relu": lambda ins, a: np.maximum(ins[0], 0).astype(ins[0].dtype),
    "Sigmoid": lambda ins, a: (1.0 / (1.0 + np.exp(-ins[0].astype(np.float64)))).astype(ins[0].dtype),
    "Tanh": lambda ins, a: np.tanh(ins[0]),
    "RationalSigmoid": lambda ins, a: rational_math.rational_sigmoid(ins[0]).astype(ins[0].dtype),
    "RationalTanh": lambda ins, a: rational_math.rational_tanh(ins[0]).astype(ins[0].dtype),
    "LeakyRelu": lambda ins, a: np.where(ins[0] >= 0, ins[0], ins[0] * a["alpha"]).astype(ins[0].dtype),
    "Clip": lambda ins, a: np.minimum(np.maximum(ins[0], a["min"]), a["max"]).astype(ins[0].dtype),
    "MaxPool": max_pool,
    "MaxPoolIndices": max_pool_indices,
    "AveragePool": average_pool,
    "GlobalAveragePool": lambda ins, a: ins[0].mean(axis=tuple(range(2, ins[0].ndim)), keepdims=True,
                                                    dtype=np.float64).astype(ins[0].dtype),
    "BatchNormalization": batch_norm,
    "LRN": lrn,
    "Concat": lambda ins, a: np.concatenate(ins, axis=a["axis"]),
    "Reshape": lambda ins, a: ins[0].reshape(a["shape"]),
    "Transpose": lambda ins, a: np.transpose(ins[0], a["perm"]),
    "Slice": slice_,
    "Softmax": softmax,
    "LogSoftmax": log_softmax,
    "Hardmax": hardmax,
    "Reduce": reduce,
    **LOGIC_KERNELS,
    **QUANT_KERNELS,
    "Gather": indexing_ops.gather,
    "GatherElements": indexing_ops.gather_elements,
    "GatherND": indexing_ops.gather_nd,
    "ScatterElements": indexing_ops.scatter_elements,
    "ScatterND": indexing_ops.scatter_nd,
    "Expand": indexing_ops.expand,
    **RESIZE_PAD_KERNELS,
    **RECURRENT_KERNELS,
    **CONVT_KERNELS,
    **QSOFTMAX_KERNELS,
    **QLOOKUP_KERNELS,
    **MISC_KERNELS,
    **DIM_VALUES_KERNELS,
    **CONTROL_FLOW_KERNELS,
    "ReduceRuntimeAxes": rt_reduce_reference,
    **DATADEP_KERNELS,
    "ResizeRuntime": rt_resize_reference,
    **NMS_KERNELS,
    **STRING_KERNELS,
}


def run_node(node: Node, lookup: Callable[[Value], np.ndarray]) -> np.ndarray:
    """One node's result, with its fused chain applied; `lookup` gives any other value's array."""
    result = KERNELS[node.op]([lookup(v) for v in node.inputs], node.attrs)
    if not node.fused:
        return result
    from iree_py.ir.fused import root_result
    chain = {id(root_result(node)): result}
    for step in node.fused:
        args = [chain[id(v)] if id(v) in chain else lookup(v) for v in step.inputs]
        chain[id(step.outputs[0])] = KERNELS[step.op](args, step.attrs)
    return chain[id(node.fused[-1].outputs[0])]


def evaluate(graph: Graph, inputs: dict[str, np.ndarray] | list[np.ndarray]) -> list[np.ndarray]:
    """Run the graph with numpy; inputs by name or in order. Returns outputs in order.
    A graph with symbolic dims runs on any sizes: see reference_symbolic.py."""
    if isinstance(inputs, dict):
        inputs = [inputs[v.name] for v in graph.inputs]
    if has_symbols(graph):
        return evaluate_symbolic(graph, inputs, run_node)
    env: dict[int, np.ndarray] = {}
    for v, array in zip(graph.inputs, inputs, strict=True):
        env[id(v)] = np.asarray(array, dtype=v.type.dtype.numpy).reshape(v.type.shape)

    def lookup(v: Value) -> np.ndarray:
        return v.const if v.is_const else env[id(v)]

    for node in graph.nodes:
        result = run_node(node, lookup)
        if not isinstance(result, list):
            env[id(node.outputs[0])] = result
            continue
        for out, array in zip(node.outputs, result, strict=True):  # control flow: one array per result
            env[id(out)] = array
    return [lookup(v) for v in graph.outputs]

"""THE table of normalized ops: op name -> attribute names and shape/type rule.

The frontend emits only these ops, the verifier checks nodes against them and codegen implements
exactly them. A shape rule takes the input types and the attributes and returns the output types,
or raises ValueError with what was wrong (callers add the node name).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from iree_py.ir import indexing_ops
from iree_py.ir.ops_control_flow import CONTROL_FLOW_OP_DEFS
from iree_py.ir.ops_logic import LOGIC_OP_DEFS
from iree_py.ir.ops_misc import MISC_OP_DEFS
from iree_py.ir.ops_convt import CONVT_OP_DEFS
from iree_py.ir.ops_dims import DIM_VALUES_OP_DEFS
from iree_py.ir.ops_quant import QUANT_OP_DEFS
from iree_py.ir.ops_qlookup import QLOOKUP_OP_DEFS
from iree_py.ir.ops_qsoftmax import QSOFTMAX_OP_DEFS
from iree_py.ir.ops_resize_pad import RESIZE_PAD_OP_DEFS
from iree_py.ir.ops_state import STATE_OP_DEFS
from iree_py.ir.ops_recurrent import RECURRENT_OP_DEFS
from iree_py.ir.ops_rt_reduce import RT_REDUCE_OP_DEFS
from iree_py.ir.ops_rt_resize import RT_RESIZE_OP_DEFS
from iree_py.ir.ops_datadep import DATADEP_OP_DEFS
from iree_py.ir.ops_nms import NMS_OP_DEFS
from iree_py.ir.ops_sequence import SEQUENCE_OP_DEFS
from iree_py.ir.ops_strings import STRING_OP_DEFS
from iree_py.ir.dim_checks import at_least, broadcast_shapes, product, require_equal
from iree_py.ir.opdef import ANY_DTYPE, OpDef, SymbolicShapeError, pool_output_dim, pool_rule
from iree_py.ir.ops_logic import FLOAT_DTYPES, INT_DTYPES, NUMERIC_DTYPES, SINGLE_HALF_DTYPES
from iree_py.ir.symbols import Expr, call, dim
from iree_py.ir.types import Dim, DType, TensorType


def _attr_dim(x: Any, what: str) -> Dim:
    """An attribute entry that is a size: an int (numpy ints too) or an Expr over symbols."""
    if isinstance(x, Expr):
        return dim(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{what} entry {x!r} is not an int or a symbolic dim")
    return int(x)


def _static_operand(t: TensorType, what: str) -> tuple[int, ...]:
    """An operand that must be static (weights): ValueError naming it otherwise."""
    if not t.is_static:
        raise ValueError(f"{what} {t} must have static dims")
    return tuple(int(d) for d in t.shape)


def _same(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    return [inputs[0]]


def _broadcast(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs
    if a.dtype != b.dtype:
        raise ValueError(f"operand dtypes differ: {a} and {b}")
    try:
        shape = broadcast_shapes([a.shape, b.shape], "broadcast operands")
    except ValueError as e:
        raise ValueError(f"shapes {a} and {b} do not broadcast ({e})") from None
    return [TensorType(a.dtype, shape)]


def _conv(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x, w = inputs[0].shape, _static_operand(inputs[1], "Conv weights")
    if len(x) != 4 or len(w) != 4:
        raise ValueError(f"Conv wants X rank 4 and W rank 4, got {inputs[0]} and {inputs[1]}")
    group = attrs["group"]
    try:
        require_equal(x[1], w[1] * group, "Conv input channels")
    except ValueError:
        raise ValueError(f"input channels {x[1]} != weight channels {w[1]} x group {group}") from None
    if w[0] % group:
        raise ValueError(f"output channels {w[0]} not divisible by group {group}")
    if len(inputs) == 3 and inputs[2].shape != (w[0],):
        raise ValueError(f"bias {inputs[2]} should be [{w[0]}]")
    (sh, sw), (pt, pl, pb, pr), (dh, dw) = attrs["strides"], attrs["pads"], attrs["dilations"]
    oh = pool_output_dim(x[2], w[2], sh, pt, pb, dh, 0)
    ow = pool_output_dim(x[3], w[3], sw, pl, pr, dw, 0)
    return [TensorType(inputs[0].dtype, (x[0], w[0], oh, ow))]


def _matmul(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    a, b = inputs[0].shape, inputs[1].shape
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"MatMul operands must have rank >= 2, got {inputs[0]} and {inputs[1]}")
    try:
        require_equal(a[-1], b[-2], "MatMul inner dims")
    except ValueError:
        raise ValueError(f"MatMul inner dims differ: {inputs[0]} x {inputs[1]}") from None
    try:
        batch = broadcast_shapes([a[:-2], b[:-2]], "MatMul batch dims")
    except ValueError:
        raise ValueError(f"MatMul batch dims do not broadcast: {inputs[0]} x {inputs[1]}") from None
    return [TensorType(inputs[0].dtype, (*batch, a[-2], b[-1]))]


def _global_pool(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) < 3:
        raise ValueError(f"GlobalAveragePool wants rank >= 3, got {inputs[0]}")
    return [TensorType(inputs[0].dtype, (x[0], x[1], *([1] * (len(x) - 2))))]


def _batchnorm(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    if len(x) < 2:
        raise ValueError(f"BatchNormalization wants rank >= 2, got {inputs[0]}")
    for t in inputs[1:]:
        if t.rank != 1:
            raise ValueError(f"BatchNormalization parameter {t} should be [{x[1]}]")
        require_equal(t.shape[0], x[1], f"BatchNormalization parameter {t} length == channels")
    return [inputs[0]]


def _concat(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    axis = attrs["axis"]
    first = inputs[0].shape
    if not 0 <= axis < len(first):
        raise ValueError(f"axis {axis} out of range for {inputs[0]}")
    total: Dim = 0
    for k, t in enumerate(inputs):
        s = t.shape
        if t.dtype != inputs[0].dtype or len(s) != len(first):
            raise ValueError(f"Concat operand {t} does not match {inputs[0]} outside axis {axis}")
        for i, (a, b) in enumerate(zip(s, first)):
            if i != axis:
                try:
                    require_equal(a, b, f"Concat operand {k} axis {i} matches operand 0")
                except ValueError:
                    raise ValueError(f"Concat operand {t} does not match {inputs[0]} outside axis {axis}") from None
        total = dim(Expr.of(total) + s[axis])
    return [TensorType(inputs[0].dtype, (*first[:axis], total, *first[axis + 1:]))]


def _dropped_dims(source: tuple[Dim, ...], shape: tuple[Dim, ...]) -> list[tuple[int, Dim]] | None:
    """(axis, dim) of each dim of `source` that `shape` leaves out, when `shape` is `source` with
    some dims dropped and others 1 inserted (a Squeeze, an Unsqueeze); None otherwise."""
    kept = [d for d in shape if d != 1]
    dropped, at = [], 0
    for axis, d in enumerate(source):
        if at < len(kept) and d == kept[at]:
            at += 1
        elif d != 1:
            dropped.append((axis, d))
    return dropped if at == len(kept) else None


def _reshape(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    shape = tuple(_attr_dim(d, "Reshape shape") for d in attrs["shape"])
    if any(isinstance(d, int) and d < 0 for d in shape):
        raise ValueError(f"Reshape shape {list(shape)} must be fully resolved")
    source = inputs[0].shape
    dropped = _dropped_dims(source, shape)
    try:
        if dropped is not None and all(not isinstance(d, int) for _, d in dropped):
            for axis, d in dropped:  # a Squeeze of dims not known to be 1: check each is 1 at run time
                require_equal(d, 1, f"dim {axis} of the input, which the reshape drops")
        else:
            require_equal(product(shape), inputs[0].element_count, "Reshape element count")
    except ValueError:
        raise ValueError(f"cannot reshape {inputs[0]} to {list(shape)}") from None
    return [TensorType(inputs[0].dtype, shape)]


def _transpose(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    perm = list(attrs["perm"])
    if sorted(perm) != list(range(len(x))):
        raise ValueError(f"perm {perm} is not a permutation of {len(x)} axes")
    return [TensorType(inputs[0].dtype, tuple(x[p] for p in perm))]


def slice_length(dim: int, start: int, end: int, step: int) -> int:
    """Elements a normalized slice start:end:step takes along an axis of size dim (docs/ir.md)."""
    if step > 0:
        if not 0 <= start <= end <= dim:
            raise ValueError(f"step {step} wants 0 <= start {start} <= end {end} <= dim {dim}")
        return -(-(end - start) // step)
    if step < 0:
        if not -1 <= end <= start < dim and not (start == end == -1):
            raise ValueError(f"step {step} wants -1 <= end {end} <= start {start} < dim {dim}")
        return -(-(start - end) // -step)
    raise ValueError("step 0 is not allowed")


def _slice(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    starts, ends, steps = (list(attrs[k]) for k in ("starts", "ends", "steps"))
    if not len(starts) == len(ends) == len(steps) == len(x):
        raise ValueError(f"Slice starts {starts}, ends {ends}, steps {steps} must each have one entry per axis of "
                         f"{inputs[0]}")
    shape = []
    for axis, (size, start, end, step) in enumerate(zip(x, starts, ends, steps)):
        try:
            shape.append(slice_dim(size, _attr_dim(start, "Slice start"), _attr_dim(end, "Slice end"), int(step)))
        except ValueError as e:
            raise ValueError(f"Slice axis {axis} of {inputs[0]}: {e}") from None
    return [TensorType(inputs[0].dtype, tuple(shape))]


def slice_dim(size: Dim, start: Dim, end: Dim, step: int) -> Dim:
    """slice_length for a dim or bounds that may be symbolic. A positive step clamps start and end to
    the axis (min Exprs); the bounds' order (and a negative step's start inside the axis) becomes a
    run-time check."""
    if all(isinstance(d, int) for d in (size, start, end)):
        return slice_length(size, start, end, step)
    if step > 0:
        if isinstance(start, int) and start < 0 or isinstance(end, int) and end < 0:
            raise ValueError(f"step {step} wants 0 <= start {start} <= end {end}")
        first = start if start == 0 else dim(call("min", start, size))
        last = dim(call("min", end, size))
        if isinstance(start, int) and isinstance(end, int):
            if start > end:
                raise ValueError(f"step {step} wants start {start} <= end {end}")
        else:  # clamping keeps int bounds in order, not symbolic ones
            at_least(last, first, f"slice end {end} >= start {start} on an axis of {size}")
        return dim(call("ceildiv", Expr.of(last) - first, step))
    if step < 0:
        if isinstance(end, int) and end < -1:
            raise ValueError(f"step {step} wants -1 <= end {end}")
        at_least(Expr.of(size) - 1, start, f"slice start {start} < axis size {size}")
        at_least(start, end, f"slice start {start} >= end {end}")
        return dim(call("ceildiv", Expr.of(start) - end, -step))
    raise ValueError("step 0 is not allowed")


def _softmax(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    if not 0 <= attrs["axis"] < inputs[0].rank:
        raise ValueError(f"axis {attrs['axis']} out of range for {inputs[0]}")
    return [inputs[0]]


REDUCE_KINDS = ("sum", "mean", "max", "min", "prod", "l1", "l2", "logsum", "logsumexp", "sumsquare")


def _reduce(inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    x = inputs[0].shape
    axes = list(attrs["axes"])
    if attrs["kind"] not in REDUCE_KINDS:
        raise ValueError(f"Reduce kind {attrs['kind']!r} is not one of {list(REDUCE_KINDS)}")
    if not axes or axes != sorted(set(axes)) or not all(0 <= a < len(x) for a in axes):
        raise ValueError(f"Reduce axes {axes} must be sorted, unique, non-empty and in range for {inputs[0]}")
    if attrs["keepdims"] not in (0, 1):
        raise ValueError(f"Reduce keepdims must be 0 or 1, got {attrs['keepdims']!r}")
    if attrs["keepdims"]:
        shape = tuple(1 if i in axes else d for i, d in enumerate(x))
    else:
        shape = tuple(d for i, d in enumerate(x) if i not in axes)
    return [TensorType(inputs[0].dtype, shape)]


_DEFS = [
    OpDef("Conv", ("dilations", "group", "pads", "strides"), 2, 3, _conv),
    OpDef("MatMul", (), 2, 2, _matmul, dtypes=frozenset({DType.f32, DType.f64})),  # f64: static, no epilogue
    *(OpDef(op, (), 2, 2, _broadcast, elementwise=True, dtypes=NUMERIC_DTYPES) for op in ("Add", "Sub", "Mul", "Div")),
    OpDef("Relu", (), 1, 1, _same, elementwise=True, dtypes=NUMERIC_DTYPES),
    OpDef("Sigmoid", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("Tanh", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    # onnxruntime's rational approximations (docs/ir.md): ONNX Sigmoid and Tanh import as these.
    OpDef("RationalSigmoid", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("RationalTanh", (), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("LeakyRelu", ("alpha",), 1, 1, _same, elementwise=True, dtypes=SINGLE_HALF_DTYPES),
    OpDef("Clip", ("max", "min"), 1, 1, _same, elementwise=True, dtypes=NUMERIC_DTYPES),
    *(OpDef(op, attrs, 1, 1, _same, elementwise=True,
            dtypes=NUMERIC_DTYPES if op in ("Abs", "Neg", "Sign") else
            FLOAT_DTYPES if op in ("Sqrt", "Floor", "Ceil", "Exp", "Log", "Reciprocal") else SINGLE_HALF_DTYPES)
      for op, attrs in (
        ("Exp", ()), ("Log", ()), ("Sqrt", ()), ("Abs", ()), ("Neg", ()), ("Reciprocal", ()), ("Floor", ()),
        ("Ceil", ()), ("Round", ()), ("Sign", ()), ("Erf", ()), ("Softplus", ()), ("Softsign", ()),
        ("HardSigmoid", ("alpha", "beta")), ("HardSwish", ()), ("Elu", ("alpha",)), ("Selu", ("alpha", "gamma")),
        ("Celu", ("alpha",)), ("ThresholdedRelu", ("alpha",)), ("Mish", ()), ("Gelu", ()), ("GeluTanh", ()),
        ("Sin", ()), ("Cos", ()), ("Tan", ()), ("Atan", ()), ("Asin", ()), ("Acos", ()),
        ("Sinh", ()), ("Cosh", ()), ("Asinh", ()), ("Acosh", ()), ("Atanh", ()))),
    *(OpDef(op, (), 2, 2, _broadcast, elementwise=True,
            dtypes=NUMERIC_DTYPES if op in ("Min", "Max", "Mod") else
            FLOAT_DTYPES | INT_DTYPES if op == "Pow" else SINGLE_HALF_DTYPES)
      for op in ("Pow", "Min", "Max", "PRelu", "Mod")),
    OpDef("MaxPool", ("ceil_mode", "dilations", "kernel", "pads", "strides"), 1, 1, pool_rule,
          dtypes=frozenset({DType.f32, DType.i8, DType.u8})),  # quant: max commutes with the affine map
    # The Indices output of ONNX MaxPool: the flat index in X of each window's first maximum
    # (storage_order 0: row-major over N, C, H, W; 1: H and W swapped, column-major per plane).
    OpDef("MaxPoolIndices", ("ceil_mode", "dilations", "kernel", "pads", "storage_order", "strides"), 1, 1,
          lambda inputs, attrs: [TensorType(DType.i64, t.shape) for t in pool_rule(inputs, attrs)]),
    OpDef("AveragePool", ("ceil_mode", "count_include_pad", "dilations", "kernel", "pads", "strides"), 1, 1, pool_rule),
    OpDef("GlobalAveragePool", (), 1, 1, _global_pool),
    OpDef("BatchNormalization", ("epsilon",), 5, 5, _batchnorm),
    OpDef("LRN", ("alpha", "beta", "bias", "size"), 1, 1, _same),
    OpDef("Concat", ("axis",), 1, None, _concat, dtypes=ANY_DTYPE),
    OpDef("Reshape", ("shape",), 1, 1, _reshape, dtypes=ANY_DTYPE),
    OpDef("Transpose", ("perm",), 1, 1, _transpose, dtypes=ANY_DTYPE),
    OpDef("Slice", ("ends", "starts", "steps"), 1, 1, _slice, dtypes=ANY_DTYPE),
    OpDef("Softmax", ("axis",), 1, 1, _softmax, dtypes=frozenset({DType.f32, DType.f64})),  # f64: static only
    OpDef("LogSoftmax", ("axis",), 1, 1, _softmax, dtypes=frozenset({DType.f32, DType.f64})),
    OpDef("Hardmax", ("axis",), 1, 1, _softmax),
    OpDef("Reduce", ("axes", "keepdims", "kind"), 1, 1, _reduce,
          dtypes=frozenset({DType.f32, DType.f64})),  # f64: static shapes only (reduce_f64.py)
    *LOGIC_OP_DEFS,
    *QUANT_OP_DEFS,
    OpDef("Gather", ("axis",), 2, 2, indexing_ops.gather_rule, dtypes=ANY_DTYPE),
    OpDef("GatherElements", ("axis",), 2, 2, indexing_ops.gather_elements_rule, dtypes=ANY_DTYPE),
    OpDef("GatherND", ("batch_dims",), 2, 2, indexing_ops.gather_nd_rule, dtypes=ANY_DTYPE),
    OpDef("ScatterElements", ("axis", "reduction"), 3, 3, indexing_ops.scatter_elements_rule, dtypes=ANY_DTYPE),
    OpDef("ScatterND", ("reduction",), 3, 3, indexing_ops.scatter_nd_rule, dtypes=ANY_DTYPE),
    OpDef("Expand", ("shape",), 1, 1, indexing_ops.expand_rule, dtypes=ANY_DTYPE),
    *RESIZE_PAD_OP_DEFS,
    *RECURRENT_OP_DEFS,
    *CONVT_OP_DEFS,
    *QSOFTMAX_OP_DEFS,
    *QLOOKUP_OP_DEFS,
    *STATE_OP_DEFS,
    *MISC_OP_DEFS,
    *DIM_VALUES_OP_DEFS,
    *CONTROL_FLOW_OP_DEFS,
    *RT_REDUCE_OP_DEFS,
    *DATADEP_OP_DEFS,
    *RT_RESIZE_OP_DEFS,
    *NMS_OP_DEFS,
    *SEQUENCE_OP_DEFS,
    *STRING_OP_DEFS,
]

OPS: dict[str, OpDef] = {d.name: d for d in _DEFS}
ELEMENTWISE_OPS = frozenset(d.name for d in _DEFS if d.elementwise)


def infer_types(op: str, inputs: list[TensorType], attrs: dict[str, Any]) -> list[TensorType]:
    """Output types of a normalized op; ValueError names what is wrong."""
    opdef = OPS.get(op)
    if opdef is None:
        raise ValueError(f"unknown op {op}")
    if len(inputs) < opdef.min_inputs or (opdef.max_inputs is not None and len(inputs) > opdef.max_inputs):
        raise ValueError(f"{op} takes {opdef.min_inputs}..{opdef.max_inputs or 'any'} inputs, got {len(inputs)}")
    if sorted(attrs) != sorted(opdef.attrs):
        raise ValueError(f"{op} attributes should be {sorted(opdef.attrs)}, got {sorted(attrs)}")
    try:
        return opdef.rule(inputs, attrs)
    except SymbolicShapeError as e:
        raise ValueError(f"{op} has no symbolic shape rule: {e}") from None


def is_float32(t: TensorType) -> bool:
    return t.dtype == DType.f32

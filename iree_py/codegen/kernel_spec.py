"""What codegen is asked to build: one KernelSpec per dispatch region.

The compiler turns each dispatch region of the graph into a KernelSpec; a backend turns a list of
KernelSpecs into one executable per target (iree_py/codegen/llvm/ for CPUs). Shapes are static in
this version; kernels are specialized to them.

Bindings of a kernel are `inputs` then `outputs`, in order. Every tensor is dense, row-major.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from iree_py.ir.symbols import Expr as SymExpr
from iree_py.ir.types import DType, TensorType

# Kernel kinds and the attributes each one reads (all static):
#   conv2d        inputs X[N,C,H,W], W[M,C/group,KH,KW], optional B[M]; attrs strides[2],
#                 pads[4] (top, left, bottom, right), dilations[2], group; output Y[N,M,OH,OW]
#   matmul        inputs A[..., M, K], B[..., K, N] (batch dims broadcast numpy-style); output [..., M, N]
#   elementwise   inputs broadcast numpy-style to the output shape; attrs["expr"] is an Expr
#                 (any dtype per step: ExprStep.dtype)
#   maxpool       X[N,C,H,W]; attrs kernel[2], strides[2], pads[4], dilations[2], ceil_mode (0/1)
#   maxpool_index as maxpool, plus storage_order (0/1); output i64: the flat index in X of each
#                 window's first maximum (ONNX MaxPool's Indices)
#   avgpool       as maxpool, plus count_include_pad (0/1)
#   globalavgpool X[N,C,...] -> Y[N,C,1,...]
#   softmax       attrs axis (>= 0): softmax over that one axis
#   logsoftmax    attrs axis (>= 0): x - max - log(sum(exp(x - max))) over that one axis
#   hardmax       attrs axis (>= 0): 1.0 at the first maximum along the axis, 0.0 elsewhere
#   reduce        attrs kind (sum mean max min prod l1 l2 logsum logsumexp sumsquare), axes (sorted,
#                 >= 0, one contiguous run once size-1 dims are dropped), keepdims (0/1)
#   lrn           X[N,C,...]; attrs size, alpha, beta, bias (ONNX LRN)
#   transpose     attrs perm
#   concat        attrs axis (>= 0); any number of inputs
#   resize        X (f32; any dtype with <= 1 tap per axis), index table (i32), weight table (f32); attrs
#                 sizes (output shape), taps (per axis, 0 = copied), extrapolation_value: gather-and-blend
#                 (iree_py/ir/resize_math.py)
#   pad           any dtype; attrs mode (constant reflect edge wrap symmetric), pads [begins..., ends...] (negative
#                 crops), value (constant mode)
#   argmax/argmin f32 in, i64 out; attrs axis, select_last_index (ties: first index, or last)
#   cumsum        f32, f64, i32, i64; attrs axis, exclusive, reverse (0/1)
#   cumprod       as cumsum, running products (ops_misc)
#   bitcast       any dtype -> attrs to, a dtype of the same size: the bytes unchanged (ops_misc)
#   topk          f32 in; attrs axis, k, largest, result ("values": f32 out, "indices": i64 out); sorted,
#                 ties: lower index first
#   (quantized kinds: the semantics and attributes of the IR ops, docs/ir.md "Quantized ops"; maxpool also
#   takes i8/u8)
#   quantize      X f32 -> i8/u8; attrs axis (-1 per tensor), scale[], zero_point[], dtype, rounding
#   dequantize    X i8/u8/i32 -> f32; attrs axis, scale[], zero_point[]
#   qconv         as conv2d on i8/u8 X, W with optional i32 bias[M], plus the requantization attrs
#                 (x/w/y_zero_point, out_dtype, act_min, act_max, requant, multiplier, shift, scale);
#                 requant "none" (ConvInteger): the int32 sums are the i32 output. Attrs operands (optional)
#                 name the bindings: "x", "w", "bias", "x_zero_point", "w_zero_point" (run-time zero points,
#                 1-D, replacing the attributes; codegen/llvm/requant.py). Dims of X / the output may be symbolic
#   qmatmul       A[..., M, K] i8/u8, B[K, N] or B[..., K, N] (A's batch dims) i8/u8, optional i32 bias[N]; the
#                 requantization attrs and operands as qconv (MatMulInteger: x_zero_point per tensor or per row)
#   qadd          TFLite int8 ADD of two broadcasting i8/u8 inputs (attrs as the QAdd op)
#   qavgpool      as avgpool on i8/u8 with TFLite's integer rounding, plus act_min, act_max
#   qconv_dot     qconv with one group and weight zero point 0 whose weight is packed W'[Mp, Kp]
#                 (codegen/llvm/qconv_packing.py); extra attrs weight_shape (M, C, KH, KW), dot, dot_bytes, x_offset,
#                 w_sum[M] (the correction is x_zp * w_sum[m]; x_zp an attribute or a binding)
#   qdwconv       qconv with group = C = M (depthwise, multiplier 1): a kernel per channel plane
#   gather        inputs data, indices (i32/i64); attrs axis: out[a, i, c] = data[a, idx[i], c]
#   gather_elements inputs data, indices (same rank); attrs axis: out[p] = data[p, p[axis] = idx[p]]
#   gather_nd     inputs data, indices [..., k]; attrs batch_dims (ONNX GatherND)
#                 (gathers: negative indices wrap; an index still out of range fails the dispatch, status 3)
#   scatter_elements inputs data, indices, updates; attrs axis, reduction (none add mul max min)
#   scatter_nd    inputs data, indices [..., k], updates; attrs reduction (ONNX ScatterND)
#                 (scatters: out = data, then updates applied in order; an index out of range fails, status 3)
#   expand        attrs shape: the input broadcast numpy-style to shape
#   lstm/gru/rnn  inputs X[seq,batch,in], W, R, B, sequence_lens (i32), initial_h (lstm: initial_c, P): the IR
#                 ops LSTM/GRU/RNN (docs/ir.md "Recurrent ops"), all time steps in one dispatch; attrs direction,
#                 hidden_size, activations, activation_alpha/beta, clip, result (Y, Y_h, Y_c: the one output),
#                 input_forget (lstm), linear_before_reset (gru)
#   qlstm         inputs XW [dirs,seq,batch,4H] f32, R [dirs,H,4H] i8/u8, R_scale [dirs,4H], B, sequence_lens (i32),
#                 initial_h, initial_c, P: the IR op QLSTM (onnxruntime's DynamicQuantizeLSTM recurrence, docs/ir.md);
#                 attrs as lstm plus r_zero_point (per direction), finished_as_zero
#   conv_transpose X[N,C,*in] (1..3 spatial axes), W[C,M/group,*kernel], optional B[M]; attrs strides, dilations,
#                 pads [begins..., ends...] (crop of the full result; negative end: extended), group
#   qsoftmax      X[..., D] i8/u8 -> i8/u8: TFLite's fixed-point SOFTMAX over the last axis (attrs as the
#                 QSoftmax op: input_multiplier, input_left_shift, diff_min, out_dtype)
#   qlookup       X i8/u8 -> i8/u8: y = table[x & 0xFF]; attrs table (256 ints), out_dtype (TFLite's int8 LUTs)
#   lppool        as maxpool (dilations too) plus p (integer >= 1): (sum of |x|^p over the window)^(1/p)
#   qconv_transpose as conv_transpose (2-D) on i8/u8 X, W with optional i32 bias[M], plus the requantization attrs
#   (kinds added with dynamic shapes; their IR ops document the semantics: ir/ops_rt_resize.py, ops_datadep.py,
#   ops_nms.py)
#   resize_rt     X, scales f32[K], roi f32[2K]: Resize with coordinates and weights computed per output index
#   nonzero_count / unique_count  the count of a data-dependent result, as i64[1] (read into a symbol)
#   nonzero / unique              the result at its counted size (checks the count first)
#   nms_select / nms_output       NonMaxSuppression's selection (padded, 1-based) and its [n, 3] result
#   roi_align     X[N,C,H,W], rois[R,4], batch_indices[R]: ONNX RoiAlign (avg or max, both coordinate modes)
KERNEL_KINDS = (
    "conv2d", "matmul", "elementwise", "maxpool", "maxpool_index", "avgpool", "globalavgpool", "softmax",
    "logsoftmax", "hardmax", "reduce", "lrn", "transpose", "slice", "concat",
    # -- dtypes: entries below this line --
    # -- nn: entries below this line --
    # -- quant: entries below this line --
    "quantize", "dequantize", "qconv", "qmatmul", "qadd", "qavgpool",
    # -- indexing: entries below this line --
    "gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "expand",
    # -- resize_pad: entries below this line --
    "resize", "pad", "argmax", "argmin", "cumsum", "topk",
    # -- recurrent: entries below this line --
    "lstm", "gru", "rnn", "qlstm",
    # -- convt: entries below this line --
    "conv_transpose", "lppool", "qconv_transpose",
    # -- tflite_ops: entries below this line --
    "qsoftmax", "qlookup",
    # -- int8_perf: entries below this line --
    "qconv_dot", "qdwconv",
    # -- state: entries below this line --
    # -- dtypes2: entries below this line --
    # -- ops_misc: entries below this line --
    "cumprod", "bitcast",
    # -- rt_reduce: entries below this line --
    # reduce_rt: X f32 (any rank), mask i64[rank] (1 = reduced, known at run time) -> Y f32 over the kept axes;
    #            attrs kind (as reduce), keepdims (dynamic builder only: Y's dims are symbols)
    "reduce_rt",
    # -- rt_resize: entries below this line --
    "resize_rt",
    # -- rt_datadep: entries below this line --
    "nonzero_count", "nonzero", "unique_count", "unique",
    # -- nms: entries below this line --
    "nms_select", "nms_output", "roi_align",
    # -- strings: entries below this line --
    # string_equal: A, B packed strings (docs/strings.md) -> bool, numpy broadcasting; offsets checked first
    "string_equal",
)

# Elementwise ops an Expr or an epilogue may use, with the attributes they read.
# Gelu is the exact (erf) form, GeluTanh ONNX's approximate="tanh"; Round is half to even.
UNARY_OPS = {"Relu": (), "LeakyRelu": ("alpha",), "Sigmoid": (), "Tanh": (), "RationalSigmoid": (), "RationalTanh": (),
             "Clip": ("min", "max"),
             "Neg": (), "Exp": (), "Sqrt": (), "Abs": (),
             "Log": (), "Reciprocal": (), "Floor": (), "Ceil": (), "Round": (), "Sign": (), "Erf": (),
             "Softplus": (), "Softsign": (), "HardSigmoid": ("alpha", "beta"), "HardSwish": (), "Elu": ("alpha",),
             "Selu": ("alpha", "gamma"), "Celu": ("alpha",), "ThresholdedRelu": ("alpha",), "Mish": (),
             "Gelu": (), "GeluTanh": (),
             "Sin": (), "Cos": (), "Tan": (), "Atan": (), "Asin": (), "Acos": (),
             "Sinh": (), "Cosh": (), "Asinh": (), "Acosh": (), "Atanh": ()}
# PRelu(x, slope); Mod is C fmod (ONNX fmod=1); Min/Max are the two-operand forms.
BINARY_OPS = ("Add", "Sub", "Mul", "Div", "Pow", "Min", "Max", "PRelu", "Mod")

# An Expr (the elementwise kernel, every dtype: codegen/llvm/elementwise_typed.py) also takes these:
# Cast converts to the step's dtype; comparisons give bool; And/Or/Xor/Not take bools; FloorMod has
# the divisor's sign; Where(cond, x, y); BitwiseAnd/Or/Xor take integers.
EXPR_UNARY_OPS = {**UNARY_OPS, "Cast": (), "Not": (), "IsNaN": (), "IsInf": ("detect_negative", "detect_positive")}
EXPR_BINARY_OPS = (*BINARY_OPS, "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Xor",
                   "ShiftLeft", "ShiftRight", "FloorMod", "BitwiseAnd", "BitwiseOr", "BitwiseXor")
EXPR_TERNARY_OPS = ("Where",)


@dataclass(frozen=True)
class ExprStep:
    """One elementwise op. Arguments are ("in", i) for kernel input i or ("step", j) for the
    result of an earlier step j. `dtype`: the element type of the step's result (None: the
    dtype of its first argument); integer ops follow docs/ir.md, f16 steps compute in f32 and
    round to f16 only when stored or Cast."""

    op: str
    args: tuple[tuple[str, int], ...]
    attrs: tuple[tuple[str, float], ...] = ()
    dtype: DType | None = None


@dataclass(frozen=True)
class Expr:
    """A DAG of elementwise ops over the kernel's inputs; the last step is the output."""

    steps: tuple[ExprStep, ...]


@dataclass(frozen=True)
class EpilogueOp:
    """An elementwise op applied to a conv2d/matmul result before it is stored.

    Unary ops read attrs only. Binary ops combine the running value with kernel input `operand`:
    value = op(value, operand), or op(operand, value) when `operand_first`. `operand_kind` says how
    the operand lines up with the output:
      "scalar"  one element for the whole output
      "channel" one element per output channel (conv2d: axis 1 of [N,M,OH,OW]; matmul: the last axis, N)
      "full"    same shape as the output
    """

    op: str
    attrs: tuple[tuple[str, float], ...] = ()
    operand: int | None = None
    operand_kind: str | None = None
    operand_first: bool = False


@dataclass(frozen=True)
class KernelSpec:
    name: str                      # the entry point's symbol, unique within a module
    kind: str                      # one of KERNEL_KINDS
    inputs: tuple[TensorType, ...]
    outputs: tuple[TensorType, ...]
    attrs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    epilogue: tuple[EpilogueOp, ...] = ()
    source_nodes: tuple[str, ...] = ()  # source-model node names, for debug info
    source_ops: tuple[str, ...] = ()    # the IR op of each source node (same order; () if not known)


@dataclass(frozen=True)
class KernelInfo:
    """What the VM needs to dispatch a built kernel."""

    name: str
    # Static kernels: ints. Dynamic kernels (codegen/llvm/dynamic/): push constant i is the symbol
    # Expr kernel_symbols(spec)[i], and the grid and lengths may be Exprs over those symbols; the VM
    # evaluates them at each dispatch and the kernel's guard recomputes and checks them.
    workgroup_count: tuple[int | SymExpr, int | SymExpr, int | SymExpr]
    push_constants: tuple[int | SymExpr, ...]     # u32 values passed at every dispatch
    binding_min_lengths: tuple[int | SymExpr, ...]  # bytes, one per binding (inputs then outputs)


@dataclass(frozen=True)
class ExecutableBlob:
    """One linked kernel library for one architecture."""

    arch: str                      # "x86_64", "aarch64"
    code: bytes                    # elf: shared object, entry = irp_kernel_library_query; flat: memory image
    kernels: tuple[KernelInfo, ...]  # in entry-point order
    format: str = "elf"            # "elf" | "flat" (docs/microcontrollers.md)
    entry_offsets: tuple[int, ...] = ()  # flat: each kernel's offset in `code` (Thumb: | 1)

"""The ops edge models are made of (issue 4's list): every node test of these ops, in every opset and
dtype the installed onnx generates (`*_expanded` graphs excluded: they test other ops), must pass.
The runner prints their pass rate beside the overall one; tests/conformance guards that each such case is on the
expected-pass list."""
from __future__ import annotations

ELEMENTWISE_UNARY = (
    "Abs", "Neg", "Reciprocal", "Sqrt", "Exp", "Log", "Sign", "Not", "Round", "Floor", "Ceil", "IsNaN", "IsInf",
    "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "BitwiseNot")
ACTIVATIONS = (
    "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Gelu", "Mish", "Selu", "Elu",
    "Celu", "Softplus", "Softsign", "ThresholdedRelu")
ELEMENTWISE_BINARY = (
    "Add", "Sub", "Mul", "Div", "Mod", "Pow", "And", "Or", "Xor", "Equal", "Less", "LessOrEqual", "Greater",
    "GreaterOrEqual", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Min", "Max", "Mean", "Sum", "Where",
    "Clip", "Cast", "CastLike")
LINEAR = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum")
POOLS = ("MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool", "LpPool", "GlobalLpPool")
REDUCTIONS = (
    "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
    "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "TopK", "CumSum")
NORMALIZATIONS = ("BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization", "LRN",
                  "Softmax", "LogSoftmax", "Hardmax")
DATA_MOVEMENT = (
    "Resize", "Upsample", "Pad", "Slice", "Split", "Gather", "GatherElements", "GatherND", "Scatter",
    "ScatterElements", "ScatterND", "DepthToSpace", "SpaceToDepth", "Tile", "OneHot", "Trilu")

EDGE_OPS = frozenset(ELEMENTWISE_UNARY + ACTIVATIONS + ELEMENTWISE_BINARY + LINEAR + POOLS + REDUCTIONS
                     + NORMALIZATIONS + DATA_MOVEMENT)


def is_edge_case(name: str, op: str) -> bool:
    """Whether a node test (its name and tested op) belongs to the edge-op list."""
    return op in EDGE_OPS and not name.endswith("_expanded")

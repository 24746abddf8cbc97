"""The pass pipeline and the numpy reference on graphs with symbolic dims: an MLP with a dynamic
batch, a transformer-like block with dynamic batch and sequence, a conv net with dynamic H and W.
Each checks the printed graph after the default pipeline (golden text: the inferred symbolic types
and the fusion), and the reference at two sizes against plain numpy (float64 there; rtol 1e-4)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from iree_py.ir.build import NameTable, constant, make_node
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.reference import evaluate
from iree_py.ir.symbols import Expr
from iree_py.ir.text import parse_graph, print_graph
from iree_py.ir.types import DType, TensorType
from iree_py.ir.verifier import verify
from iree_py.passes.eliminate_dead_code import EliminateDeadCode
from iree_py.passes.pipeline import run_pipeline

RTOL, ATOL = 1e-4, 1e-5


class Builder:
    """Appends nodes typed by the shape rules; node names are the op and a counter."""

    def __init__(self, inputs: list[Value], seed: int = 0) -> None:
        self.inputs = inputs
        self.names = NameTable(v.name for v in inputs)
        self.nodes: list[Node] = []
        self.rng = np.random.default_rng(seed)
        self.weights: dict[str, np.ndarray] = {}

    def const(self, hint: str, array: np.ndarray) -> Value:
        v = constant(self.names, hint, np.asarray(array))
        self.weights[hint] = v.const
        return v

    def weight(self, hint: str, *shape: int) -> Value:
        return self.const(hint, (self.rng.standard_normal(shape) * 0.5).astype(np.float32))

    def __call__(self, op: str, inputs: list[Value], attrs: dict | None = None) -> Value:
        node = make_node(self.names, op, inputs, attrs, name=f"{op.lower()}_{len(self.nodes)}")
        self.nodes.append(node)
        return node.outputs[0]

    def graph(self, name: str, outputs: list[Value]) -> Graph:
        return Graph(name, self.inputs, outputs, self.nodes, [v.name for v in outputs])


def symbolic_input(name: str, dtype: DType, *shape: int | str) -> Value:
    return Value(name, TensorType(dtype, shape))


def _pipeline(graph: Graph) -> Graph:
    verify(graph)
    graph = run_pipeline(graph)
    text = print_graph(graph)
    assert print_graph(parse_graph(text)) == text  # symbolic types and attrs round-trip
    return graph


# ------------------------------------------------------------------------------------------ MLP

def mlp() -> tuple[Graph, dict[str, np.ndarray]]:
    x = symbolic_input("x", DType.f32, "batch", 6)
    b = Builder([x])
    h = b("Relu", [b("Add", [b("MatMul", [x, b.weight("w1", 6, 8)]), b.weight("b1", 8)])])
    y = b("Add", [b("MatMul", [h, b.weight("w2", 8, 3)]), b.weight("b2", 3)])
    return b.graph("mlp", [y]), b.weights


MLP_GOLDEN = """\
graph @mlp(%x: tensor<{batch}x6xf32>) -> (%add_4) {
  %w1 = const tensor<6x8xf32> dense<elided>
  %b1 = const tensor<8xf32> dense<elided>
  %w2 = const tensor<8x3xf32> dense<elided>
  %b2 = const tensor<3xf32> dense<elided>
  %matmul_0 = MatMul(%x, %w1) : tensor<{batch}x8xf32>  // name: "matmul_0"
  fused {
    %add_1 = Add(%matmul_0, %b1) : tensor<{batch}x8xf32>  // name: "add_1"
    %relu_2 = Relu(%add_1) : tensor<{batch}x8xf32>  // name: "relu_2"
  }
  %matmul_3 = MatMul(%relu_2, %w2) : tensor<{batch}x3xf32>  // name: "matmul_3"
  fused {
    %add_4 = Add(%matmul_3, %b2) : tensor<{batch}x3xf32>  // name: "add_4"
  }
  return %add_4
}
"""


def test_mlp_with_dynamic_batch_fuses_epilogues_and_runs_at_two_sizes():
    graph, w = mlp()
    graph = _pipeline(graph)
    assert print_graph(graph, elide_over=0) == MLP_GOLDEN
    rng = np.random.default_rng(1)
    for batch in (1, 5):
        x = rng.standard_normal((batch, 6)).astype(np.float32)
        want = np.maximum(x @ w["w1"] + w["b1"], 0) @ w["w2"] + w["b2"]
        (got,) = evaluate(graph, [x])
        assert got.shape == (batch, 3)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_mlp_at_batch_zero_gives_an_empty_result():
    graph, _ = mlp()
    (got,) = evaluate(_pipeline(graph), [np.zeros((0, 6), np.float32)])
    assert got.shape == (0, 3)


# ---------------------------------------------------------------------------- transformer block

HEADS, DIM = 2, 8


def transformer_block() -> tuple[Graph, dict[str, np.ndarray]]:
    x = symbolic_input("x", DType.f32, "b", "s", HEADS * DIM)
    mask = symbolic_input("mask", DType.bool, "b", "s")
    bld = Builder([x, mask], seed=2)
    bsym, ssym = Expr.of("b"), Expr.of("s")
    width = HEADS * DIM
    # LayerNorm from ReduceMean
    mean = bld("Reduce", [x], {"axes": [2], "keepdims": 1, "kind": "mean"})
    centered = bld("Sub", [x, mean])
    var = bld("Reduce", [bld("Mul", [centered, centered])], {"axes": [2], "keepdims": 1, "kind": "mean"})
    std = bld("Sqrt", [bld("Add", [var, bld.const("eps", np.array(1e-5, np.float32))])])
    ln = bld("Add", [bld("Mul", [bld("Div", [centered, std]), bld.weight("gamma", width)]), bld.weight("beta", width)])

    def heads(v: Value, perm: list[int]) -> Value:
        split = bld("Reshape", [v], {"shape": [bsym, ssym, HEADS, DIM]})
        return bld("Transpose", [split], {"perm": perm})

    q = heads(bld("MatMul", [ln, bld.weight("wq", width, width)]), [0, 2, 1, 3])   # b, h, s, d
    k = heads(bld("MatMul", [ln, bld.weight("wk", width, width)]), [0, 2, 3, 1])   # b, h, d, s
    v = heads(bld("MatMul", [ln, bld.weight("wv", width, width)]), [0, 2, 1, 3])
    scores = bld("Mul", [bld("MatMul", [q, k]), bld.const("scale", np.array(1 / math.sqrt(DIM), np.float32))])
    keep = bld("Expand", [bld("Reshape", [mask], {"shape": [bsym, 1, 1, ssym]})], {"shape": [bsym, HEADS, ssym, ssym]})
    masked = bld("Where", [keep, scores, bld.const("neg", np.array(-1e9, np.float32))])
    probs = bld("Softmax", [masked], {"axis": 3})
    merged = bld("Reshape", [bld("Transpose", [bld("MatMul", [probs, v])], {"perm": [0, 2, 1, 3]})],
                 {"shape": [bsym, ssym, width]})
    proj = bld("MatMul", [merged, bld.weight("wo", width, width)])
    half = bld.const("half", np.array(0.5, np.float32))
    erf = bld("Erf", [bld("Mul", [proj, bld.const("rsqrt2", np.array(1 / math.sqrt(2), np.float32))])])
    gelu = bld("Mul", [bld("Mul", [proj, half]), bld("Add", [erf, bld.const("one", np.array(1, np.float32))])])
    y = bld("Add", [gelu, x])
    return bld.graph("block", [y]), bld.weights


def transformer_numpy(x: np.ndarray, mask: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    x = x.astype(np.float64)
    b, s, width = x.shape
    centered = x - x.mean(axis=2, keepdims=True)
    ln = centered / np.sqrt((centered ** 2).mean(axis=2, keepdims=True) + 1e-5) * w["gamma"] + w["beta"]
    q, k, v = ((ln @ w[n]).reshape(b, s, HEADS, DIM).transpose(0, 2, 1, 3) for n in ("wq", "wk", "wv"))
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(DIM)
    scores = np.where(mask[:, None, None, :], scores, -1e9)
    e = np.exp(scores - scores.max(axis=3, keepdims=True))
    probs = e / e.sum(axis=3, keepdims=True)
    proj = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, width) @ w["wo"]
    erf = np.vectorize(math.erf)(proj / math.sqrt(2))
    return proj * 0.5 * (1 + erf) + x


BLOCK_GOLDEN = """\
graph @block(%x: tensor<{b}x{s}x16xf32>, %mask: tensor<{b}x{s}xbool>) -> (%add_33) {
  %eps = const tensor<f32> dense<elided>
  %gamma = const tensor<16xf32> dense<elided>
  %beta = const tensor<16xf32> dense<elided>
  %wq = const tensor<16x16xf32> dense<elided>
  %wk = const tensor<16x16xf32> dense<elided>
  %wv = const tensor<16x16xf32> dense<elided>
  %scale = const tensor<f32> dense<elided>
  %neg = const tensor<f32> dense<elided>
  %wo = const tensor<16x16xf32> dense<elided>
  %half = const tensor<f32> dense<elided>
  %rsqrt2 = const tensor<f32> dense<elided>
  %one = const tensor<f32> dense<elided>
  %reduce_0 = Reduce(%x) {axes = [2], keepdims = 1, kind = "mean"} : tensor<{b}x{s}x1xf32>  // name: "reduce_0"
  %sub_1 = Sub(%x, %reduce_0) : tensor<{b}x{s}x16xf32>  // name: "sub_1"
  %mul_2 = Mul(%sub_1, %sub_1) : tensor<{b}x{s}x16xf32>  // name: "mul_2"
  %reduce_3 = Reduce(%mul_2) {axes = [2], keepdims = 1, kind = "mean"} : tensor<{b}x{s}x1xf32>  // name: "reduce_3"
  %add_4 = Add(%reduce_3, %eps) : tensor<{b}x{s}x1xf32>  // name: "add_4"
  fused {
    %sqrt_5 = Sqrt(%add_4) : tensor<{b}x{s}x1xf32>  // name: "sqrt_5"
  }
  %div_6 = Div(%sub_1, %sqrt_5) : tensor<{b}x{s}x16xf32>  // name: "div_6"
  fused {
    %mul_7 = Mul(%div_6, %gamma) : tensor<{b}x{s}x16xf32>  // name: "mul_7"
    %add_8 = Add(%mul_7, %beta) : tensor<{b}x{s}x16xf32>  // name: "add_8"
  }
  %matmul_9 = MatMul(%add_8, %wq) : tensor<{b}x{s}x16xf32>  // name: "matmul_9"
  %reshape_10 = Reshape(%matmul_9) {shape = [{b}, {s}, 2, 8]} : tensor<{b}x{s}x2x8xf32>  // name: "reshape_10"
  %transpose_11 = Transpose(%reshape_10) {perm = [0, 2, 1, 3]} : tensor<{b}x2x{s}x8xf32>  // name: "transpose_11"
  %matmul_12 = MatMul(%add_8, %wk) : tensor<{b}x{s}x16xf32>  // name: "matmul_12"
  %reshape_13 = Reshape(%matmul_12) {shape = [{b}, {s}, 2, 8]} : tensor<{b}x{s}x2x8xf32>  // name: "reshape_13"
  %transpose_14 = Transpose(%reshape_13) {perm = [0, 2, 3, 1]} : tensor<{b}x2x8x{s}xf32>  // name: "transpose_14"
  %matmul_15 = MatMul(%add_8, %wv) : tensor<{b}x{s}x16xf32>  // name: "matmul_15"
  %reshape_16 = Reshape(%matmul_15) {shape = [{b}, {s}, 2, 8]} : tensor<{b}x{s}x2x8xf32>  // name: "reshape_16"
  %transpose_17 = Transpose(%reshape_16) {perm = [0, 2, 1, 3]} : tensor<{b}x2x{s}x8xf32>  // name: "transpose_17"
  %matmul_18 = MatMul(%transpose_11, %transpose_14) : tensor<{b}x2x{s}x{s}xf32>  // name: "matmul_18"
  fused {
    %mul_19 = Mul(%matmul_18, %scale) : tensor<{b}x2x{s}x{s}xf32>  // name: "mul_19"
  }
  %reshape_20 = Reshape(%mask) {shape = [{b}, 1, 1, {s}]} : tensor<{b}x1x1x{s}xbool>  // name: "reshape_20"
  %expand_21 = Expand(%reshape_20) {shape = [{b}, 2, {s}, {s}]} : tensor<{b}x2x{s}x{s}xbool>  // name: "expand_21"
  %where_22 = Where(%expand_21, %mul_19, %neg) : tensor<{b}x2x{s}x{s}xf32>  // name: "where_22"
  %softmax_23 = Softmax(%where_22) {axis = 3} : tensor<{b}x2x{s}x{s}xf32>  // name: "softmax_23"
  %matmul_24 = MatMul(%softmax_23, %transpose_17) : tensor<{b}x2x{s}x8xf32>  // name: "matmul_24"
  %transpose_25 = Transpose(%matmul_24) {perm = [0, 2, 1, 3]} : tensor<{b}x{s}x2x8xf32>  // name: "transpose_25"
  %reshape_26 = Reshape(%transpose_25) {shape = [{b}, {s}, 16]} : tensor<{b}x{s}x16xf32>  // name: "reshape_26"
  %matmul_27 = MatMul(%reshape_26, %wo) : tensor<{b}x{s}x16xf32>  // name: "matmul_27"
  %mul_30 = Mul(%matmul_27, %half) : tensor<{b}x{s}x16xf32>  // name: "mul_30"
  %mul_28 = Mul(%matmul_27, %rsqrt2) : tensor<{b}x{s}x16xf32>  // name: "mul_28"
  fused {
    %erf_29 = Erf(%mul_28) : tensor<{b}x{s}x16xf32>  // name: "erf_29"
    %add_31 = Add(%erf_29, %one) : tensor<{b}x{s}x16xf32>  // name: "add_31"
    %mul_32 = Mul(%mul_30, %add_31) : tensor<{b}x{s}x16xf32>  // name: "mul_32"
    %add_33 = Add(%mul_32, %x) : tensor<{b}x{s}x16xf32>  // name: "add_33"
  }
  return %add_33
}
"""


def test_transformer_block_types_fusion_and_reference_at_two_sizes():
    graph, w = transformer_block()
    graph = _pipeline(graph)
    assert print_graph(graph, elide_over=0) == BLOCK_GOLDEN
    fused = {n.name: [s.op for s in n.fused] for n in graph.nodes if n.fused}
    assert fused["matmul_18"] == ["Mul"]  # scores * scale: a scalar epilogue of the MatMul
    assert fused["mul_28"] == ["Erf", "Add", "Mul", "Add"]  # GELU and the residual
    rng = np.random.default_rng(3)
    for b, s in ((1, 5), (3, 2)):
        x = rng.standard_normal((b, s, HEADS * DIM)).astype(np.float32)
        mask = rng.random((b, s)) < 0.7
        mask[:, 0] = True
        (got,) = evaluate(graph, [x, mask])
        assert got.shape == (b, s, HEADS * DIM)
        np.testing.assert_allclose(got, transformer_numpy(x, mask, w), rtol=RTOL, atol=1e-4)


def test_transformer_block_rejects_a_mask_of_another_length():
    graph, _ = transformer_block()
    x = np.zeros((2, 5, HEADS * DIM), np.float32)
    with pytest.raises(ValueError, match=r"input %mask dim 1 \(s\) is 4 but another input gives s = 5"):
        evaluate(graph, [x, np.ones((2, 4), bool)])


# ------------------------------------------------------------------------------------- conv net

def conv_net(batchnorm: bool = False) -> tuple[Graph, dict[str, np.ndarray]]:
    x = symbolic_input("x", DType.f32, 2, 3, "h", "w")
    b = Builder([x], seed=4)
    c = b("Conv", [x, b.weight("cw", 4, 3, 3, 3), b.weight("cb", 4)],
          {"dilations": [1, 1], "group": 1, "pads": [1, 1, 1, 1], "strides": [2, 2]})
    if batchnorm:
        stats = [b.const(n, np.abs(b.rng.standard_normal(4)).astype(np.float32) + 0.5)
                 for n in ("scale", "bias", "mean", "var")]
        c = b("BatchNormalization", [c, *stats], {"epsilon": 1e-5})
    r = b("Relu", [c])
    p = b("MaxPool", [r], {"ceil_mode": 1, "dilations": [1, 1], "kernel": [2, 2], "pads": [0, 0, 0, 0],
                          "strides": [2, 2]})
    g = b("GlobalAveragePool", [p])
    f = b("Reshape", [g], {"shape": [2, 4]})
    y = b("MatMul", [f, b.weight("fc", 4, 5)])
    return b.graph("convnet", [y]), b.weights


def conv_numpy(x: np.ndarray, w: dict[str, np.ndarray]) -> np.ndarray:
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (x.shape[2] - 3) // 2 + 1, (x.shape[3] - 3) // 2 + 1
    y = np.zeros((x.shape[0], 4, oh, ow))
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = np.einsum("ncij,mcij->nm", x[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3], w["cw"])
    y = np.maximum(y + w["cb"][None, :, None, None], 0)
    ph, pw = -(-oh // 2), -(-ow // 2)  # ceil_mode: a last window may hang over the edge
    pooled = np.full((y.shape[0], 4, ph, pw), -np.inf)
    for i in range(ph):
        for j in range(pw):
            pooled[:, :, i, j] = y[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].max(axis=(2, 3))
    return pooled.mean(axis=(2, 3)) @ w["fc"]


CONV_GOLDEN = """\
graph @convnet(%x: tensor<2x3x{h}x{w}xf32>) -> (%matmul_5) {
  %cw = const tensor<4x3x3x3xf32> dense<elided>
  %cb = const tensor<4xf32> dense<elided>
  %fc = const tensor<4x5xf32> dense<elided>
  %conv_0 = Conv(%x, %cw, %cb) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [2, 2]} : tensor<2x4x{1 + floordiv(-1 + h, 2)}x{1 + floordiv(-1 + w, 2)}xf32>  // name: "conv_0"
  fused {
    %relu_1 = Relu(%conv_0) : tensor<2x4x{1 + floordiv(-1 + h, 2)}x{1 + floordiv(-1 + w, 2)}xf32>  // name: "relu_1"
  }
  %maxpool_2 = MaxPool(%relu_1) {ceil_mode = 1, dilations = [1, 1], kernel = [2, 2], pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<2x4x{ceildiv(1 + floordiv(-1 + h, 2), 2)}x{ceildiv(1 + floordiv(-1 + w, 2), 2)}xf32>  // name: "maxpool_2"
  %globalaveragepool_3 = GlobalAveragePool(%maxpool_2) : tensor<2x4x1x1xf32>  // name: "globalaveragepool_3"
  %reshape_4 = Reshape(%globalaveragepool_3) {shape = [2, 4]} : tensor<2x4xf32>  // name: "reshape_4"
  %matmul_5 = MatMul(%reshape_4, %fc) : tensor<2x5xf32>  // name: "matmul_5"
  return %matmul_5
}
"""


def test_conv_net_with_dynamic_height_and_width():
    graph, w = conv_net()
    graph = _pipeline(graph)
    assert print_graph(graph, elide_over=0) == CONV_GOLDEN
    rng = np.random.default_rng(5)
    for h, wd in ((9, 12), (4, 7)):
        x = rng.standard_normal((2, 3, h, wd)).astype(np.float32)
        (got,) = evaluate(graph, [x])
        np.testing.assert_allclose(got, conv_numpy(x, w), rtol=RTOL, atol=ATOL)


def test_conv_net_input_too_small_for_the_window_fails_its_check():
    graph, _ = conv_net()
    with pytest.raises(ValueError, match=r"model check failed: node 'maxpool_2' \(op MaxPool\): window 2 fits the padded input .* = 1 "):
        evaluate(graph, [np.zeros((2, 3, 1, 1), np.float32)])


def test_batchnorm_folds_into_a_conv_with_symbolic_dims():
    graph, _ = conv_net(batchnorm=True)
    reference = Graph(graph.name, graph.inputs, graph.outputs, list(graph.nodes), graph.output_names)
    x = np.random.default_rng(6).standard_normal((2, 3, 7, 6)).astype(np.float32)
    (want,) = evaluate(reference, [x])
    graph = _pipeline(graph)
    assert [n.op for n in graph.nodes] == ["Conv", "MaxPool", "GlobalAveragePool", "Reshape", "MatMul"]
    assert [s.op for s in graph.nodes[0].fused] == ["Relu"]
    (got,) = evaluate(graph, [x])
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------- data-dependent symbols in passes

def test_a_symbol_source_stays_live_and_follows_replaced_values():
    x = symbolic_input("x", DType.f32, "n", 4)
    shape = symbolic_input("shape", DType.i64, 2)
    b = Builder([x, shape])
    copied = b("Reshape", [shape], {"shape": [2]})   # a no-op the pipeline removes
    y = b("Reshape", [x], {"shape": [Expr.of("r"), Expr.of("c")]})
    graph = b.graph("reshape", [y])
    graph.symbol_sources = {"r": (copied, 0), "c": (copied, 1)}
    b("Relu", [x])  # read by nothing: removed
    graph = _pipeline(graph)
    assert graph.symbol_sources == {"r": (shape, 0), "c": (shape, 1)}
    assert [n.op for n in graph.nodes] == ["Reshape"]
    assert "  symbol c = %shape[1]\n  symbol r = %shape[0]\n" in print_graph(graph)
    x_value = np.arange(12, dtype=np.float32).reshape(3, 4)
    (got,) = evaluate(graph, [x_value, np.array([6, 2])])
    np.testing.assert_array_equal(got, x_value.reshape(6, 2))
    with pytest.raises(ValueError, match=r"model check failed: node 'reshape_1' \(op Reshape\): Reshape element count: c\*r = 10, 4\*n = 12 \(needs c\*r == 4\*n\)"):
        evaluate(graph, [x_value, np.array([5, 2])])


def test_fusion_keeps_a_symbol_source_materialized():
    x = symbolic_input("x", DType.i64, 3)
    b = Builder([x])
    doubled = b("Add", [x, x])
    out = b("Neg", [doubled])
    graph = b.graph("g", [out])
    graph.symbol_sources = {"k": (doubled, 2)}
    graph = _pipeline(graph)
    assert [(n.op, n.fused) for n in graph.nodes] == [("Add", []), ("Neg", [])]


def test_dead_code_elimination_keeps_a_node_computing_a_symbol_source():
    x = symbolic_input("x", DType.i64, 3)
    b = Builder([x])
    doubled = b("Add", [x, x])
    out = b("Neg", [x])
    graph = b.graph("g", [out])
    graph.symbol_sources = {"k": (doubled, 2)}
    graph = EliminateDeadCode().run(graph)
    assert [n.op for n in graph.nodes] == ["Add", "Neg"]

"""Shape rules on symbolic dims (iree_py/ir/dim_checks.py and the rules in ops*.py): inferred
types, the run-time checks they record, compile-time failures, the text form, and that the
symbolic pooling formula equals the static one for every size."""
from __future__ import annotations

import pytest

from iree_py.ir.dim_checks import (DimCheck, broadcast_dim, collect_checks, product, require_equal,
                                   require_one_or, same_dims)
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.opdef import pool_output_dim, pool_output_size
from iree_py.ir.ops import infer_types
from iree_py.ir.symbols import Expr, call, evaluate
from iree_py.ir.text import parse_graph, print_graph
from iree_py.ir.types import TensorType

n, m = Expr.of("n"), Expr.of("m")


def t(text: str) -> TensorType:
    return TensorType.parse(text)


# ------------------------------------------------------------------------------------ dim checks

def test_broadcast_of_two_symbols_records_a_check_and_gives_their_max():
    with collect_checks() as checks:
        assert broadcast_dim(n, m, "x") == call("max", n, m)
    assert checks == [DimCheck(((n, m), (n, 1), (m, 1)), "x")]
    assert str(checks[0]) == "x: n == m or n == 1 or m == 1"
    assert checks[0].holds({"n": 1, "m": 7}) and not checks[0].holds({"n": 2, "m": 7})


def test_broadcast_of_a_symbol_with_itself_or_with_one_records_nothing():
    with collect_checks() as checks:
        assert broadcast_dim(n, n, "x") == n
        assert broadcast_dim(1, n, "x") == n
        assert broadcast_dim(n + 1, 1, "x") == n + 1
    assert checks == []


def test_broadcast_of_a_symbol_with_a_constant_gives_the_constant():
    with collect_checks() as checks:
        assert broadcast_dim(n, 4, "x") == 4
    assert checks == [DimCheck(((n, 4), (n, 1)), "x")]


def test_static_mismatches_still_fail_at_compile_time():
    with pytest.raises(ValueError, match="x: 3 and 4 do not broadcast"):
        broadcast_dim(3, 4, "x")
    with pytest.raises(ValueError, match=r"x: \{1 \+ n\} != \{n\}"):
        require_equal(n + 1, n, "x")
    with pytest.raises(ValueError, match=r"shapes tensor<3xf32> and tensor<4xf32> do not broadcast"):
        infer_types("Add", [t("tensor<3xf32>"), t("tensor<4xf32>")], {})
    with pytest.raises(ValueError, match="MatMul inner dims differ"):
        infer_types("MatMul", [t("tensor<{n}x3xf32>"), t("tensor<4x5xf32>")], {})


def test_require_equal_prefers_the_static_side_and_checks_the_symbolic_one():
    with collect_checks() as checks:
        assert require_equal(n, 8, "k") == 8
        assert require_equal(n * 2, 2 * n, "k") == 2 * n
    assert checks == [DimCheck(((n, 8),), "k")]


def test_no_collector_records_nothing():
    assert broadcast_dim(n, m, "x") == call("max", n, m)
    with collect_checks() as checks:
        pass
    assert checks == []


def test_small_helpers():
    assert product([2, n, 3]) == 6 * n and product([2, 3]) == 6
    with collect_checks() as checks:
        assert same_dims((n, 3), (m, 3), "s") == (n, 3)
        require_one_or(1, n, "e")
        require_one_or(m, n, "e")
    assert checks == [DimCheck(((n, m),), "s axis 0"), DimCheck(((m, n), (m, 1)), "e")]
    with pytest.raises(ValueError, match="ranks differ"):
        same_dims((n,), (n, 1), "s")


# ---------------------------------------------------------------------------------- shape rules

CONV = {"dilations": [1, 1], "group": 1, "pads": [1, 1, 1, 1], "strides": [2, 2]}
POOL = {"ceil_mode": 0, "dilations": [1, 1], "kernel": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]}
RNN_ATTRS = {"activation_alpha": [0.0], "activation_beta": [0.0], "activations": ["Tanh"], "clip": 1e9,
             "direction": "forward", "hidden_size": 4}

# op, input types, attrs, output type, checks recorded (as text)
RULES = [
    ("Add", ["tensor<{n}x1x4xf32>", "tensor<{m}x4xf32>"], {}, "tensor<{n}x{m}x4xf32>", []),
    ("Mul", ["tensor<{n}xf32>", "tensor<{m}xf32>"], {}, "tensor<{max(m, n)}xf32>",
     ["broadcast operands axis 0: n == m or n == 1 or m == 1"]),
    ("Relu", ["tensor<{n}x3xf32>"], {}, "tensor<{n}x3xf32>", []),
    ("Where", ["tensor<{n}x1xbool>", "tensor<{n}x5xf32>", "tensor<f32>"], {}, "tensor<{n}x5xf32>", []),
    ("Less", ["tensor<{n}xf32>", "tensor<3xf32>"], {}, "tensor<3xbool>",
     ["broadcast operands axis 0: n == 3 or n == 1"]),
    ("Cast", ["tensor<{n}xf32>"], {"to": "i32"}, "tensor<{n}xi32>", []),
    ("And", ["tensor<{n}xbool>", "tensor<{n}xbool>"], {}, "tensor<{n}xbool>", []),
    ("MatMul", ["tensor<{b}x{s}x16xf32>", "tensor<16x8xf32>"], {}, "tensor<{b}x{s}x8xf32>", []),
    ("MatMul", ["tensor<{b}x2x{s}x8xf32>", "tensor<{b}x2x8x{t}xf32>"], {}, "tensor<{b}x2x{s}x{t}xf32>", []),
    ("MatMul", ["tensor<{n}x{k}xf32>", "tensor<8x3xf32>"], {}, "tensor<{n}x3xf32>", ["MatMul inner dims: k == 8"]),
    ("Conv", ["tensor<{n}x3x{h}x{w}xf32>", "tensor<8x3x3x3xf32>", "tensor<8xf32>"], CONV,
     "tensor<{n}x8x{1 + floordiv(-1 + h, 2)}x{1 + floordiv(-1 + w, 2)}xf32>",
     ["window 3 fits the padded input 2 + h: max(2 + h, 3) == 2 + h",
      "window 3 fits the padded input 2 + w: max(2 + w, 3) == 2 + w"]),
    ("MaxPool", ["tensor<1x2x{h}x5xf32>"], POOL, "tensor<1x2x{1 + floordiv(-1 + h, 2)}x3xf32>",
     ["window 3 fits the padded input 2 + h: max(2 + h, 3) == 2 + h"]),
    ("MaxPool", ["tensor<1x2x{h}x5xf32>"], {**POOL, "ceil_mode": 1, "pads": [0, 0, 0, 0]},
     "tensor<1x2x{1 + ceildiv(-3 + h, 2)}x2xf32>", ["window 3 fits the padded input h: max(3, h) == h"]),
    ("AveragePool", ["tensor<1x2x{h}x5xf32>"], {**POOL, "count_include_pad": 0},
     "tensor<1x2x{1 + floordiv(-1 + h, 2)}x3xf32>", ["window 3 fits the padded input 2 + h: max(2 + h, 3) == 2 + h"]),
    ("LpPool", ["tensor<1x2x{h}x5xf32>"], {**POOL, "p": 2}, "tensor<1x2x{1 + floordiv(-1 + h, 2)}x3xf32>",
     ["window 3 fits the padded input 2 + h: max(2 + h, 3) == 2 + h"]),
    ("GlobalAveragePool", ["tensor<{n}x4x{h}x{w}xf32>"], {}, "tensor<{n}x4x1x1xf32>", []),
    ("BatchNormalization", ["tensor<{n}x2x{h}xf32>", *["tensor<2xf32>"] * 4], {"epsilon": 1e-5},
     "tensor<{n}x2x{h}xf32>", []),
    ("Softmax", ["tensor<{n}x{s}xf32>"], {"axis": 1}, "tensor<{n}x{s}xf32>", []),
    ("LogSoftmax", ["tensor<{n}x{s}xf32>"], {"axis": 1}, "tensor<{n}x{s}xf32>", []),
    ("Hardmax", ["tensor<{n}x{s}xf32>"], {"axis": 0}, "tensor<{n}x{s}xf32>", []),
    ("Reduce", ["tensor<{n}x{s}x4xf32>"], {"axes": [1, 2], "keepdims": 0, "kind": "sum"}, "tensor<{n}xf32>", []),
    ("Reduce", ["tensor<{n}x{s}x4xf32>"], {"axes": [1], "keepdims": 1, "kind": "max"}, "tensor<{n}x1x4xf32>", []),
    ("ArgMax", ["tensor<{n}x{s}xf32>"], {"axis": 1, "keepdims": 0, "select_last_index": 0}, "tensor<{n}xi64>",
     ["reduced axis 1 is not empty: max(1, s) == s"]),
    ("ArgMin", ["tensor<{n}x3xf32>"], {"axis": 1, "keepdims": 1, "select_last_index": 0}, "tensor<{n}x1xi64>", []),
    ("Transpose", ["tensor<{n}x3x{s}xf32>"], {"perm": [2, 0, 1]}, "tensor<{s}x{n}x3xf32>", []),
    ("Reshape", ["tensor<{n}x3x4xf32>"], {"shape": [n, 12]}, "tensor<{n}x12xf32>", []),
    ("Reshape", ["tensor<{n}x{s}xf32>"], {"shape": [Expr.of("n") * Expr.of("s")]}, "tensor<{n*s}xf32>", []),
    ("Reshape", ["tensor<{n}x4xf32>"], {"shape": [m, 2]}, "tensor<{m}x2xf32>",
     ["Reshape element count: 2*m == 4*n"]),
    ("Concat", ["tensor<{n}x{s}xf32>", "tensor<{n}x3xf32>", "tensor<{n}x{s}xf32>"], {"axis": 1},
     "tensor<{n}x{3 + 2*s}xf32>", []),
    ("Concat", ["tensor<{n}x2xf32>", "tensor<{m}x2xf32>"], {"axis": 1}, "tensor<{n}x4xf32>",
     ["Concat operand 1 axis 0 matches operand 0: m == n"]),
    ("Slice", ["tensor<{n}x10xf32>"], {"starts": [1, 2], "ends": [5, 8], "steps": [1, 3]},
     "tensor<{-min(1, n) + min(5, n)}x2xf32>", []),
    ("Slice", ["tensor<{n}xf32>"], {"starts": [0], "ends": [n], "steps": [2]}, "tensor<{ceildiv(n, 2)}xf32>", []),
    ("Slice", ["tensor<{n}xf32>"], {"starts": [n - 1], "ends": [-1], "steps": [-1]}, "tensor<{n}xf32>", []),
    ("Gather", ["tensor<{v}x8xf32>", "tensor<{b}x{s}xi64>"], {"axis": 0}, "tensor<{b}x{s}x8xf32>", []),
    ("GatherElements", ["tensor<{n}x8xf32>", "tensor<{k}x2xi64>"], {"axis": 1}, "tensor<{k}x2xf32>",
     ["GatherElements indices axis 0 fit data: max(k, n) == n"]),
    ("Expand", ["tensor<{n}x1xf32>"], {"shape": [n, m]}, "tensor<{n}x{m}xf32>", []),
    ("Expand", ["tensor<{k}xf32>"], {"shape": [3, n]}, "tensor<3x{n}xf32>", ["Expand axis 1: k == n or k == 1"]),
    ("Pad", ["tensor<{n}x4xf32>"], {"mode": "constant", "pads": [1, 0, 2, 0], "value": 0.0},
     "tensor<{3 + n}x4xf32>", []),
    ("Pad", ["tensor<{n}xf32>"], {"mode": "reflect", "pads": [-1, 1], "value": 0.0}, "tensor<{n}xf32>",
     ["Pad mode reflect keeps a non-empty axis 0: max(-1 + n, 1) == -1 + n",
      "Pad mode reflect needs axis 0 ({n} cropped to {-1 + n}) longer than its end pad 1: max(-1 + n, 2) == -1 + n"]),
    ("Pad", ["tensor<{n}x{m}xf32>"], {"mode": "reflect", "pads": [0, 3, 0, 0], "value": 0.0}, "tensor<{n}x{3 + m}xf32>",
     ["Pad mode reflect keeps a non-empty axis 0: max(1, n) == n", "Pad mode reflect keeps a non-empty axis 1: "
      "max(1, m) == m", "Pad mode reflect needs axis 1 ({m}) longer than its begin pad 3: max(4, m) == m"]),
    ("ConvTranspose", ["tensor<{n}x2x{h}x{w}xf32>", "tensor<2x3x2x2xf32>"],
     {"strides": [2, 2], "dilations": [1, 1], "pads": [0, 0, 0, 0], "group": 1}, "tensor<{n}x3x{2*h}x{2*w}xf32>",
     ["ConvTranspose output axis 0 (input {h}, pads [0, 0, 0, 0]) keeps at least one position: max(1, 2*h) == 2*h",
      "ConvTranspose output axis 1 (input {w}, pads [0, 0, 0, 0]) keeps at least one position: max(1, 2*w) == 2*w"]),
    ("ConvTranspose", ["tensor<{n}x{c}x4xf32>", "tensor<2x1x3xf32>"],
     {"strides": [1], "dilations": [1], "pads": [1, 1], "group": 2}, "tensor<{n}x2x4xf32>",
     ["ConvTranspose input channels equal the weight's first dim: c == 2"]),
    ("ConvTranspose", ["tensor<1x2x{h}xf32>", "tensor<2x1x3xf32>"],
     {"strides": [2], "dilations": [2], "pads": [1, 4], "group": 1}, "tensor<1x1x{-2 + 2*h}xf32>",
     ["ConvTranspose output axis 0 (input {h}, pads [1, 4]) keeps at least one position: "
      "max(-2 + 2*h, 1) == -2 + 2*h"]),
    ("Pad", ["tensor<{n}xf32>"], {"mode": "constant", "pads": [-2, 0], "value": 0.0}, "tensor<{-2 + n}xf32>",
     ["Pad axis 0 (n) cropped by pads [-2, 0]: max(-2 + n, 0) == -2 + n"]),
    ("Slice", ["tensor<{n}xf32>"], {"starts": [m], "ends": [n], "steps": [1]}, "tensor<{-min(m, n) + n}xf32>",
     ["slice end n >= start m on an axis of n: max(min(m, n), n) == n"]),
    ("CumSum", ["tensor<{n}x3xf32>"], {"axis": 0, "exclusive": 0, "reverse": 1}, "tensor<{n}x3xf32>", []),
    ("TopK", ["tensor<{n}x{s}xf32>"], {"axis": 1, "k": 2, "largest": 1, "result": "indices"}, "tensor<{n}x2xi64>",
     ["TopK k 2 <= axis 1: max(2, s) == s"]),
    ("RNN", ["tensor<{s}x{b}x3xf32>", "tensor<1x4x3xf32>", "tensor<1x4x4xf32>", "tensor<1x8xf32>",
             "tensor<{b}xi32>", "tensor<1x{b}x4xf32>"], {**RNN_ATTRS, "result": "Y"}, "tensor<{s}x1x{b}x4xf32>", []),
    ("GRU", ["tensor<{s}x{b}x3xf32>", "tensor<1x12x3xf32>", "tensor<1x12x4xf32>", "tensor<1x24xf32>",
             "tensor<{c}xi32>", "tensor<1x{b}x4xf32>"],
     {**RNN_ATTRS, "activations": ["Sigmoid", "Tanh"], "activation_alpha": [0.0, 0.0],
      "activation_beta": [0.0, 0.0], "linear_before_reset": 0, "result": "Y_h"}, "tensor<1x{b}x4xf32>",
     ["GRU sequence_lens axis 0: c == b"]),
]


@pytest.mark.parametrize("op, inputs, attrs, output, checks", RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(RULES)])
def test_symbolic_rule(op, inputs, attrs, output, checks):
    with collect_checks() as recorded:
        (got,) = infer_types(op, [t(x) for x in inputs], attrs)
    assert str(got) == output
    assert [str(c) for c in recorded] == checks


def test_ops_without_a_symbolic_rule_name_the_op():
    with pytest.raises(ValueError, match=r"GatherND has no symbolic shape rule: shape tensor<\{n\}x2xf32> is not static"):
        infer_types("GatherND", [t("tensor<{n}x2xf32>"), t("tensor<1x1xi64>")], {"batch_dims": 0})


def test_pool_output_dim_equals_the_static_rule_for_every_size():
    for kernel, stride, pad_begin, pad_end, dilation, ceil_mode in [
            (k, s, pb, pe, d, c) for k in (1, 2, 3, 4) for s in (1, 2, 3) for pb in (0, 1, 2)
            for pe in (0, 1, 2, 3) for d in (1, 2) for c in (0, 1)]:
        expr = pool_output_dim(n, kernel, stride, pad_begin, pad_end, dilation, ceil_mode)
        span = dilation * (kernel - 1) + 1
        for size in range(max(0, span - pad_begin - pad_end), 14):
            want = pool_output_size(size, kernel, stride, pad_begin, pad_end, dilation, ceil_mode)
            assert evaluate(expr, {"n": size}) == want, (kernel, stride, pad_begin, pad_end, dilation, ceil_mode, size)


# ------------------------------------------------------------------------------------ text form

def test_symbolic_types_attrs_and_symbol_sources_round_trip():
    x = Value("x", t("tensor<{n}x4xf32>"))
    shape = Value("shape", t("tensor<2xi64>"))
    node = Node("Reshape", [x], [], {"shape": [Expr.of("r"), Expr.of("c") + 1]}, "r")
    node.outputs = [Value("y", t("tensor<{r}x{1 + c}xf32>"), producer=node)]
    graph = Graph("g", [x, shape], node.outputs, [node], ["y"], symbol_sources={"r": (shape, 0), "c": (shape, 1)})
    text = print_graph(graph)
    assert text == (
        'graph @g(%x: tensor<{n}x4xf32>, %shape: tensor<2xi64>) -> (%y) {\n'
        '  symbol c = %shape[1]\n'
        '  symbol r = %shape[0]\n'
        '  %y = Reshape(%x) {shape = [{r}, {1 + c}]} : tensor<{r}x{1 + c}xf32>  // name: "r"\n'
        '  return %y\n'
        '}\n')
    parsed = parse_graph(text)
    assert print_graph(parsed) == text
    assert parsed.nodes[0].attrs["shape"] == [Expr.of("r"), Expr.of("c") + 1]
    assert parsed.symbol_sources["c"] == (parsed.inputs[1], 1)


def test_a_symbol_line_naming_an_unknown_value_is_an_error():
    text = "graph @g(%x: tensor<{n}xf32>) -> (%x) {\n  symbol n = %nope[0]\n  return %x\n}\n"
    with pytest.raises(Exception, match=r"symbol n reads %nope, which is never defined"):
        parse_graph(text)

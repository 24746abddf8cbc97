"""ONNX If / Loop / Scan models with symbolic shapes (dim_param inputs, run-time trip counts,
branches of different shapes), built with onnx.helper, for tests/e2e/test_cf_dynamic.py."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

F = T.FLOAT


def _model(graph: onnx.GraphProto, opset: int = 17) -> onnx.ModelProto:
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _vi(name: str, elem: int, shape: list) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def loop_runtime_trips(stop_at: float | None = None) -> onnx.ModelProto:
    """Loop with trip count M (an input) and a scan output of acc' per iteration; the graph then
    takes the scan output's Sigmoid and its sum over the iterations. stop_at: the body's condition
    also ends the loop once sum(acc') >= stop_at (fewer slices than M)."""
    body_nodes = [
        h.make_node("Cast", ["i"], ["fi"], to=F),
        h.make_node("MatMul", ["a", "W"], ["aw"]),
        h.make_node("Mul", ["x", "fi"], ["xi"]),
        h.make_node("Add", ["aw", "xi"], ["pre"]),
        h.make_node("Tanh", ["pre"], ["a_next"]),
        h.make_node("Mul", ["a_next", "two"], ["scan"]),
    ]
    if stop_at is None:
        body_nodes.append(h.make_node("Identity", ["c_in"], ["c_out"]))
    else:
        body_nodes += [h.make_node("ReduceSum", ["a_next"], ["sa"], keepdims=0),
                       h.make_node("Less", ["sa", "limit"], ["c_out"])]
    body = h.make_graph(body_nodes, "body",
                        [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("a", F, [1, 4])],
                        [_vi("c_out", T.BOOL, []), _vi("a_next", F, [1, 4]), _vi("scan", F, [1, 4])])
    nodes = [h.make_node("Loop", ["M", "true", "a0"], ["a_final", "scanned"], body=body),
             h.make_node("Sigmoid", ["scanned"], ["sig"]),
             h.make_node("ReduceSum", ["scanned", "axis0"], ["total"], keepdims=0)]
    inits = [h.make_tensor("W", F, [4, 4], (np.eye(4) * 0.5 + 0.1).astype(np.float32).ravel()),
             h.make_tensor("two", F, [], [2.0]), h.make_tensor("limit", F, [], [stop_at or 0.0]),
             h.make_tensor("true", T.BOOL, [], [True]), h.make_tensor("axis0", T.INT64, [1], [0])]
    g = h.make_graph(nodes, "loop_trips", [_vi("x", F, [1, 4]), _vi("a0", F, [1, 4]), _vi("M", T.INT64, [])],
                     [_vi("a_final", F, [1, 4]), _vi("sig", F, ["n", 1, 4]), _vi("total", F, [1, 4])], inits)
    return _model(g)


def loop_batch_carried() -> onnx.ModelProto:
    """Loop over a [batch, 16] carried value (batch: dim_param) that reads the outer x [batch, 16],
    trip count M given at run time, with a [M, batch, 16] scan output."""
    body_nodes = [h.make_node("MatMul", ["a", "W"], ["aw"]),
                  h.make_node("Add", ["aw", "x"], ["pre"]),
                  h.make_node("Tanh", ["pre"], ["a_next"]),
                  h.make_node("Relu", ["a_next"], ["scan"]),
                  h.make_node("Identity", ["c_in"], ["c_out"])]
    body = h.make_graph(body_nodes, "body",
                        [_vi("i", T.INT64, []), _vi("c_in", T.BOOL, []), _vi("a", F, ["batch", 16])],
                        [_vi("c_out", T.BOOL, []), _vi("a_next", F, ["batch", 16]),
                         _vi("scan", F, ["batch", 16])])
    nodes = [h.make_node("Loop", ["M", "", "x"], ["a_final", "scanned"], body=body),
             h.make_node("Mul", ["a_final", "x"], ["y"])]
    inits = [h.make_tensor("W", F, [16, 16], (np.random.default_rng(1).standard_normal((16, 16)) / 4)
                           .astype(np.float32).ravel())]
    g = h.make_graph(nodes, "loop_batch", [_vi("x", F, ["batch", 16]), _vi("M", T.INT64, [])],
                     [_vi("y", F, ["batch", 16]), _vi("scanned", F, [None, "batch", 16])], inits)
    return _model(g)


def scan_symbolic_seq() -> onnx.ModelProto:
    """Scan over x [seq, batch, 8] (seq, batch: dim_param): state s' = s * 0.5 + x_t, scan output
    tanh(s'); the graph then adds the final state to every step."""
    body_nodes = [h.make_node("Mul", ["s", "half"], ["sh"]),
                  h.make_node("Add", ["sh", "xt"], ["s_next"]),
                  h.make_node("Tanh", ["s_next"], ["yt"])]
    body = h.make_graph(body_nodes, "body", [_vi("s", F, ["batch", 8]), _vi("xt", F, ["batch", 8])],
                        [_vi("s_next", F, ["batch", 8]), _vi("yt", F, ["batch", 8])],
                        [h.make_tensor("half", F, [], [0.5])])
    nodes = [h.make_node("Scan", ["s0", "x"], ["s_final", "ys"], body=body, num_scan_inputs=1),
             h.make_node("Add", ["ys", "s_final"], ["z"])]
    g = h.make_graph(nodes, "scan_seq", [_vi("s0", F, ["batch", 8]), _vi("x", F, ["seq", "batch", 8])],
                     [_vi("s_final", F, ["batch", 8]), _vi("z", F, ["seq", "batch", 8])])
    return _model(g)


def if_symbolic(else_width: int = 4) -> onnx.ModelProto:
    """If sum(x) > 0 then relu(x) * w else Slice(-x)[:, :else_width], over x [n, 4] (n: dim_param);
    else_width != 4 gives branches of different shapes ([n, 4] / [n, else_width]). The graph then
    takes the result's Sigmoid."""
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["r"]), h.make_node("Mul", ["r", "w"], ["t_out"])],
                          "then", [], [_vi("t_out", F, ["n", 4])])
    else_g = h.make_graph([h.make_node("Neg", ["x"], ["ng"]),
                           h.make_node("Slice", ["ng", "starts", "ends", "axes"], ["e_out"])],
                          "else", [], [_vi("e_out", F, ["n", else_width])],
                          [h.make_tensor("starts", T.INT64, [1], [0]),
                           h.make_tensor("ends", T.INT64, [1], [else_width]),
                           h.make_tensor("axes", T.INT64, [1], [1])])
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             h.make_node("Greater", ["s", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             h.make_node("Sigmoid", ["y"], ["z"])]
    g = h.make_graph(nodes, "if_sym", [_vi("x", F, ["n", 4])], [_vi("z", F, ["n", None])],
                     [h.make_tensor("w", F, [4], [0.25, 0.5, 1.0, 2.0]), h.make_tensor("zero", F, [], [0.0])])
    return _model(g)

"""Small ONNX models with If, Loop and Scan, built with onnx.helper, for the control-flow tests."""
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


def if_relu_or_neg(else_shape: tuple[int, ...] = (2, 3)) -> onnx.ModelProto:
    """y = relu(x) * w if sum(x) > 0 else -x + w: both branches read outer values. `else_shape`
    other than (2, 3) reshapes the else result (branches of different shapes)."""
    then_g = h.make_graph([h.make_node("Relu", ["x"], ["r"]), h.make_node("Mul", ["r", "w"], ["t_out"])],
                          "then", [], [h.make_tensor_value_info("t_out", F, [2, 3])])
    else_nodes = [h.make_node("Neg", ["x"], ["n"]), h.make_node("Add", ["n", "w"], ["e_sum"]),
                  h.make_node("Reshape", ["e_sum", "else_shape"], ["e_out"])]
    else_g = h.make_graph(else_nodes, "else", [], [h.make_tensor_value_info("e_out", F, list(else_shape))],
                          [h.make_tensor("else_shape", T.INT64, [2], list(else_shape))])
    nodes = [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             h.make_node("Greater", ["s", "zero"], ["c"]),
             h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
             h.make_node("Sigmoid", ["y"], ["z"])]
    g = h.make_graph(nodes, "if_model", [h.make_tensor_value_info("x", F, [2, 3])],
                     [h.make_tensor_value_info("z", F, [2, 3])],
                     [h.make_tensor("w", F, [2, 3], np.arange(6, dtype=np.float32) / 4),
                      h.make_tensor("zero", F, [], [0.0])])
    return _model(g)


def loop_accumulate(trips: int = 4, with_cond: bool = False, stop_after: int = 0) -> onnx.ModelProto:
    """acc' = tanh(acc @ W + x * i), swapped with a second carried value; scan output of acc'.
    with_cond: the trip count is a model input and the loop also ends when sum(acc') >= 50 (no
    scan output). stop_after: the body's condition ends the loop after that many iterations."""
    body_nodes = [
        h.make_node("Cast", ["i"], ["fi"], to=F),
        h.make_node("MatMul", ["a", "W"], ["aw"]),
        h.make_node("Mul", ["x", "fi"], ["xi"]),
        h.make_node("Add", ["aw", "xi"], ["pre"]),
        h.make_node("Tanh", ["pre"], ["a_next"]),
        h.make_node("Identity", ["a"], ["b_next"]),   # b' = a (the previous acc): a carried swap
    ]
    outs = [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("a_next", F, [1, 4]),
            h.make_tensor_value_info("b_next", F, [1, 4])]
    if with_cond:
        body_nodes += [h.make_node("ReduceSum", ["a_next"], ["sa"], keepdims=0),
                       h.make_node("Less", ["sa", "limit"], ["c_out"])]
    else:
        body_nodes += [h.make_node("Less", ["i", "last"], ["c_out"]) if stop_after else
                       h.make_node("Identity", ["c_in"], ["c_out"]), h.make_node("Mul", ["a_next", "two"], ["scan"])]
        outs.append(h.make_tensor_value_info("scan", F, [1, 4]))
    body = h.make_graph(body_nodes, "body",
                       [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, []),
                        h.make_tensor_value_info("a", F, [1, 4]), h.make_tensor_value_info("b", F, [1, 4])], outs)
    loop_outputs = ["a_final", "b_final"] + ([] if with_cond else ["scanned"])
    cond_input = "true" if with_cond else ""
    nodes = [h.make_node("Loop", ["M" if with_cond else "trips", cond_input, "a0", "b0"], loop_outputs, body=body)]
    inits = [h.make_tensor("W", F, [4, 4], (np.eye(4) * 0.5 + 0.1).astype(np.float32).ravel()),
             h.make_tensor("two", F, [], [2.0]), h.make_tensor("limit", F, [], [50.0]),
             h.make_tensor("true", T.BOOL, [], [True]), h.make_tensor("b0", F, [1, 4], [0.0] * 4),
             h.make_tensor("last", T.INT64, [], [stop_after - 1])]
    inputs = [h.make_tensor_value_info("x", F, [1, 4]), h.make_tensor_value_info("a0", F, [1, 4])]
    if with_cond:
        inputs.append(h.make_tensor_value_info("M", T.INT64, []))
    else:
        inits.append(h.make_tensor("trips", T.INT64, [], [trips]))
    shapes = {"a_final": [1, 4], "b_final": [1, 4], "scanned": [trips, 1, 4]}
    outputs = [h.make_tensor_value_info(n, F, shapes[n]) for n in loop_outputs]
    return _model(h.make_graph(nodes, "loop_model", inputs, outputs, inits))


def scan_cumulative(reverse: bool = False, axis: int = 0) -> onnx.ModelProto:
    """Scan over the rows of x [5, 3] (or its columns for axis 1): state += row; out_k = state * row."""
    body = h.make_graph(
        [h.make_node("Add", ["s", "row"], ["s_next"]), h.make_node("Mul", ["s_next", "row"], ["y"])],
        "scan_body", [h.make_tensor_value_info("s", F, [3]), h.make_tensor_value_info("row", F, [3])],
        [h.make_tensor_value_info("s_next", F, [3]), h.make_tensor_value_info("y", F, [3])])
    attrs = {"num_scan_inputs": 1, "body": body}
    if reverse:
        attrs["scan_input_directions"] = [1]
    if axis:
        attrs["scan_input_axes"] = [axis]
        attrs["scan_output_axes"] = [axis]
    shape = [5, 3] if axis == 0 else [3, 5]
    g = h.make_graph([h.make_node("Scan", ["s0", "x"], ["s_final", "ys"], **attrs)], "scan_model",
                     [h.make_tensor_value_info("s0", F, [3]), h.make_tensor_value_info("x", F, shape)],
                     [h.make_tensor_value_info("s_final", F, [3]), h.make_tensor_value_info("ys", F, shape)])
    return _model(g)


def loop_with_if() -> onnx.ModelProto:
    """A Loop whose body holds an If; both read x from the main graph (a capture two levels down).
    acc' = acc + x if i is even else acc * 0.5, for 5 iterations."""
    then_g = h.make_graph([h.make_node("Add", ["acc", "x"], ["t"])], "even", [],
                          [h.make_tensor_value_info("t", F, [2, 2])])
    else_g = h.make_graph([h.make_node("Mul", ["acc", "half"], ["e"])], "odd", [],
                          [h.make_tensor_value_info("e", F, [2, 2])])
    body = h.make_graph(
        [h.make_node("Mod", ["i", "two_i"], ["r"]), h.make_node("Equal", ["r", "zero_i"], ["even"]),
         h.make_node("If", ["even"], ["acc_next"], then_branch=then_g, else_branch=else_g),
         h.make_node("Identity", ["c_in"], ["c_out"])],
        "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, []),
                 h.make_tensor_value_info("acc", F, [2, 2])],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("acc_next", F, [2, 2])])
    nodes = [h.make_node("Loop", ["five", "", "acc0"], ["acc_final"], body=body)]
    inits = [h.make_tensor("five", T.INT64, [], [5]), h.make_tensor("two_i", T.INT64, [], [2]),
             h.make_tensor("zero_i", T.INT64, [], [0]), h.make_tensor("half", F, [], [0.5])]
    g = h.make_graph(nodes, "nested", [h.make_tensor_value_info("x", F, [2, 2]),
                                       h.make_tensor_value_info("acc0", F, [2, 2])],
                     [h.make_tensor_value_info("acc_final", F, [2, 2])], inits)
    return _model(g)

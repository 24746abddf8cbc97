"""What a call costs beyond its kernels: iree-py versus onnxruntime (1 thread) on models whose
kernels take next to no time, in one run.

    python benchmarks/call_overhead.py [--repeat 5000] [--rounds 3]

Each model is a few elements through one or a few ops, so its median latency is almost all per-call
overhead: Python argument checks, the ctypes call, the VM, copying outputs out. Engines are
measured in fresh processes taking turns (benchmarks/compare_onnxruntime.py measure_interleaved),
best median of --rounds. Ratios are iree-py / onnxruntime; below 1, iree-py's calls cost less.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_onnxruntime import measure_interleaved  # noqa: E402


def tiny_models() -> dict[str, tuple[onnx.ModelProto, list[np.ndarray]]]:
    def model(nodes, inputs, outputs, initializers=()):
        graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    f32 = TensorProto.FLOAT
    relu = model([helper.make_node("Relu", ["x"], ["y"])], [helper.make_tensor_value_info("x", f32, [1, 16])],
                 [helper.make_tensor_value_info("y", f32, [1, 16])])
    add = model([helper.make_node("Add", ["a", "b"], ["y"])],
                [helper.make_tensor_value_info("a", f32, [1, 16]), helper.make_tensor_value_info("b", f32, [1, 16])],
                [helper.make_tensor_value_info("y", f32, [1, 16])])
    rng = np.random.default_rng(0)
    weights = [helper.make_tensor(f"w{i}", f32, [16, 16], rng.standard_normal(256).astype(np.float32)) for i in range(3)]
    mlp = model([helper.make_node("MatMul", ["x", "w0"], ["h0"]), helper.make_node("Relu", ["h0"], ["r0"]),
                 helper.make_node("MatMul", ["r0", "w1"], ["h1"]), helper.make_node("Relu", ["h1"], ["r1"]),
                 helper.make_node("MatMul", ["r1", "w2"], ["y"])],
                [helper.make_tensor_value_info("x", f32, [1, 16])], [helper.make_tensor_value_info("y", f32, [1, 16])],
                weights)
    x = rng.standard_normal((1, 16)).astype(np.float32)
    return {"relu_1x16": (relu, [x]), "add_1x16": (add, [x, x]), "mlp_3x16": (mlp, [x])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per engine, alternating")
    args = parser.parse_args()
    import iree_py
    print(f"{'model':<12}{'iree-py us':>12}{'ort us':>9}{'ratio':>8}")
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name, (model, inputs) in tiny_models().items():
            onnx_path, module_path, input_path = tmp / f"{name}.onnx", tmp / f"{name}.vmfb", tmp / f"{name}.npz"
            onnx.save(model, onnx_path)
            module_path.write_bytes(iree_py.compile(str(onnx_path), target="host"))
            np.savez(input_path, *inputs)
            ours, ort = measure_interleaved([("iree-py", module_path, input_path, ""),
                                             ("onnxruntime", onnx_path, input_path, "")], args.repeat, args.rounds)
            print(f"{name:<12}{1000 * ours['median_ms']:>12.2f}{1000 * ort['median_ms']:>9.2f}"
                  f"{ours['median_ms'] / ort['median_ms']:>8.2f}")


if __name__ == "__main__":
    main()

"""Micro-benchmark: our conv2d and matmul kernels vs numpy and onnxruntime, one thread, this host.

    python benchmarks/kernels/bench_conv_matmul.py [--repeat 20]

Prints the median (or, with --best, the best) time and GFLOP/s of each. Not a test: numbers depend on the machine.
Our kernels run through the jit.py harness (one ctypes call per workgroup, a few dozen per run).
"""
from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads its BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from iree_py.codegen.kernel_spec import KernelSpec  # noqa: E402
from iree_py.codegen.llvm import build_executable  # noqa: E402
from iree_py.codegen.llvm.jit import LoadedLibrary  # noqa: E402
from iree_py.targets import load_target  # noqa: E402
from iree_py.ir.types import DType, TensorType  # noqa: E402


def median_seconds(fn, repeat: int) -> float:
    fn()  # warm up
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) if MEASURE == "median" else float(min(times))


MEASURE = "median"  # or "best" (--best): steadier on a shared, busy machine


def ort_session(node, inputs, output, initializers):
    graph = helper.make_graph([node], "bench", inputs, [output], initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def tensor(shape) -> TensorType:
    return TensorType(DType.f32, tuple(shape))


def im2col_conv(x, w):
    """3x3 stride-1 pad-1 conv in numpy: im2col + one BLAS matmul."""
    n, c, h, wd = x.shape
    m = w.shape[0]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, ky:ky + h, kx:kx + wd] for ky in range(3) for kx in range(3)], axis=2)
    cols = cols.reshape(n, c * 9, h * wd)
    return (w.reshape(m, c * 9) @ cols).reshape(n, m, h, wd)


def report(name: str, flops: float, seconds: dict[str, float]) -> None:
    print(f"\n{name}: {flops / 1e9:.2f} GFLOP per run")
    for who, s in seconds.items():
        print(f"  {who:<28} {s * 1e3:8.3f} ms  {flops / s / 1e9:7.1f} GFLOP/s")


# name -> (X shape, M, kernel, stride, pad, group)
CONV_CASES = {
    "conv 1x64x56x56, 3x3, 64 out, pad 1": ((1, 64, 56, 56), 64, 3, 1, 1, 1),
    "conv 1x256x14x14, 1x1, 1024 out": ((1, 256, 14, 14), 1024, 1, 1, 0, 1),
    "conv 1x3x224x224, 7x7 stride 2, 64 out, pad 3": ((1, 3, 224, 224), 64, 7, 2, 3, 1),
    "depthwise 1x32x56x56, 3x3, pad 1": ((1, 32, 56, 56), 32, 3, 1, 1, 32),
}


def bench_conv(name: str, x_shape, m: int, k: int, stride: int, pad: int, group: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    n, c, h, wd = x_shape
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = rng.standard_normal((m, c // group, k, k)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    spec = KernelSpec("bench_conv", "conv2d", (tensor(x.shape), tensor(w.shape), tensor(b.shape)),
                      (tensor((n, m, oh, ow)),),
                      attrs={"strides": (stride, stride), "pads": (pad,) * 4, "dilations": (1, 1),
                             "group": group})
    lib = LoadedLibrary(build_executable([spec], load_target("host")))
    ours = lib.run(spec, [x, w, b])[0]
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[pad] * 4, strides=[stride] * 2,
                            group=group)
    sess = ort_session(node, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                       [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    theirs = sess.run(None, {"x": x})[0]
    err = np.abs(ours - theirs).max() / np.abs(theirs).max()
    flops = 2.0 * n * m * oh * ow * (c // group) * k * k
    report(f"{name} (max error vs onnxruntime {err:.1e})", flops, {
        "iree-py kernel": median_seconds(lambda: lib.run(spec, [x, w, b]), repeat),
        "onnxruntime (1 thread)": median_seconds(lambda: sess.run(None, {"x": x}), repeat),
    })


def bench_matmul(repeat: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    bm = rng.standard_normal((256, 256)).astype(np.float32)
    spec = KernelSpec("bench_mm", "matmul", (tensor(a.shape), tensor(bm.shape)), (tensor((256, 256)),))
    lib = LoadedLibrary(build_executable([spec], load_target("host")))
    ours = lib.run(spec, [a, bm])[0]
    print(f"\nmatmul: max error vs numpy {np.abs(ours - a @ bm).max() / np.abs(a @ bm).max():.2e}")
    node = helper.make_node("MatMul", ["a", "b"], ["y"])
    sess = ort_session(node, [helper.make_tensor_value_info("a", TensorProto.FLOAT, a.shape)],
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                       [onnx.numpy_helper.from_array(bm, "b")])
    flops = 2.0 * 256 ** 3
    report("matmul 256x256x256", flops, {
        "iree-py kernel": median_seconds(lambda: lib.run(spec, [a, bm]), repeat),
        "numpy (BLAS, 1 thread)": median_seconds(lambda: a @ bm, repeat),
        "onnxruntime (1 thread)": median_seconds(lambda: sess.run(None, {"a": a}), repeat),
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--best", action="store_true", help="report the best run, not the median")
    args = parser.parse_args()
    global MEASURE
    MEASURE = "best" if args.best else "median"
    print(f"host target: {load_target('host').vector_bits}-bit vectors, "
          f"{load_target('host').vector_registers} registers")
    for name, case in CONV_CASES.items():
        bench_conv(name, *case, args.repeat)
    bench_matmul(args.repeat)


if __name__ == "__main__":
    main()

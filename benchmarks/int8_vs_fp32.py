"""int8 versus fp32: the same MobileNet-like block as two TFLite models, compiled by iree-py for the
host and arm64, next to the TFLite interpreter (default resolver: XNNPACK) on the host, in one run.

    python benchmarks/int8_vs_fp32.py [--repeat 15] [--targets host,arm64] [--size 96] [--profile]
                                      [--generic-qconv]

The block: NHWC input [1, S, S, 32] -> CONV_2D 3x3 32->64 stride 2 (RELU6) -> DEPTHWISE_CONV_2D 3x3
(RELU) -> CONV_2D 1x1 64->128 (RELU6) -> AVERAGE_POOL_2D over the whole map -> FULLY_CONNECTED
128->10. The int8 model has per-channel int8 weights, int8 activations and int32 biases; the fp32
model uses the dequantized values of the same weights. Latency is the median of --repeat calls
after one warm-up call. arm64 runs the cross-built runner (`irp-run --repeat`) under qemu-aarch64:
its times count emulated instructions more than they measure real hardware (no cache, no pipeline
model), so read its ratio as "instructions executed", not as Cortex-A55 milliseconds.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tflite"))

from tflite_harness import complete_shapes  # noqa: E402
from timing import time_calls  # noqa: E402
from tflite_writer import Quant, TfliteModel  # noqa: E402

from iree_py.frontends.tflite.schema import (Conv2DOptions, DepthwiseConv2DOptions,  # noqa: E402
                                             FullyConnectedOptions, Pool2DOptions)

SAME, VALID = 0, 1
RELU, RELU6 = 1, 3
X_SCALE, X_ZP = 0.05, -3


def options(module, **fields):
    opts = getattr(module, module.__name__.rsplit(".", 1)[1] + "T")()
    for name, value in fields.items():
        setattr(opts, name, value)
    return opts


def _layers(size: int, rng: np.random.Generator) -> list[dict]:
    """Weights (int8, per output channel scales), biases (int32) and output quantization per layer."""
    def layer(w_shape, axis, count, in_scale, out_scale, out_zp):
        scales = rng.uniform(0.002, 0.01, count)
        w = rng.integers(-127, 128, size=w_shape).astype(np.int8)
        bias_scales = np.float32(in_scale) * scales.astype(np.float32)
        b = rng.integers(-3000, 3000, size=count).astype(np.int32)
        return {"w": w, "w_scales": list(scales), "axis": axis, "b": b, "b_scales": [float(s) for s in bias_scales],
                "in_scale": in_scale, "out_scale": out_scale, "out_zp": out_zp}
    return [layer((64, 3, 3, 32), 0, 64, X_SCALE, 0.04, -128),
            layer((1, 3, 3, 64), 3, 64, 0.04, 0.05, -128),
            layer((128, 1, 1, 64), 0, 128, 0.05, 0.06, -128),
            layer((10, 128), 0, 10, 0.06, 0.2, 4)]


def build_block(size: int, int8: bool) -> bytes:
    """The block as a TFLite model, int8 (quantized tensors) or fp32 (dequantized weights)."""
    layers = _layers(size, np.random.default_rng(7))
    m = TfliteModel()
    dtype = np.int8 if int8 else np.float32

    def act(name, scale, zp):
        return m.tensor(name, dtype=dtype, quant=Quant([scale], [zp]) if int8 else None)

    def weight(name, spec):
        if int8:
            scales = spec["w_scales"]
            return m.const(name, spec["w"], Quant(scales, [0] * len(scales), spec["axis"]))
        shape = [1] * spec["w"].ndim
        shape[spec["axis"]] = -1
        return m.const(name, spec["w"].astype(np.float32) * np.asarray(spec["w_scales"], np.float32).reshape(shape))

    def bias(name, spec):
        if int8:
            return m.const(name, spec["b"], Quant(spec["b_scales"], [0] * len(spec["b_scales"]), 0))
        return m.const(name, spec["b"].astype(np.float32) * np.asarray(spec["b_scales"], np.float32))

    conv1, dw, pw, fc = layers
    x = m.input("x", (1, size, size, 32), dtype, quant=Quant([X_SCALE], [X_ZP]) if int8 else None)
    c1 = act("c1", conv1["out_scale"], conv1["out_zp"])
    m.op("CONV_2D", [x, weight("w1", conv1), bias("b1", conv1)], [c1],
         options(Conv2DOptions, padding=SAME, strideH=2, strideW=2, fusedActivationFunction=RELU6))
    c2 = act("c2", dw["out_scale"], dw["out_zp"])
    m.op("DEPTHWISE_CONV_2D", [c1, weight("w2", dw), bias("b2", dw)], [c2],
         options(DepthwiseConv2DOptions, padding=SAME, strideH=1, strideW=1, depthMultiplier=1,
                 fusedActivationFunction=RELU))
    c3 = act("c3", pw["out_scale"], pw["out_zp"])
    m.op("CONV_2D", [c2, weight("w3", pw), bias("b3", pw)], [c3],
         options(Conv2DOptions, padding=VALID, strideH=1, strideW=1, fusedActivationFunction=RELU6))
    half = (size + 1) // 2
    pooled = act("pool", pw["out_scale"], pw["out_zp"])
    m.op("AVERAGE_POOL_2D", [c3], [pooled], options(Pool2DOptions, padding=VALID, strideH=1, strideW=1,
                                                     filterHeight=half, filterWidth=half))
    flat = m.tensor("flat", (1, 128), dtype, quant=Quant([pw["out_scale"]], [pw["out_zp"]]) if int8 else None)
    m.op("RESHAPE", [pooled, m.const("shape", np.array([1, 128], np.int32))], [flat])
    y = act("y", fc["out_scale"], fc["out_zp"])
    m.op("FULLY_CONNECTED", [flat, weight("w4", fc), bias("b4", fc)], [y], options(FullyConnectedOptions))
    m.output(y)
    return complete_shapes(m)


def block_input(size: int, int8: bool) -> np.ndarray:
    rng = np.random.default_rng(3)
    q = rng.integers(-128, 128, size=(1, size, size, 32)).astype(np.int8)
    return q if int8 else ((q.astype(np.float32) - X_ZP) * np.float32(X_SCALE))



def time_host(module_bytes: bytes, x: np.ndarray, repeat: int, profile: bool) -> tuple[float, float]:
    import iree_py
    module = iree_py.load(module_bytes)
    if profile:
        from iree_py.cli.benchmark import benchmark
        print(benchmark(module, "main", [x], repeat, True), file=sys.stderr)
    return time_calls(lambda: module.main.call(x), repeat)


def time_qemu(module_bytes: bytes, x: np.ndarray, repeat: int) -> tuple[float, float]:
    """The runner's own (median, min) of --repeat calls (irp-run) under qemu-user, in milliseconds."""
    from iree_py.runtime.build import runner_for
    from iree_py.runtime.devices import qemu_target_for
    target = qemu_target_for("aarch64")
    runner = runner_for(target.name, target.cross_cc, target.cross_cflags)
    with tempfile.TemporaryDirectory(prefix="int8-bench-") as tmp:
        d = Path(tmp)
        (d / "m.vmfb").write_bytes(module_bytes)
        (d / "x.bin").write_bytes(x.tobytes())
        cpu = ["-cpu", target.qemu_cpu] if target.qemu_cpu else []
        out = subprocess.run([target.qemu, *cpu, str(runner), str(d / "m.vmfb"), f"--input={d / 'x.bin'}",
                              f"--repeat={repeat}"], capture_output=True, text=True, check=True)
    found = re.search(r"median ([0-9.]+) us, min ([0-9.]+) us", out.stdout)
    if found is None:
        raise RuntimeError(f"no median in the runner's output: {out.stdout!r} {out.stderr!r}")
    return float(found.group(1)) / 1e3, float(found.group(2)) / 1e3


def time_tflite(model: bytes, x: np.ndarray, repeat: int) -> tuple[float, float]:
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_content=model, num_threads=1)
    interp.allocate_tensors()
    index = interp.get_input_details()[0]["index"]

    def call():
        interp.set_tensor(index, x)
        interp.invoke()
    return time_calls(call, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--targets", default="host,arm64")
    parser.add_argument("--size", type=int, default=96)
    parser.add_argument("--profile", action="store_true", help="per-kernel times on the host (stderr)")
    parser.add_argument("--generic-qconv", action="store_true",
                        help="keep every QConv on the generic qconv kernel (no qconv_dot / qdwconv): the before")
    args = parser.parse_args()
    import iree_py
    if args.generic_qconv:
        import iree_py.codegen.llvm.kernel_plan as plan_module
        plan_module.choose_qconv_kernel = lambda dispatch, target: dispatch
    models = {kind: build_block(args.size, kind == "int8") for kind in ("fp32", "int8")}
    inputs = {kind: block_input(args.size, kind == "int8") for kind in ("fp32", "int8")}
    rows = []
    for target in args.targets.split(","):
        ms = {}
        for kind in ("fp32", "int8"):
            module = iree_py.compile(models[kind], target=target)
            if target == "host":
                ms[kind] = time_host(module, inputs[kind], args.repeat, args.profile)
            else:
                ms[kind] = time_qemu(module, inputs[kind], args.repeat)
        rows.append((f"iree-py {target}" + (" (qemu)" if target != "host" else ""), ms["fp32"], ms["int8"]))
    rows.append(("TFLite host (XNNPACK)", *(time_tflite(models[k], inputs[k], args.repeat) for k in ("fp32", "int8"))))
    print(f"MobileNet-like block, input 1x{args.size}x{args.size}x32, {args.repeat} calls: median (min)\n")
    print("| target | fp32 ms | int8 ms | int8 speed-up (fp32/int8), median (min) |")
    print("|---|---:|---:|---:|")
    for name, fp32, int8 in rows:
        print(f"| {name} | {fp32[0]:.3f} ({fp32[1]:.3f}) | {int8[0]:.3f} ({int8[1]:.3f}) | "
              f"{fp32[0] / int8[0]:.2f}x ({fp32[1] / int8[1]:.2f}x) |")
    print("\nqemu-aarch64 times count emulated instructions rather than real Cortex-A55 time "
          "(no cache or pipeline model).")


if __name__ == "__main__":
    main()

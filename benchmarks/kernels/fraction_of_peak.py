"""Each conv/matmul kernel of the zoo models as a fraction of this core's peak f32 FMA throughput.

    python benchmarks/kernels/fraction_of_peak.py [--models squeezenet,resnet50] [--repeat 20] [--top 5]

Each model is compiled for the host and run in the real runtime on one thread with per-kernel
profiling (what `iree-py benchmark --profile` shows). A kernel's flops are those of the Conv, Gemm
and MatMul nodes it was built from (an FMA is 2 flops; shapes from ONNX shape inference); its
GFLOP/s is flops / its median time per call, and its fraction of peak that over fma_peak.py's figure
at the host target's vector width. Prints, per model, the kernels taking the most time and one line
for all its conv/matmul kernels together. Not a test: numbers depend on the machine.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import iree_py  # noqa: E402
from fma_peak import peak_gflops  # noqa: E402
from iree_py.targets import load_target  # noqa: E402
from real_models import data_input, light_model  # noqa: E402

DEFAULT_MODELS = ["squeezenet", "shufflenet", "resnet50", "inception_v1", "inception_v2", "densenet121"]
ROUNDS = 5  # profiled rounds of --repeat calls; the best (least disturbed) round is kept per kernel


@dataclass
class KernelRow:
    kernel: str
    nodes: str
    what: str
    flops: float
    ms: float


def _shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    weights = {i.name for i in model.graph.initializer}
    kept = [v for v in model.graph.input if v.name not in weights]  # declared inputs hide their values
    del bare.graph.input[:]
    bare.graph.input.extend(kept)
    bare.ir_version = max(bare.ir_version, 4)
    inferred = onnx.shape_inference.infer_shapes(bare)
    shapes = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        shapes[v.name] = tuple(d.dim_value for d in v.type.tensor_type.shape.dim)
    for init in model.graph.initializer:
        shapes[init.name] = tuple(init.dims)
    return shapes


def node_flops(model: onnx.ModelProto) -> dict[str, tuple[float, str]]:
    """Node name (as iree-py names it) -> (flops, a short description) for Conv, Gemm and MatMul."""
    shapes = _shapes(model)
    out = {}
    for index, n in enumerate(model.graph.node):
        name = n.name or f"{n.op_type}_{index}"
        if n.op_type == "Conv":
            w, y = shapes[n.input[1]], shapes[n.output[0]]
            group = next((a.i for a in n.attribute if a.name == "group"), 1)
            out[name] = (2.0 * np.prod(y) * np.prod(w[1:]),
                         f"conv {w[2]}x{w[3]} {w[1] * group}->{w[0]}{f' g{group}' if group > 1 else ''} "
                         f"out {y[2]}x{y[3]}")
        elif n.op_type in ("Gemm", "MatMul"):
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            k = a[-1] if n.op_type == "MatMul" or not any(x.name == "transA" and x.i for x in n.attribute) else a[0]
            out[name] = (2.0 * np.prod(y) * k, f"{n.op_type.lower()} {'x'.join(map(str, y))} k={k}")
    return out


def profile_model(name: str, repeat: int) -> list[KernelRow]:
    model = light_model(name)
    flops = node_flops(model)
    module = iree_py.load(iree_py.compile(model.SerializeToString(), target="host"), threads=1)
    x = data_input(model)
    fn = module.main
    sources = {}
    for d in module.module.debug_info or []:
        exe = module.module.executables[d.executable]
        sources.setdefault(exe.entry_points[d.entry_point].name, []).extend(d.source_nodes)  # every call site
    fn(x)
    best: dict[str, float] = {}
    for _ in range(ROUNDS):
        module.device.set_profiling(True)
        for _ in range(repeat):
            fn(x)
        module.device.set_profiling(False)
        for p in module.device.profile():
            if p.dispatches:
                per_call = p.nanoseconds / repeat / 1e6
                best[p.entry_point] = min(best.get(p.entry_point, float("inf")), per_call)
    rows = []
    for kernel, ms in best.items():
        nodes = sources.get(kernel, [])
        counted = [flops[n] for n in nodes if n in flops]
        if counted:
            what = counted[0][1] + (f" (x{len(counted)})" if len(counted) > 1 else "")
            rows.append(KernelRow(kernel, ", ".join(nodes), what, sum(f for f, _ in counted), ms))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--top", type=int, default=5, help="kernels shown per model, by time")
    args = parser.parse_args()
    bits = load_target("host").vector_bits
    peak = peak_gflops(bits)
    print(f"peak: {peak:.1f} GFLOP/s f32 on one thread at {bits}-bit vectors (fma_peak.py)\n")
    print("| model | kernel | shape | ms | GFLOP/s | of peak |")
    print("|---|---|---|---:|---:|---:|")
    for name in args.models.split(","):
        rows = sorted(profile_model(name, args.repeat), key=lambda r: -r.ms)
        for r in rows[:args.top]:
            g = r.flops / r.ms / 1e6
            print(f"| {name} | {r.kernel} | {r.what} | {r.ms:.3f} | {g:.1f} | {100 * g / peak:.0f}% |")
        total_ms, total_flops = sum(r.ms for r in rows), sum(r.flops for r in rows)
        g = total_flops / total_ms / 1e6
        print(f"| {name} | all {len(rows)} conv/matmul kernels | {total_flops / 1e9:.2f} GFLOP | {total_ms:.3f} "
              f"| {g:.1f} | **{100 * g / peak:.0f}%** |")


if __name__ == "__main__":
    main()

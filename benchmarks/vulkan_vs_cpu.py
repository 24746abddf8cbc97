"""iree-py's Vulkan backend against its CPU backend on the zoo architectures, in one run.

    python benchmarks/vulkan_vs_cpu.py [--models squeezenet,shufflenet,inception_v1] [--repeat 5] [--rounds 2]

Each model (the onnx package's light zoo, tests/e2e/real_models.py) is compiled for `host` and for
`vulkan` and run on the same input; latency is the median of --repeat calls after a warm-up, the
best of --rounds rounds in which the two take turns (1 CPU thread). "device ms" is the sum of the
Vulkan kernels' own times from timestamp queries (benchmark --profile). On this machine the Vulkan
device is lavapipe, Mesa's CPU implementation: the figures track regressions of the SPIR-V backend
and the driver, not GPU speed. The outputs are checked to agree (max abs difference / max |cpu|).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import iree_py  # noqa: E402
from timing import time_calls  # noqa: E402
from real_models import data_input, light_model, with_logits  # noqa: E402

DEFAULT_MODELS = ["squeezenet", "shufflenet", "inception_v1"]


def outputs(result) -> list[np.ndarray]:
    return [np.asarray(r) for r in (result if isinstance(result, (tuple, list)) else [result])]


def device_ms(module, x: np.ndarray, repeat: int) -> float:
    module.device.set_profiling(True)
    for _ in range(repeat):
        module.main(x)
    module.device.set_profiling(False)
    return sum(p.device_nanoseconds for p in module.device.profile()) / repeat / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print("| model | cpu ms | vulkan ms | vulkan / cpu | vulkan device ms | max diff / max |cpu| |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios = []
    for name in args.models.split(","):
        model = with_logits(light_model(name)).SerializeToString()
        x = data_input(with_logits(light_model(name)))
        cpu = iree_py.load(iree_py.compile(model, target="host"), threads=1)
        gpu = iree_py.load(iree_py.compile(model, target="vulkan"), device="vulkan")
        agreement = max(float(np.max(np.abs(g - c)) / max(float(np.max(np.abs(c))), 1e-30))
                        for c, g in zip(outputs(cpu.main(x)), outputs(gpu.main(x))))  # the worst output
        best_cpu = best_gpu = float("inf")
        for _ in range(args.rounds):
            best_cpu = min(best_cpu, time_calls(lambda: cpu.main(x), args.repeat)[0])
            best_gpu = min(best_gpu, time_calls(lambda: gpu.main(x), args.repeat)[0])
        ratios.append(best_gpu / best_cpu)
        print(f"| {name} | {best_cpu:.2f} | {best_gpu:.2f} | {best_gpu / best_cpu:.2f} | "
              f"{device_ms(gpu, x, args.repeat):.2f} | {agreement:.1e} |", flush=True)
    print(f"| geomean | | | {float(np.exp(np.mean(np.log(ratios)))):.2f} | | |")


if __name__ == "__main__":
    main()

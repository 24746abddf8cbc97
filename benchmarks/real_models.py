"""iree-py versus its reference on the real pretrained models of tests/real_models (issue 14), 1 thread.

    python benchmarks/real_models.py [--models NAME,...] [--repeat 15] [--rounds 3] [--target host]

Per model: compile seconds and module size (iree-py), median latency of --repeat calls after one
warm-up call, and peak memory (growth of VmHWM), each engine in fresh processes, --rounds rounds
alternating with the peer (onnxruntime for ONNX; for TFLite the LiteRT interpreter as users get it, with
its default XNNPACK delegate), best median kept: the helpers of
benchmarks/compare_onnxruntime.py. Inputs are the first call of the model's first case in the test
catalog. Ratios are iree-py / reference (below 1: iree-py faster or smaller); the geomean line covers
the models that ran. A model that does not compile shows its error class instead of numbers.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests" / "real_models"))

from compare_onnxruntime import measure_interleaved  # noqa: E402
from wheel_cache import model_path  # noqa: E402
from wheel_models import MODELS  # noqa: E402

import iree_py  # noqa: E402


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(m.name for m in MODELS))
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", default="host")
    parser.add_argument("--threads", type=int, default=1, help="threads for every engine (iree-py and its peer)")
    args = parser.parse_args()
    wanted = args.models.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for model in [m for m in MODELS if m.name in wanted]:
            path = model_path(model)
            start = time.perf_counter()
            try:
                data = iree_py.compile(str(path), target=args.target, dims=dict(model.dims) or None)
            except Exception as e:  # noqa: BLE001 - the table shows it
                rows.append((model, time.perf_counter() - start, None, type(e).__name__))
                print(f"{model.name}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", file=sys.stderr)
                continue
            compile_s = time.perf_counter() - start
            module_path = tmp / f"{model.name}.vmfb"
            module_path.write_bytes(data)
            inputs_path = tmp / f"{model.name}.npz"
            np.savez(inputs_path, *model.cases[0].calls()[0])
            peer = "onnxruntime" if model.kind == "onnx" else "litert"
            try:
                ours, ref = measure_interleaved([("iree-py", module_path, inputs_path, ""),
                                                 (peer, path, inputs_path, "xnnpack")], args.repeat, args.rounds,
                                                args.threads)
            except Exception as e:  # noqa: BLE001 - a crash at run time is a result too
                rows.append((model, compile_s, len(data), f"run: {type(e).__name__}"))
                continue
            rows.append((model, compile_s, len(data), (ours, ref, peer)))
            print(f"measured {model.name}", file=sys.stderr)
    print(f"{'model':<34}{'peer':>6}{'compile s':>10}{'module MB':>10}{'iree ms':>10}{'peer ms':>10}{'latency x':>10}"
          f"{'iree MB':>9}{'peer MB':>9}{'memory x':>9}")
    latency, memory = [], []
    for model, compile_s, size, result in rows:
        if isinstance(result, str):
            size_text = f"{size / 1e6:>10.2f}" if size else f"{'-':>10}"
            print(f"{model.name:<34}{'':>6}{compile_s:>10.2f}{size_text}   {result}")
            continue
        ours, ref, peer = result
        mem_ours, mem_ref = ours["peak_rss_growth_kb"] / 1024, ref["peak_rss_growth_kb"] / 1024
        lat_x, mem_x = ours["median_ms"] / ref["median_ms"], mem_ours / max(mem_ref, 0.1)
        latency.append(lat_x)
        memory.append(mem_x)
        print(f"{model.name:<34}{'ort' if peer == 'onnxruntime' else 'lrt':>6}{compile_s:>10.2f}{size / 1e6:>10.2f}"
              f"{ours['median_ms']:>10.3f}{ref['median_ms']:>10.3f}{lat_x:>10.2f}{mem_ours:>9.1f}{mem_ref:>9.1f}"
              f"{mem_x:>9.2f}")
    print(f"{'geomean (' + str(len(latency)) + ' models)':<34}{'':>6}{'':>10}{'':>10}{'':>10}{'':>10}"
          f"{geomean(latency):>10.2f}{'':>9}{'':>9}{geomean(memory):>9.2f}")


if __name__ == "__main__":
    main()

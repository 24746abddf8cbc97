"""One module, many input sizes: latency per size of iree-py's dynamic-shape modules next to
onnxruntime (one thread) in the same run, with the peak memory of each call.

    python benchmarks/dynamic_sizes.py [--repeat 20] [--rounds 3] [--threads 1] [--models encoder_block,...]

Each model of tests/dynamic/dyn_models.py is compiled ONCE for the host (symbolic dims stay
symbolic: no recompilation, no module growth per size) and called at every size of SIZES. Latency
is the median of --repeat calls after one warm-up call, the best of --rounds rounds in which the
three engines take turns; every engine runs on --threads threads. "ratio" is iree-py /
onnxruntime (< 1: iree-py is faster). "static ms" is the same model compiled for that one size
(`dims=`), and "dyn / static" what the symbolic dims cost. Peak is the arena plus the pool's
high-water mark of the call.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "dynamic"))

import iree_py  # noqa: E402
from timing import time_calls  # noqa: E402
from dyn_models import MODELS  # noqa: E402

SIZES = {
    "mlp": [{"batch": 1}, {"batch": 16}, {"batch": 256}],
    "encoder_block": [{"batch": 1, "seq": 16}, {"batch": 1, "seq": 64}, {"batch": 4, "seq": 128}],
    "conv_lstm": [{"T": 16}, {"T": 100}, {"T": 400}],
    "image_net": [{"height": 32, "width": 32}, {"height": 96, "width": 128}, {"height": 224, "width": 224}],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", default=",".join(SIZES))
    args = parser.parse_args()
    print(f"threads: {args.threads}")
    print("| model | sizes | module bytes | iree-py ms | static ms | dyn / static | onnxruntime ms | ratio | peak KiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.models.split(","):
        model, make_inputs = MODELS[name]()
        data = iree_py.compile(model.SerializeToString(), target="host")
        module = iree_py.load(data, threads=args.threads)
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.log_severity_level = 3
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        for size in SIZES[name]:
            inputs = make_inputs(size)
            static = iree_py.load(iree_py.compile(model.SerializeToString(), target="host", dims=size),
                                  threads=args.threads)
            ours = fixed = theirs = float("inf")
            for _ in range(args.rounds):
                ours = min(ours, time_calls(lambda: module.main.call(*inputs), args.repeat)[0])
                fixed = min(fixed, time_calls(lambda: static.main.call(*inputs), args.repeat)[0])
                theirs = min(theirs, time_calls(lambda: session.run(None, dict(zip(names, inputs))), args.repeat)[0])
            module.main.call(*inputs)
            peak = module.peak_bytes
            label = ", ".join(f"{k}={v}" for k, v in size.items())
            print(f"| {name} | {label} | {len(data)} | {ours:.3f} | {fixed:.3f} | {ours / fixed:.2f} | {theirs:.3f} | "
                  f"{ours / theirs:.2f} | {peak / 1024:.0f} |")


if __name__ == "__main__":
    main()

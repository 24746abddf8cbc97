"""One module, many input sizes: latency per size of iree-py's dynamic-shape modules next to
onnxruntime (one thread) in the same run, with the peak memory of each call.

    python benchmarks/dynamic_sizes.py [--repeat 20] [--rounds 3] [--min-ms 100] [--threads 1] [--models encoder_block,...]

Each model of tests/dynamic/dyn_models.py is compiled ONCE for the host (symbolic dims stay
symbolic: no recompilation, no module growth per size) and called at every size of SIZES. Latency
is the median of --repeat calls (or of as many as take --min-ms, if that is more) after warm-up
calls, the best of --rounds rounds in which the three engines take turns, each round of each
engine in a fresh process; every engine runs on --threads threads. "ratio" is iree-py /
onnxruntime (< 1: iree-py is faster). "static ms" is the same model compiled for that one size
(`dims=`), and "dyn / static" what the symbolic dims cost. Peak is the arena plus the pool's
high-water mark of the call.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "dynamic"))

import iree_py  # noqa: E402
from dyn_models import MODELS  # noqa: E402

SIZES = {
    "mlp": [{"batch": 1}, {"batch": 16}, {"batch": 256}],
    "encoder_block": [{"batch": 1, "seq": 16}, {"batch": 1, "seq": 64}, {"batch": 4, "seq": 128}],
    "conv_lstm": [{"T": 16}, {"T": 100}, {"T": 400}],
    "image_net": [{"height": 32, "width": 32}, {"height": 96, "width": 128}, {"height": 224, "width": 224}],
}


# Runs in a fresh process: load one engine's model, time it on the inputs, print JSON. A process
# of its own per round: where the arena and pool land moved one module's latency by up to 1.6x
# between processes on this machine, so one process per engine would measure its luck.
WORKER = r'''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[5])
from timing import time_calls
engine, path, inputs_path, repeat, _, threads, min_seconds = sys.argv[1:8]
z = np.load(inputs_path)
xs = [z[f"arr_{i}"] for i in range(len(z.files))]
if engine == "onnxruntime":
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.log_severity_level = 3
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    run = lambda: session.run(None, dict(zip(names, xs)))
else:
    import iree_py
    module = iree_py.load(open(path, "rb").read(), threads=int(threads))
    run = lambda: module.main.call(*xs)
run()  # warm up, so the pace time_calls takes from its first call is a warm call's
ms = time_calls(run, int(repeat), float(min_seconds))[0]
print(json.dumps({"ms": ms, "peak": 0 if engine == "onnxruntime" else module.peak_bytes}))
'''


def measure(engine: str, path: Path, inputs: Path, repeat: int, threads: int, min_seconds: float) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, engine, str(path), str(inputs), str(repeat),
                          str(Path(__file__).parent), str(threads), str(min_seconds)], capture_output=True, text=True, check=True,
                         cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--min-ms", type=float, default=100.0,
                        help="each median is of at least as many calls as take this long (default 100)")
    parser.add_argument("--models", default=",".join(SIZES))
    args = parser.parse_args()
    print(f"threads: {args.threads}")
    print("| model | sizes | module bytes | iree-py ms | static ms | dyn / static | onnxruntime ms | ratio | peak KiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in args.models.split(","):
            model, make_inputs = MODELS[name]()
            data = iree_py.compile(model.SerializeToString(), target="host")
            paths = {"dynamic": work / f"{name}.vmfb", "onnxruntime": work / f"{name}.onnx"}
            paths["dynamic"].write_bytes(data)
            paths["onnxruntime"].write_bytes(model.SerializeToString())
            for size in SIZES[name]:
                inputs = work / "inputs.npz"
                np.savez(inputs, *make_inputs(size))
                paths["static"] = work / f"{name}_static.vmfb"
                paths["static"].write_bytes(iree_py.compile(model.SerializeToString(), target="host", dims=size))
                best = {engine: float("inf") for engine in paths}
                peak = 0
                for _ in range(args.rounds):  # the engines take turns, each in a fresh process
                    for engine, path in paths.items():
                        result = measure("onnxruntime" if engine == "onnxruntime" else "iree-py", path, inputs,
                                         args.repeat, args.threads, args.min_ms / 1e3)
                        best[engine] = min(best[engine], result["ms"])
                        peak = result["peak"] if engine == "dynamic" else peak
                ours, fixed, theirs = best["dynamic"], best["static"], best["onnxruntime"]
                label = ", ".join(f"{k}={v}" for k, v in size.items())
                print(f"| {name} | {label} | {len(data)} | {ours:.3f} | {fixed:.3f} | {ours / fixed:.2f} | "
                      f"{theirs:.3f} | {ours / theirs:.2f} | {peak / 1024:.0f} |", flush=True)


if __name__ == "__main__":
    main()

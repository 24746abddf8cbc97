"""iree-py versus onnxruntime (1 thread, or --threads N for both) on the example models and real
architectures, in one run.

    python benchmarks/compare_onnxruntime.py [--models small_cnn,mlp,squeezenet] [--repeat 20] [--threads 2]

For each model: compile time and module size (iree-py), median latency of repeated runs, and peak
memory (the growth of the process's peak RSS, VmHWM, from loading and running the model, measured in
a fresh process per engine so neither sees the other's allocations). Each engine is measured in
--rounds fresh processes, alternating with its peer, and the best median is kept, so a burst of load
from elsewhere on the machine hits one round rather than one engine. Ratios are iree-py / onnxruntime:
below 1 means iree-py is faster or smaller.

The worker and measure_interleaved are shared with benchmarks/real_models.py: engines "iree-py",
"onnxruntime" and "litert" (LiteRT's builtin kernels; option "xnnpack" adds its delegate), inputs one
.npy or an .npz of positional inputs arr_0, arr_1, ...
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

DEFAULT_MODELS = ["small_cnn", "mlp", "squeezenet", "inception_v1", "resnet50"]

# Runs in a fresh process: load + run one engine, print JSON {median_ms, peak_rss_growth_kb}.
WORKER = r'''
import json, sys, time
import numpy as np
def peak_rss_kb():  # VmHWM belongs to this process's own address space (ru_maxrss can carry the parent's)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
engine, model_path, input_path, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
option = sys.argv[5] if len(sys.argv) > 5 else ""
threads = int(sys.argv[6]) if len(sys.argv) > 6 else 1
if input_path.endswith(".npz"):
    z = np.load(input_path)
    xs = [z[f"arr_{i}"] for i in range(len(z.files))]
else:
    xs = [np.load(input_path)]
if engine == "iree-py":
    import iree_py
    from iree_py.runtime import capi
    capi.library()
    base = peak_rss_kb()
    m = iree_py.load(model_path, threads=threads)
    (fn,) = m.functions.values()
    run = lambda: fn.call(*xs)
elif engine == "litert":
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    base = peak_rss_kb()
    resolver = OpResolverType.AUTO if option == "xnnpack" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = Interpreter(model_path=model_path, num_threads=threads, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    indices = [d["index"] for d in it.get_input_details()]
    def run():
        for i, x in zip(indices, xs):
            it.set_tensor(i, x)
        it.invoke()
else:
    import onnxruntime as ort
    base = peak_rss_kb()
    o = ort.SessionOptions(); o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    s = ort.InferenceSession(model_path, o, providers=["CPUExecutionProvider"])
    feed = dict(zip([i.name for i in s.get_inputs()], xs))
    run = lambda: s.run(None, feed)
run()
times = []
for _ in range(repeat):
    t = time.perf_counter(); run(); times.append(time.perf_counter() - t)
peak = peak_rss_kb()
print(json.dumps({"median_ms": 1000 * sorted(times)[len(times) // 2], "peak_rss_growth_kb": peak - base}))
'''


def model_and_input(name: str, tmp: Path) -> tuple[Path, Path]:
    import numpy as np
    import onnx
    if (ROOT / "examples" / f"{name}.onnx").exists():
        return ROOT / "examples" / f"{name}.onnx", ROOT / "examples" / f"{name}_input.npy"
    from real_models import data_input, light_model
    m = light_model(name)
    onnx.save(m, tmp / f"{name}.onnx")
    np.save(tmp / f"{name}.npy", data_input(m))
    return tmp / f"{name}.onnx", tmp / f"{name}.npy"


def measure(engine: str, model_path: Path, input_path: Path, repeat: int, option: str = "", threads: int = 1) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, engine, str(model_path), str(input_path), str(repeat), option,
                          str(threads)],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_interleaved(runs: list[tuple[str, Path, Path, str]], repeat: int, rounds: int, threads: int = 1) -> list[dict]:
    """Each (engine, model, input, option) measured in `rounds` fresh processes, the engines taking turns
    within each round, every engine on `threads` threads; per engine the best median latency and the
    smallest peak-memory growth."""
    best: list[dict] = [{} for _ in runs]
    for _ in range(rounds):
        for i, (engine, model_path, input_path, option) in enumerate(runs):
            got = measure(engine, model_path, input_path, repeat, option, threads)
            best[i] = {key: min(value, best[i].get(key, value)) for key, value in got.items()}
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per engine, alternating")
    parser.add_argument("--target", default="host")
    parser.add_argument("--threads", type=int, default=1, help="threads for every engine (iree-py, onnxruntime)")
    args = parser.parse_args()
    import iree_py
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for name in args.models.split(","):
            model_path, input_path = model_and_input(name, tmp)
            start = time.perf_counter()
            data = iree_py.compile(str(model_path), target=args.target)
            compile_s = time.perf_counter() - start
            module_path = tmp / f"{name}.vmfb"
            module_path.write_bytes(data)
            ours, ort = measure_interleaved([("iree-py", module_path, input_path, ""),
                                             ("onnxruntime", model_path, input_path, "")], args.repeat, args.rounds,
                                            args.threads)
            rows.append((name, compile_s, len(data), model_path.stat().st_size, ours, ort))
            print(f"measured {name}", file=sys.stderr)
    print(f"{'model':<14}{'compile s':>10}{'module KB':>11}{'onnx KB':>9}{'iree-py ms':>12}{'ort ms':>9}"
          f"{'latency x':>10}{'iree-py MB':>11}{'ort MB':>8}{'memory x':>9}")
    for name, compile_s, size, onnx_size, ours, ort in rows:
        mem_ours, mem_ort = ours["peak_rss_growth_kb"] / 1024, ort["peak_rss_growth_kb"] / 1024
        print(f"{name:<14}{compile_s:>10.2f}{size / 1024:>11.1f}{onnx_size / 1024:>9.1f}{ours['median_ms']:>12.3f}"
              f"{ort['median_ms']:>9.3f}{ours['median_ms'] / ort['median_ms']:>10.2f}{mem_ours:>11.1f}{mem_ort:>8.1f}"
              f"{mem_ours / max(mem_ort, 0.1):>9.2f}")


if __name__ == "__main__":
    main()

"""iree-py on the emulated microcontroller boards, in one run: the runtime's size per target, the
firmware's size per board, upload speed over the emulated UART, and per model the cycles the board
counts for one inference (median of --repeat runs on the board) and the host's wall time of one
run including moving tensors over the link. Next to it, for scale, onnxruntime's latency for the
same model on this host (1 thread): the boards are emulated, so only the cycle counts are
properties of iree-py; wall times are qemu's.

    python benchmarks/microcontrollers.py [--targets cortex-m4,cortex-m7,riscv32] [--repeat 5]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from iree_py.targets import load_target  # noqa: E402
from iree_py.compiler import CompileOptions, compile_model  # noqa: E402
from iree_py.module.reader import read_module  # noqa: E402
from iree_py.runtime import board  # noqa: E402
from iree_py.runtime.board import QemuBoard  # noqa: E402
from iree_py.runtime.serial_device import SerialDevice  # noqa: E402
from tests.boards.kws_model import kws_input, make_kws_model  # noqa: E402

EXAMPLES = ROOT / "examples"


def models(tmp: Path) -> dict[str, tuple[Path, np.ndarray]]:
    kws = make_kws_model(tmp / "kws_cnn.onnx")
    return {"mlp": (EXAMPLES / "mlp.onnx", np.load(EXAMPLES / "mlp_input.npy")),
            "kws_cnn": (kws, kws_input()),
            "small_cnn": (EXAMPLES / "small_cnn.onnx", np.load(EXAMPLES / "small_cnn_input.npy"))}


def onnxruntime_ms(model: Path, x: np.ndarray, repeat: int = 50) -> float:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: x}
    session.run(None, feed)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def size_table(targets: list[str]) -> None:
    print("| target | runtime .text | .rodata | .data | .bss | firmware code (flash) | firmware RAM (own) |")
    print("|---|---|---|---|---|---|---|")
    for name in targets:
        target = load_target(name)
        sizes = board.runtime_size(target)
        sections = board.elf_size(target, board.build_firmware(target))
        flash = sum(v for k, v in sections.items() if k in (".vectors", ".text", ".rodata", ".data", ".init", ".isr_vector"))
        ram = sum(v for k, v in sections.items() if k in (".data", ".bss", ".stack"))
        print(f"| {name} | {sizes['.text']:,} | {sizes['.rodata']:,} | {sizes['.data']:,} | {sizes['.bss']:,} "
              f"| {flash:,} | {ram:,} |")


def run_table(targets: list[str], repeat: int, tmp: Path) -> None:
    cases = models(tmp)
    print("\n| target | model | module bytes | upload KiB/s | cycles (median) | ms at board clock "
          "| host wall ms / run | onnxruntime ms (host) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in targets:
        target = load_target(name)
        hz = board.board_cycles_per_second(target)
        with QemuBoard(target) as emulator:
            for model_name, (model, x) in cases.items():
                data = compile_model(model, CompileOptions(target=name))
                module = read_module(data)
                device = SerialDevice(emulator.url)
                try:
                    upload = device.upload(data, module.executables[0].arch)
                    start = time.perf_counter()
                    device.run(module.functions[0].name, [x])
                    wall_ms = 1e3 * (time.perf_counter() - start)
                    bench = device.benchmark(repeat)
                finally:
                    device.close()
                print(f"| {name} | {model_name} | {len(data):,} | {upload.bytes_per_second / 1024:.1f} "
                      f"| {bench.median_cycles:,} | {1e3 * bench.median_cycles / hz:.1f} | {wall_ms:.0f} "
                      f"| {onnxruntime_ms(model, x):.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="cortex-m4,cortex-m7,riscv32")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    targets = args.targets.split(",")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        size_table(targets)
        run_table(targets, args.repeat, Path(tmp))


if __name__ == "__main__":
    main()

"""Write the seed corpora of the C fuzz harnesses (runtime_c/fuzz/) and what they trust.

    python3 runtime_c/fuzz/make_corpus.py --out=DIR [--test-modules=DIR] [--test-kernels=SO] [--quick]

DIR/corpus/module   modules compiled from small models (and the bundled examples) for every target,
                    and the runtime's test modules (runtime_c/tests/make_test_modules.py)
DIR/corpus/flat     the modules whose executables are flat images (cortex-m4/m7, riscv32, x86_64 flat)
DIR/corpus/elf      the ELF kernel libraries inside those modules, and the test kernel library
DIR/corpus/device   host-to-board byte streams recorded from SerialDevice sessions with device-sim
DIR/trusted_code.txt  `code CRC32 LENGTH [FLAT_OFFSETS...]` per kernel blob a harness may run: this
                    build's architecture's code from the compiler and from the good test modules
DIR/device_modules  the modules the device harness's board storage accepts (this architecture, ELF)

--quick compiles only for this machine's targets and records fewer sessions (the pytest smoke run).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import iree_py  # noqa: E402
from iree_py.errors import IreePyError  # noqa: E402
from iree_py.module.reader import read_module  # noqa: E402
from iree_py.targets import load_target  # noqa: E402

ALL_TARGETS = ["host", "x86_64", "arm64", "riscv64", "riscv64-rvv", "cortex-m4", "cortex-m7", "riscv32", "x86_64-flat"]
QUICK_TARGETS = ["host", "x86_64-flat", "cortex-m4"]
# Host modules up to this size go to the device harness (its board has 256 KiB of module storage).
DEVICE_MODULE_LIMIT = 96 << 10
BOARD_BYTES = 256 << 10


# --- small models ------------------------------------------------------------------------------

def _model(nodes, inputs, outputs, initializers=(), name="m") -> bytes:
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _f32(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def small_models() -> dict[str, bytes]:
    """Models whose modules stay small (fast fuzzing) and together use dispatches, constants, the
    pool (a symbolic dim), and branches and loops (If, Loop)."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], rng.standard_normal(32).astype(np.float32).tolist())
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], rng.standard_normal(4).astype(np.float32).tolist())
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    models = {
        "add": _model([helper.make_node("Add", ["x", "y"], ["s"]), helper.make_node("Relu", ["s"], ["z"])],
                      [_f32("x", [1, 4]), _f32("y", [1, 4])], [_f32("z", [1, 4])]),
        "gemm": _model([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["z"])],
                       [_f32("x", [2, 8])], [_f32("z", [2, 4])], [w, b]),
        "dynamic": _model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Add", ["r", "r"], ["z"])],
                          [_f32("x", ["n", 4])], [_f32("z", ["n", 4])]),
    }
    then_graph = helper.make_graph([helper.make_node("Add", ["x", "one"], ["t"])], "then", [], [_f32("t", [3])], [one])
    else_graph = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["e"])], "else", [], [_f32("e", [3])], [one])
    models["if"] = _model(
        [helper.make_node("If", ["c"], ["z"], then_branch=then_graph, else_branch=else_graph)],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _f32("x", [3])], [_f32("z", [3])])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["acc_in", "one"], ["acc_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), _f32("acc_in", [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), _f32("acc_out", [1])], [one])
    models["loop"] = _model(
        [helper.make_node("Constant", [], ["true"], value=helper.make_tensor("v", TensorProto.BOOL, [], [True])),
         helper.make_node("Loop", ["trips", "true", "acc"], ["z"], body=body)],
        [helper.make_tensor_value_info("trips", TensorProto.INT64, []), _f32("acc", [1])], [_f32("z", [1])])
    return models


def example_models() -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in sorted((ROOT / "examples").glob("*.onnx"))}


def target_for(name: str):
    if name == "x86_64-flat":
        return dataclasses.replace(load_target("x86_64"), name="x86_64-flat", executable_format="flat")
    return name


def compile_all(models: dict[str, bytes], targets: list[str]) -> dict[str, bytes]:
    """`model-target` -> module, for each pair that compiles (boards refuse dynamic models)."""
    modules = {}
    for target in targets:
        for name, model in models.items():
            try:
                modules[f"{name}-{target}"] = iree_py.compile(model, target=target_for(target))
            except IreePyError as e:
                print(f"make_corpus: {name} for {target}: {str(e).splitlines()[0]}", file=sys.stderr)
    return modules


def executables(data: bytes, payloads: bool = True) -> list:
    """The module's executables; none for what does not read as a module (the test modules' bad ones)."""
    try:
        return read_module(data, payloads=payloads).executables
    except IreePyError:
        return []


# --- trusted code ------------------------------------------------------------------------------

def trusted_code_lines(modules: dict[str, bytes], arch: str) -> list[str]:
    lines = set()
    for data in modules.values():
        for executable in executables(data):
            if executable.arch != arch:
                continue
            offsets = " ".join(str(e.code_offset) for e in executable.entry_points) if executable.format == "flat" else ""
            lines.add(f"code {zlib.crc32(executable.code):08x} {len(executable.code)} {offsets}".rstrip())
    return sorted(lines)


def good_test_modules(folder: Path) -> dict[str, bytes]:
    """The runtime's test modules that load: those bad_modules.txt does not list."""
    bad = {line.split("\t")[0] for line in (folder / "bad_modules.txt").read_text().splitlines() if line}
    return {f"test-{p.stem}": p.read_bytes() for p in sorted(folder.glob("*.vmfb")) if p.name not in bad}


# --- device sessions ---------------------------------------------------------------------------

class RecordingLink:
    """Everything SerialDevice sends, in order: the stream the board receives."""

    def __init__(self) -> None:
        self.sent = bytearray()

    def device(self, url: str):
        from iree_py.runtime.serial_device import SerialDevice
        link = self

        class RecordingDevice(SerialDevice):
            def _write(self, data: bytes) -> None:
                link.sent += data
                super()._write(data)

        return RecordingDevice(url)


def build_device_sim(out: Path) -> Path:
    build = out / "device-sim-build"
    subprocess.run(["make", "-s", "-C", str(ROOT / "runtime_c"), f"BUILD_DIR={build}", "device-sim"], check=True,
                   env={**os.environ, "MAKEFLAGS": ""})
    return build / "device-sim"


def zero_inputs(module: bytes, function: str = "main") -> list[np.ndarray]:
    fn = next(f for f in read_module(module, payloads=False).functions if f.name == function)
    arrays = []
    for sig in fn.inputs:
        shape = tuple(1 if d < 0 else d for d in sig.shape)
        arrays.append(np.zeros(shape, dtype=sig.dtype.numpy))
    return arrays


def record_sessions(sim: Path, modules: dict[str, bytes], arch: str, quick: bool) -> dict[str, bytes]:
    """name -> the bytes one session sent; each session against a fresh simulator."""
    from iree_py.errors import IreeRuntimeError
    sessions = {}

    def session(name: str, steps) -> None:
        process = subprocess.Popen([str(sim), f"--ram={BOARD_BYTES}", f"--module-capacity={BOARD_BYTES}",
                                    f"--arch={arch}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            port = int(process.stdout.readline().rsplit(":", 1)[1])
            link = RecordingLink()
            board = link.device(f"socket://127.0.0.1:{port}")
            try:
                steps(board)
            except IreeRuntimeError as e:
                print(f"make_corpus: session {name}: {str(e).splitlines()[0]}", file=sys.stderr)
            board.close()
            sessions[name] = bytes(link.sent)
        finally:
            process.terminate()
            process.wait(timeout=10)

    for name, module in modules.items():
        inputs = zero_inputs(module)

        def full(board, module=module, inputs=inputs):
            board.status()
            board.upload(module, arch)
            board.run("main", inputs)
            board.benchmark(3)
            board.run("main", inputs, profile=True)

        def refused(board, module=module, inputs=inputs):
            board.upload(module, arch)
            board.run("nope", inputs)

        session(f"{name}-full", full)
        if not quick:
            session(f"{name}-refused", refused)
    return sessions


# --- main ----------------------------------------------------------------------------------------

def write_folder(folder: Path, files: dict[str, bytes], suffix: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / f"{name}{suffix}").write_bytes(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--test-modules", type=Path, help="runtime_c/tests/make_test_modules.py output")
    parser.add_argument("--test-kernels", type=Path, help="the test kernel library (test_kernels.so)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    arch = read_module(iree_py.compile(small_models()["add"], target="host"), payloads=False).executables[0].arch

    models = small_models() if args.quick else {**small_models(), **example_models()}
    compiled = compile_all(models, QUICK_TARGETS if args.quick else ALL_TARGETS)
    tests = good_test_modules(args.test_modules) if args.test_modules else {}
    all_tests = ({f"test-{p.stem}": p.read_bytes() for p in sorted(args.test_modules.glob("*.vmfb"))}
                 if args.test_modules else {})

    write_folder(out / "corpus" / "module", {**compiled, **all_tests}, ".vmfb")
    flat = {k: v for k, v in {**compiled, **all_tests}.items()
            if any(e.format == "flat" for e in executables(v, payloads=False))}
    write_folder(out / "corpus" / "flat", flat, ".vmfb")
    elf = {}
    for name, data in {**compiled, **tests}.items():
        for i, executable in enumerate(executables(data)):
            if executable.format == "elf":
                elf[f"{name}-{i}-{executable.arch}"] = executable.code
    if args.test_kernels:
        elf["test_kernels"] = args.test_kernels.read_bytes()
    write_folder(out / "corpus" / "elf", elf, ".so")

    trusted = {**compiled, **tests}
    (out / "trusted_code.txt").write_text("\n".join(trusted_code_lines(trusted, arch)) + "\n")
    device = {k: v for k, v in trusted.items()
              if len(v) <= DEVICE_MODULE_LIMIT and all(e.arch == arch and e.format == "elf"
                                                     for e in executables(v, payloads=False))}
    write_folder(out / "device_modules", device, ".vmfb")
    session_modules = {k: v for k, v in device.items() if not k.startswith("test-")}
    if args.quick:
        session_modules = dict(list(session_modules.items())[:2])
    sessions = record_sessions(build_device_sim(out), session_modules, arch, args.quick)
    write_folder(out / "corpus" / "device", sessions, ".bin")
    for harness in ("module", "flat", "elf", "device"):
        print(f"make_corpus: {harness}: {len(list((out / 'corpus' / harness).iterdir()))} seeds")
    print(f"make_corpus: {len(device)} device modules, {len(trusted_code_lines(trusted, arch))} trusted kernel blobs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

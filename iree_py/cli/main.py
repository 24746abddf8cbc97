"""The `iree-py` command: compile | run | benchmark | debug | flash | dump | build-runtime | conformance."""
from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

import numpy as np

from iree_py.errors import INTERNAL_ERROR_EXIT_CODE, InternalCompilerError, IreePyError, internal_error


def _cmd_compile(args: argparse.Namespace) -> int:
    from iree_py.compiler import CompileOptions, compile_model
    parsed = [_parse_dim(d) for d in args.dim]
    dims = {name: v for name, v in parsed if isinstance(v, int)}
    dim_bounds = {name: v for name, v in parsed if isinstance(v, tuple)}
    after = "all" if args.print_ir_after_all else set(args.print_ir_after or []) or None
    from iree_py.fit import parse_size
    data = compile_model(args.model, CompileOptions(target=args.target, dims=dims or None, print_ir_after=after,
                                                    dim_bounds=dim_bounds or None,
                                                    pool_bytes=parse_size(args.pool_bytes) if args.pool_bytes else None,
                                                    debug_info=not args.strip_debug,
                                                    print_fn=lambda s: print(s, file=sys.stderr),
                                                    ram=parse_size(args.ram) if args.ram else None,
                                                    flash=parse_size(args.flash) if args.flash else None,
                                                    jobs=args.jobs))
    if args.emit_c:
        from iree_py.module.emit_c import emit_c
        emit_c(data, Path(args.output))
    else:
        Path(args.output).write_bytes(data)
    return 0


def _parse_dim(text: str) -> tuple[str, int | tuple[int, int]]:
    """`batch=1` (the module is static in batch) or `seq=1..512` (seq stays symbolic, bounded)."""
    name, _, value = text.partition("=")
    low, dots, high = value.partition("..")
    if dots and low.isdigit() and high.isdigit() and int(low) <= int(high):
        return name, (int(low), int(high))
    if not value.isdigit():
        raise IreePyError(f"--dim {text}: expected NAME=VALUE or NAME=LOW..HIGH, e.g. --dim batch=1 or --dim seq=1..512")
    return name, int(value)


def _cmd_run(args: argparse.Namespace) -> int:
    from iree_py.cli.inputs import parse_input
    from iree_py.runtime.module import load
    module = load(args.module, device=args.device, threads=args.threads)
    fn = getattr(module, args.function)
    profile_text = ""
    from iree_py.cli.device_commands import on_board
    if args.profile or (args.trace and on_board(module)):  # cycles per kernel or per dispatch, from a board
        from iree_py.cli.device_commands import profile_table, traced_board_runs
        if not on_board(module):
            raise IreePyError("run --profile needs a board: --device=serial://..., socket://..., or qemu for a "
                              "bare-metal module; on this host use `iree-py benchmark --profile`")
        from iree_py.runtime.signature import check_inputs
        inputs = check_inputs(fn.signature, tuple(parse_input(t) for t in args.input))
        dtypes = [s.dtype.module_code for s in fn.signature.inputs]
        if args.trace:
            result = traced_board_runs(module, args.function, inputs, dtypes, 1, args.trace)
        else:
            result = module.device.run(args.function, inputs, dtypes, profile=True)
        outputs = result.outputs
        if args.profile:
            profile_text = profile_table(result.profile, result.cycles, module.device.info.cycles_per_second)
    elif args.trace:
        from iree_py.cli.trace import chrome_trace, start_tracing, write_trace
        device = start_tracing(module)
        outputs = fn.call(*[parse_input(t) for t in args.input])
        write_trace(args.trace, chrome_trace(module, args.function, [device.trace()], device.arena_size()))
    else:
        outputs = fn.call(*[parse_input(t) for t in args.input])
    if args.output and len(args.output) != len(outputs):
        raise IreePyError(f"{args.function} has {len(outputs)} outputs ({', '.join(fn.output_names)}); "
                          f"got {len(args.output)} --output flags")
    for i, (name, value) in enumerate(zip(fn.output_names, outputs)):
        if args.output:
            if value is None or isinstance(value, list):
                raise IreePyError(f"output '{name}' is a {'sequence' if value is not None else 'absent optional'}; "
                                  f"--output writes one tensor per .npy file: run without --output to print it, or "
                                  f"use the Python API, which returns a list")
            np.save(args.output[i].removeprefix("@"), value)
        else:
            _print_output(name, value)
    sys.stdout.write(profile_text)
    if args.stats:
        print(f"peak memory: {module.peak_bytes} bytes")
    return 0


def _print_output(name: str, value: "np.ndarray | list[np.ndarray] | None") -> None:
    """An output on stdout: a tensor's shape, dtype and values; a sequence element by element."""
    def text(a: np.ndarray) -> str:
        with np.printoptions(threshold=20, edgeitems=3, precision=6):
            return f"{'x'.join(map(str, a.shape))}x{a.dtype}\n{a}"
    if value is None:
        print(f"{name}: absent optional")
    elif isinstance(value, list):
        print(f"{name}: sequence of {len(value)}")
        for j, element in enumerate(value):
            print(f"[{j}] {text(element)}")
    else:
        print(f"{name}: {text(value)}")


def _cmd_benchmark(args: argparse.Namespace) -> int:
    from iree_py.cli.benchmark import benchmark
    from iree_py.cli.inputs import parse_input
    from iree_py.runtime.module import load
    module = load(args.module, device=args.device, threads=args.threads)
    from iree_py.cli.device_commands import benchmark_on_board, on_board
    if on_board(module):  # cycles counted on the board, not the host's clock
        from iree_py.runtime.signature import check_inputs
        fn = getattr(module, args.function).signature
        inputs = check_inputs(fn, tuple(parse_input(t) for t in args.input))
        dtypes = [s.dtype.module_code for s in fn.inputs]
        sys.stdout.write(benchmark_on_board(module.device, args.function, inputs, dtypes, args.repeat, args.profile))
        if args.trace:  # the timed runs, then --repeat traced ones, as on this host
            from iree_py.cli.device_commands import traced_board_runs
            traced_board_runs(module, args.function, inputs, dtypes, args.repeat, args.trace)
        return 0
    sys.stdout.write(benchmark(module, args.function, [parse_input(t) for t in args.input], args.repeat, args.profile,
                               args.compare, args.trace))
    return 0


def _cmd_flash(args: argparse.Namespace) -> int:
    from iree_py.cli.device_commands import flash
    sys.stdout.write(flash(args.module, args.port))
    return 0


def _cmd_dump(args: argparse.Namespace) -> int:
    from iree_py.module.dump import dump_module
    from iree_py.module.reader import read_module
    data = Path(args.module).read_bytes()
    module = read_module(data)
    sys.stdout.write(dump_module(module, data))
    if args.extract:
        from iree_py.module.dump import executable_files
        out = Path(args.extract)
        out.mkdir(parents=True, exist_ok=True)
        for name, code in executable_files(module).items():
            (out / name).write_bytes(code)
            print(f"wrote {out / name} ({len(code)} bytes)")
    return 0


def _cmd_debug(args: argparse.Namespace) -> int:
    from iree_py.cli.inputs import parse_input
    from iree_py.layer_debug import Tolerance, debug_model, format_report, report_json
    report = debug_model(args.model, [parse_input(t) for t in args.input], target=args.target, device=args.device,
                         tolerance=Tolerance(args.tolerance, args.quantized_steps))
    sys.stdout.write(report_json(report) if args.json else format_report(report))
    return 0 if report.first_divergence is None else 1


def _cmd_build_runtime(args: argparse.Namespace) -> int:
    from iree_py.cli.build_runtime import build_runtime_into
    sys.stdout.write(build_runtime_into(args.target, Path(args.output)))
    return 0


def _cmd_conformance(args: argparse.Namespace) -> int:
    from iree_py.conformance.__main__ import run
    return run(args)


def version_text() -> str:
    """iree-py's version and the module format version its compiler writes and its runtime accepts
    (flatbuffers/isa.toml's format_version, generated into the C runtime and iree_py/vm)."""
    from iree_py import __version__
    from iree_py.vm.isa_generated import FORMAT_VERSION
    return f"iree-py {__version__} (module format version {FORMAT_VERSION})"


THREADS_HELP = ("threads running each kernel's workgroups, on this host or under qemu-user (default: $IREE_PY_THREADS, "
                "else one per physical core; results are the same bits for any count)")


TRACE_HELP = ("write the calls' timeline (each dispatch, the VM's time, worker threads, memory) as Chrome trace "
              "events: open it in ui.perfetto.dev or chrome://tracing")


def build_parser() -> argparse.ArgumentParser:
    from iree_py.targets import available_targets
    parser = argparse.ArgumentParser(prog="iree-py", description="Compile ONNX models to compact modules and run them.")
    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="compile a model into a module (.vmfb)")
    c.add_argument("model", help="an ONNX model file")
    c.add_argument("--target", default="host", choices=available_targets())
    c.add_argument("-o", "--output", required=True, help="module file to write")
    c.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE|NAME=LO..HI",
                   help="value of a symbolic input dim, or its range (the dim stays dynamic; memory is planned for HI)")
    c.add_argument("--pool-bytes", metavar="SIZE", help="run-time pool for sizes with no bound (default 256M on hosted "
                   "targets; required on boards when a size is unbounded)")
    c.add_argument("--print-ir-after", action="append", metavar="PASS", help="print the IR after this pass")
    c.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass")
    c.add_argument("--strip-debug", action="store_true", help="leave out source node names")
    c.add_argument("--emit-c", action="store_true", help="write the module as C source: -o NAME.c (and NAME.h)")
    c.add_argument("--ram", metavar="SIZE", help="RAM the board gives the runtime (e.g. 256K): refuse a model whose arena and runtime state do not fit")
    c.add_argument("--flash", metavar="SIZE", help="flash for the module (e.g. 1M): refuse a module that does not fit")
    c.add_argument("--jobs", type=int, metavar="N", help="processes for a big model's LLVM work (default: one per core)")
    c.set_defaults(func=_cmd_compile)

    r = sub.add_parser("run", help="run a module's function on inputs")
    r.add_argument("module")
    r.add_argument("--function", default="main")
    r.add_argument("--device", default="local", help="local (this host), vulkan (a Vulkan device: modules of "
                   "--target=vulkan), qemu (the module's architecture under qemu-user), "
                   "or a board: serial://PORT, socket://HOST:PORT")
    r.add_argument("--input", action="append", default=[], help="@x.npy, SHAPExDTYPE=@x.npy or SHAPExDTYPE=1,2,3 (one per input, in order)")
    r.add_argument("--output", action="append", default=[], help="@y.npy: where to save each output (one per output, in order)")
    r.add_argument("--profile", action="store_true", help="on a board: total cycles and cycles per kernel")
    r.add_argument("--stats", action="store_true", help="print the call's peak memory (arena + pool high-water mark)")
    r.add_argument("--threads", type=int, metavar="N", help=THREADS_HELP)
    r.add_argument("--trace", metavar="FILE.json", help=TRACE_HELP)
    r.set_defaults(func=_cmd_run)

    b = sub.add_parser("benchmark", help="time a module's function; --profile adds the time per kernel")
    b.add_argument("module")
    b.add_argument("--function", default="main")
    b.add_argument("--device", default="local")
    b.add_argument("--input", action="append", default=[], help="as for run")
    b.add_argument("--repeat", type=int, default=20)
    b.add_argument("--threads", type=int, metavar="N", help=THREADS_HELP)
    b.add_argument("--trace", metavar="FILE.json", help=TRACE_HELP)
    b.add_argument("--profile", action="store_true", help="time per kernel, with the source nodes behind each")
    b.add_argument("--compare", metavar="[ENGINE:]MODEL", help="run the source model in onnxruntime (MODEL.onnx) or "
                   "LiteRT (MODEL.tflite) on the same inputs, taking turns, and print its latency and the ratio")
    b.set_defaults(func=_cmd_benchmark)

    f = sub.add_parser("flash", help="upload a module to a board running the device server")
    f.add_argument("module")
    f.add_argument("--port", required=True, help="serial://PORT[?baudrate=N] or socket://HOST:PORT")
    f.set_defaults(func=_cmd_flash)

    d = sub.add_parser("dump", help="print a module: functions, bytecode, kernels, constants, memory plan")
    d.add_argument("module")
    d.add_argument("--extract", metavar="DIR", help="also write the kernel code into DIR: each SPIR-V shader as "
                                                    "ENTRY.spv, each CPU executable as ARCH.elf (flat: ARCH.bin)")
    d.set_defaults(func=_cmd_dump)

    g = sub.add_parser("debug", help="find the first layer whose output differs from the reference's (onnxruntime for "
                       "ONNX, LiteRT for TFLite), on any target and device")
    g.add_argument("model", help="an ONNX or TFLite model file")
    g.add_argument("--input", action="append", default=[], help="as for run (one per model input, in order)")
    g.add_argument("--target", default="host", choices=available_targets())
    g.add_argument("--device", help="as for run (default: local for this host's targets, qemu for the others)")
    g.add_argument("--tolerance", type=float, default=1e-3, help="floats: largest error allowed, relative to the "
                   "reference's largest magnitude (default 1e-3)")
    g.add_argument("--quantized-steps", type=int, default=1, help="8-bit integers: largest difference allowed (default 1)")
    g.add_argument("--json", action="store_true", help="the same as JSON")
    g.set_defaults(func=_cmd_debug)

    br = sub.add_parser("build-runtime", help="write the C runtime for a target (library, headers; firmware or runner)")
    br.add_argument("--target", required=True, choices=available_targets())
    br.add_argument("-o", "--output", required=True, help="directory to write into")
    br.set_defaults(func=_cmd_build_runtime)

    from iree_py.conformance.__main__ import add_arguments as add_conformance_arguments
    k = sub.add_parser("conformance", help="run the ONNX backend node tests (from the installed onnx) and report")
    add_conformance_arguments(k)
    k.set_defaults(func=_cmd_conformance)
    for command in sub.choices.values():
        command.add_argument("--verbose", action="store_true", help="on an internal error, the Python traceback too")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # lists the targets: fails when the package's data files are missing
    except IreePyError as e:
        print(f"iree-py: error: {e}", file=sys.stderr)
        return 1
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InternalCompilerError as e:
        return _internal_error(args, str(e), e)
    except IreePyError as e:
        print(f"iree-py {args.command}: error: {e}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"iree-py {args.command}: error: {e.filename}: no such file", file=sys.stderr)
        return 1
    except Exception as e:  # a bug outside the compiler's own guards (run, dump, benchmark)
        return _internal_error(args, str(internal_error(f"in iree-py {args.command}", e)), e)


def _internal_error(args: argparse.Namespace, message: str, error: BaseException) -> int:
    """A bug in iree-py: its message, and the Python traceback only with --verbose."""
    if args.verbose:
        traceback.print_exception(error, file=sys.stderr)
    print(f"iree-py {args.command}: {message}", file=sys.stderr)
    if not args.verbose:
        print(f"iree-py {args.command}: this is a bug in iree-py; --verbose shows where", file=sys.stderr)
    return INTERNAL_ERROR_EXIT_CODE


if __name__ == "__main__":
    sys.exit(main())

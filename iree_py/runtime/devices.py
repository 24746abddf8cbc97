"""Where a module runs: in this process through the C runtime (local), or in the cross-built
runner under qemu-user (qemu). Both take and return numpy arrays; a kernel that fails its dispatch
is reported naming the model's node (runtime/kernel_failures.py), as a board device does."""
from __future__ import annotations

import ctypes
import dataclasses
import os
import platform
import subprocess
import tempfile
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.targets import Target, available_targets, load_target
from iree_py.errors import IreePyError, IreeRuntimeError
from iree_py.ir.types import DType
from iree_py.module.model import Function, Module
from iree_py.module.state_info import has_state
from iree_py.runtime import capi
from iree_py.runtime.build import runner_for
from iree_py.runtime.kernel_failures import KernelSources
from iree_py.system_tools import require

if TYPE_CHECKING:
    from iree_py.runtime.serial_device import SerialDevice

HOST_ARCH = {"x86_64": "x86_64", "AMD64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}[platform.machine()]
SPIRV_ARCH = "spirv"  # the arch tag of Vulkan executables (targets/vulkan.toml)


def module_image(source: bytes | Path) -> np.ndarray:
    """The module's bytes in a 64-byte aligned buffer (so constants are aligned too), read
    straight from the file when given a path: the one copy of the weights this process holds."""
    size = len(source) if isinstance(source, (bytes, bytearray)) else Path(source).stat().st_size
    storage = np.empty(size + 64, dtype=np.uint8)
    start = (-storage.ctypes.data) % 64
    image = storage[start:start + size]
    if isinstance(source, (bytes, bytearray)):
        image[:] = np.frombuffer(source, dtype=np.uint8)
    else:
        with open(source, "rb") as f:
            if f.readinto(memoryview(image)) != size:
                raise IreePyError(f"{source}: could not read {size} bytes")
    return image


# An input up to this size is copied into a buffer of the call plan whose address the plan's C view
# already holds: copying 16 KiB costs less than asking numpy for an array's address (about 0.9 us),
# which is most of a small model's call. A dynamic input's buffer is made again when its shape
# changes. Larger inputs are passed in place.
STAGED_INPUT_BYTES = 16384


class _CallPlan:
    """What a call of one function needs, prepared once: its index, the C views to fill, and per
    input the buffer it is staged in (its view filled once; None: passed in place).

    Iterating a ctypes array makes a new proxy per element, so the views are also kept as lists.
    The arena is reused by the next call, so outputs are copied out: through a numpy view of the
    bytes an output came back in, kept while it comes back at the same address with the same
    length and shape (every static-shape output does)."""

    def __init__(self, index: int, fn: Function, input_count: int, staging: bool) -> None:
        self.index = index
        self.inputs = (capi.BufferView * max(1, input_count))()
        self.outputs = (capi.BufferView * max(1, len(fn.outputs)))()
        self.input_views = list(self.inputs)[:input_count]
        self.output_views = list(self.outputs)[:len(fn.outputs)]
        self.dtypes = [sig.dtype.module_code for sig in fn.inputs]
        self.output_dtypes = [sig.dtype.numpy for sig in fn.outputs]
        self.staged: list[np.ndarray | None] = [None] * input_count
        # per input, the dtype a dynamic input is staged in when a call gives it a new shape
        self.resized_dtypes: list[np.dtype | None] = [None] * input_count
        if staging:
            for i, sig in enumerate(fn.inputs):
                if sig.dtype is DType.string:
                    continue
                if sig.is_dynamic:
                    self.resized_dtypes[i] = np.dtype(sig.dtype.numpy)
                elif sig.dtype.numpy.itemsize * prod(sig.shape) <= STAGED_INPUT_BYTES:
                    self.staged[i] = np.zeros(sig.shape, dtype=sig.dtype.numpy)
                    _fill_view(self.input_views[i], self.dtypes[i], self.staged[i])
        self.arena_outputs: list[tuple[int, int, tuple[int, ...], np.ndarray] | None] = [None] * len(fn.outputs)

    def stage_resized(self, i: int, a: np.ndarray) -> bool:
        """Stages dynamic input `i` in a new buffer of `a`'s shape holding a copy of `a` (the next
        calls of this shape copy into it); False where `a` is not staged (too large, another dtype)."""
        if self.resized_dtypes[i] != a.dtype or a.nbytes > STAGED_INPUT_BYTES:
            return False
        self.staged[i] = np.array(a, order="C")
        _fill_view(self.input_views[i], self.dtypes[i], self.staged[i])
        return True

    def restage(self) -> None:
        """Points the staged inputs' views back at their buffers (after a call that passed others)."""
        for view, dtype, staged in zip(self.input_views, self.dtypes, self.staged):
            if staged is not None:
                _fill_view(view, dtype, staged)

    def fast_call(self, lib: ctypes.CDLL, module: ctypes.c_void_p, fn: Function,
                  check: Callable[[int, str], None]) -> Callable[[tuple], list[np.ndarray] | None] | None:
        """A call for the common case, or None where a function has none (string tensors): every
        argument an ndarray of exactly its staging buffer's dtype and shape (a static input's; a
        dynamic input's as the call before staged it), copied in. It returns the outputs, or None
        (having called nothing) for anything else; the caller then takes the general path, which
        stages what it can and says what is wrong. A few microseconds in all: the input views are
        as the plan left them, and outputs whose views did not change are copied out of the same
        arrays as in the call before."""
        if len(self.input_views) != len(fn.inputs) or any(sig.dtype is DType.string for sig in fn.inputs) or \
                any(sig.dtype is DType.string for sig in fn.outputs):
            return None
        staged, count = self.staged, len(self.staged)
        irp_call, index, inputs = lib.irp_call, ctypes.c_int32(self.index), self.inputs
        input_count, outputs, output_count = ctypes.c_int32(count), self.outputs, ctypes.c_int32(len(fn.outputs))
        ndarray, output_range = np.ndarray, range(len(fn.outputs))
        last: list = [None, []]  # the output views' bytes after the latest fast call, and their arrays

        def call(args: tuple) -> list[np.ndarray] | None:
            if len(args) != count:
                return None
            for a, buffer in zip(args, staged):
                if buffer is None or type(a) is not ndarray or a.dtype is not buffer.dtype or a.shape != buffer.shape:
                    return None
            for a, buffer in zip(args, staged):
                buffer[...] = a
            status = irp_call(module, index, inputs, input_count, outputs, output_count)
            if status:
                check(status, fn.name)
            # Outputs that came back with the same views as last time (address, length, shape: every
            # static one, a dynamic one at the same size) are copied out of the same arrays.
            snapshot = bytes(outputs)
            if snapshot != last[0]:
                last[:] = [snapshot, [self.output_array(i) for i in output_range]]
            return [a.copy() for a in last[1]]
        return call

    def copy_outputs(self) -> list[np.ndarray]:
        return [self.output_array(i).copy() for i in range(len(self.output_views))]

    def output_array(self, i: int) -> np.ndarray:
        """Output i of the latest call as an array over the bytes it came back in (copy it before
        the next call)."""
        view = self.output_views[i]
        data, length = view.data, view.length
        shape = tuple(view.shape[:view.rank])  # the real shape: dynamic dims come back from the call
        known = self.arena_outputs[i]
        if known is not None and known[0] == data and known[1] == length and known[2] == shape:
            return known[3]
        if length == 0:
            return np.zeros(shape, dtype=self.output_dtypes[i])
        arena = np.frombuffer((ctypes.c_uint8 * length).from_address(data), dtype=self.output_dtypes[i])
        arena = arena.reshape(shape)
        self.arena_outputs[i] = (data, length, shape, arena)
        return arena


@dataclass(frozen=True)
class ThreadSpan:
    """What one thread did in a dispatch: its first workgroup's start, last one's end, how many."""
    start_ns: int
    end_ns: int
    workgroups: int


@dataclass(frozen=True)
class DispatchTrace:
    entry_point: str
    start_ns: int
    end_ns: int
    workgroup_count: tuple[int, int, int]
    binding_bytes: int
    pool_bytes: int
    threads: tuple[ThreadSpan, ...]


@dataclass(frozen=True)
class CallTrace:
    """One call's timeline, in the runtime's clock (ns): the call, and each dispatch in it."""
    start_ns: int
    end_ns: int
    dispatches: list[DispatchTrace]
    dropped: int  # dispatches past the trace's room


@dataclass(frozen=True)
class KernelProfile:
    entry_point: str
    dispatches: int
    nanoseconds: int             # the runtime's clock around each dispatch call
    device_nanoseconds: int = 0  # the device's own timing (Vulkan timestamps); 0 on CPU devices


class LocalDevice:
    """The host runtime library, called through its C API; `device` is the runtime's device that runs
    the dispatches: "local" (the CPU) or "vulkan" (its Vulkan driver, for "spirv" modules)."""

    def __init__(self, image: np.ndarray | bytes, kernel_sources: KernelSources | None = None,
                 device: str = "local", threads: int = 0) -> None:
        self.lib = capi.library()
        self.kernel_sources = kernel_sources or KernelSources()
        # The runtime uses the module's constants in place: the image must outlive the module.
        self._bytes = image if isinstance(image, np.ndarray) else module_image(image)
        data = self._bytes
        self._plans: dict[str, _CallPlan] = {}
        self.runtime = ctypes.c_void_p()
        allocator = self.lib.irp_allocator_system()
        self._check(self.lib.irp_runtime_create(ctypes.byref(allocator), ctypes.byref(self.runtime)), "create runtime")
        self._check(self.lib.irp_runtime_set_thread_count(self.runtime, threads), f"threads={threads}")
        if device != "local":
            self._check(self.lib.irp_runtime_set_device(self.runtime, device.encode()), f"device {device}")
        self.module = ctypes.c_void_p()
        self._check(self.lib.irp_module_load(self.runtime, self._bytes.ctypes.data, len(data), ctypes.byref(self.module)),
                    "load module")

    def _check(self, status: int, what: str) -> None:
        if status != 0:
            message = self.lib.irp_runtime_error_message(self.runtime).decode(errors="replace") if self.runtime else ""  # may quote corrupt module bytes
            explained = self.kernel_sources.explain(message)
            raise IreeRuntimeError(explained or f"{what}: {message or f'status {status}'}")

    def thread_count(self) -> int:
        """Threads running each dispatch (the caller's included)."""
        return self.lib.irp_runtime_thread_count(self.runtime)

    def arena_size(self) -> int:
        return self.lib.irp_module_arena_size(self.module)

    def peak_bytes(self) -> int:
        """Arena + the pool's high-water mark of the latest call."""
        return self.lib.irp_module_peak_bytes(self.module)

    def reset_state(self) -> None:
        """Forget the module state (docs/state.md): the next call runs as the first one did."""
        self._check(self.lib.irp_module_reset_state(self.module), "reset state")

    def set_profiling(self, enabled: bool) -> None:
        """Count dispatches and time per entry point from now on (clears the counters)."""
        self.lib.irp_module_set_profiling(self.module, int(enabled))

    def set_trace(self, max_events: int) -> None:
        """Record each call's timeline (runtime/trace.py) from now on, up to max_events dispatches
        per call; 0 turns it off."""
        self._check(self.lib.irp_module_set_trace(self.module, max_events), "trace")

    def trace(self) -> CallTrace:
        """The latest call's timeline (set_trace must be on)."""
        start, end, count, dropped = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint32(), ctypes.c_uint64()
        self._check(self.lib.irp_module_trace_call(self.module, ctypes.byref(start), ctypes.byref(end),
                                                   ctypes.byref(count), ctypes.byref(dropped)), "trace")
        names = [p.entry_point for p in self.profile()]
        events = []
        event = capi.TraceEvent()
        s, e, n = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint32()
        for i in range(count.value):
            self._check(self.lib.irp_module_trace_event(self.module, i, ctypes.byref(event)), "trace")
            spans = []
            for t in range(event.thread_count):
                self._check(self.lib.irp_module_trace_thread_span(self.module, i, t, ctypes.byref(s), ctypes.byref(e),
                                                                  ctypes.byref(n)), "trace")
                spans.append(ThreadSpan(s.value, e.value, n.value))
            events.append(DispatchTrace(names[event.entry_point], event.start_ns, event.end_ns,
                                        tuple(event.workgroup_count), event.binding_bytes, event.pool_bytes,
                                        tuple(spans)))
        return CallTrace(start.value, end.value, events, dropped.value)

    def profile(self) -> list[KernelProfile]:
        out = []
        for i in range(self.lib.irp_module_entry_point_count(self.module)):
            name, dispatches, ns, device_ns = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
            self._check(self.lib.irp_module_entry_point_profile(self.module, i, ctypes.byref(name), ctypes.byref(dispatches),
                                                                ctypes.byref(ns)), "profile")
            self._check(self.lib.irp_module_entry_point_device_time(self.module, i, ctypes.byref(device_ns)), "profile")
            out.append(KernelProfile(name.value.decode(), dispatches.value, ns.value, device_ns.value))
        return out

    def _plan(self, fn: Function) -> _CallPlan:
        plan = self._plans.get(fn.name)
        if plan is None:
            index = ctypes.c_int32()
            self._check(self.lib.irp_module_find_function(self.module, fn.name.encode(), ctypes.byref(index)), fn.name)
            plan = _CallPlan(index.value, fn, len(fn.inputs), staging=True)
            self._plans[fn.name] = plan
        return plan

    def fast_caller(self, fn: Function) -> Callable[[tuple], list[np.ndarray] | None] | None:
        """`fn`'s fast path (_CallPlan.fast_call) for LoadedFunction.call: outputs, or None where
        the arguments need the general path (`call`); None where there is no fast path."""
        return self._plan(fn).fast_call(self.lib, self.module, fn, self._check)

    def call(self, fn: Function, inputs: list[np.ndarray]) -> list[np.ndarray]:
        plan = self._plan(fn)
        if len(inputs) != len(fn.inputs):  # let the C API see (and refuse) exactly what it was given
            plan = _CallPlan(plan.index, fn, len(inputs), staging=False)
        unstaged = False  # a staged input was given something else (which the C API refuses)
        # Inputs past the signature's are left unfilled: the C API refuses the count before it reads a view.
        for i, (view, dtype, a, staged) in enumerate(zip(plan.input_views, plan.dtypes, inputs, plan.staged)):
            if staged is not None and a.shape == staged.shape and a.dtype == staged.dtype:
                staged[...] = a
                continue
            if plan.resized_dtypes[i] is not None and plan.stage_resized(i, a):
                continue
            unstaged = unstaged or staged is not None
            _fill_view(view, dtype, a)
        status = self.lib.irp_call(self.module, plan.index, plan.inputs, len(inputs), plan.outputs, len(fn.outputs))
        if unstaged:
            plan.restage()
        self._check(status, fn.name)
        return plan.copy_outputs()

    def __del__(self) -> None:
        lib = getattr(self, "lib", None)
        if lib is None:
            return
        if getattr(self, "module", None):
            lib.irp_module_release(self.module)
        if getattr(self, "runtime", None):
            lib.irp_runtime_release(self.runtime)


def _fill_view(view: capi.BufferView, dtype: int, a: np.ndarray) -> None:
    view.dtype = dtype
    view.rank = a.ndim
    view.shape[:a.ndim] = a.shape
    view.data = a.ctypes.data
    view.length = a.nbytes


def user_mode_stand_in(arch: str) -> Target | None:
    """For a bare-metal architecture whose kernels a Linux CPU also executes, the target that runs its
    modules in a Linux runner under qemu-user (kernel tests without a board); None for the others.
    thumbv7em: Thumb-2, VFP and DSP code runs on armhf Linux under `qemu-arm -cpu max`; the runner,
    built for armhf, says it runs thumbv7em (flat) executables."""
    if arch != "thumbv7em":
        return None
    return dataclasses.replace(load_target("cortex-m4"), name="thumbv7em-linux", run="qemu-user", qemu="qemu-arm",
                               qemu_cpu="max", cross_cc="arm-linux-gnueabihf-gcc",
                               cross_cflags='-DIRP_ARCH_NAME=\\"thumbv7em\\"')


def qemu_target_for(arch: str) -> Target:
    """The qemu-user target for modules of `arch`. A module records only its arch, so when several
    targets share one (riscv64 and riscv64-rvv) they must run modules alike: the same runner and
    the same emulated CPU (for riscv64: V enabled, which runs modules with and without vectors)."""
    candidates = [t for t in map(load_target, available_targets()) if t.arch == arch and t.run == "qemu-user"]
    if not candidates and user_mode_stand_in(arch) is not None:
        return user_mode_stand_in(arch)
    if not candidates:
        raise IreePyError(f"no target runs {arch} modules under qemu")
    first = candidates[0]
    for other in candidates[1:]:
        if (other.qemu, other.qemu_cpu, other.cross_cc) != (first.qemu, first.qemu_cpu, first.cross_cc):
            raise IreePyError(f"targets {first.name} and {other.name} both run {arch} modules under qemu but "
                              f"differ in qemu, qemu_cpu or cross_cc: {(first.qemu, first.qemu_cpu, first.cross_cc)} "
                              f"vs {(other.qemu, other.qemu_cpu, other.cross_cc)}")
    return first


class QemuDevice:
    """The runner cross-built for the module's architecture, run under qemu-user; tensors go through files.

    Each call is a new runner process. For a stateful module (docs/state.md) the device keeps the
    inputs of the calls so far and replays them all in one runner process, so call k sees the state
    the k - 1 calls before it left (the runner runs one input set after another)."""

    def __init__(self, image: np.ndarray, arch: str, stateful: bool = False,
                 kernel_sources: KernelSources | None = None, threads: int = 0) -> None:
        self.threads = threads
        self.kernel_sources = kernel_sources or KernelSources()
        self.target = qemu_target_for(arch)
        require(self.target.qemu, f"running {arch} modules (target {self.target.name}) under qemu-user")
        self.runner = runner_for(self.target.name, self.target.cross_cc, self.target.cross_cflags)
        self.image = image
        self.stateful = stateful
        self._history: list[tuple[str, list[np.ndarray]]] = []  # stateful: (function, inputs) of each call
        self._peak_bytes: int | None = None
        self._arena_bytes: int | None = None
        self._tracing = False
        self._trace: CallTrace | None = None

    def set_trace(self, max_events: int) -> None:
        """Record the timeline of each call from now on (0: stop). The runner keeps up to 65,536
        dispatches a call, in the emulated CPU's time (qemu-user runs it slower than the device)."""
        self._tracing = max_events > 0

    def trace(self) -> CallTrace:
        """The latest call's timeline (set_trace must be on)."""
        if self._trace is None:
            raise IreePyError("no traced call has run on this device yet")
        return self._trace

    def arena_size(self) -> int:
        if self._arena_bytes is None:
            raise IreePyError("no call has run on this device yet")
        return self._arena_bytes

    def reset_state(self) -> None:
        self._history.clear()

    def peak_bytes(self) -> int:
        """Arena + pool high-water mark of the latest call, as the runner reported it."""
        if self._peak_bytes is None:
            raise IreePyError("no call has run on this device yet")
        return self._peak_bytes

    def call(self, fn: Function, inputs: list[np.ndarray]) -> list[np.ndarray]:
        if not self.stateful:
            return self._run(fn, [inputs])
        if any(name != fn.name for name, _ in self._history):
            raise IreePyError(f"a stateful module under qemu-user replays its calls; calls of {fn.name} after "
                              f"calls of another function are not supported")
        outputs = self._run(fn, [*(past for _, past in self._history), inputs])
        self._history.append((fn.name, [np.array(a, copy=True) for a in inputs]))
        return outputs

    def _run(self, fn: Function, calls: list[list[np.ndarray]]) -> list[np.ndarray]:
        """One runner process making `calls` in a row; the last call's outputs."""
        with tempfile.TemporaryDirectory(prefix="iree-py-") as tmp:
            d = Path(tmp)
            self.image.tofile(d / "m.vmfb")
            cpu = ["-cpu", self.target.qemu_cpu] if self.target.qemu_cpu else []
            cmd = [self.target.qemu, *cpu, str(self.runner), str(d / "m.vmfb"), f"--function={fn.name}",
                   f"--threads={self.threads}"]
            for c, inputs in enumerate(calls):
                for i, a in enumerate(inputs):
                    (d / f"in{c}_{i}.bin").write_bytes(a.tobytes())
                    cmd.append(f"--input={d / f'in{c}_{i}.bin'}")
                    if fn.inputs[i].is_dynamic:  # the runner takes the sizes of dynamic dims from here
                        cmd.append(f"--shape={'x'.join(map(str, a.shape))}")
            cmd += [f"--output={d / f'out{i}.bin'}" for i in range(len(fn.outputs))]
            cmd += [f"--output-shapes={d / 'shapes.txt'}", "--stats"]
            if self._tracing:
                cmd.append(f"--trace={d / 'trace.txt'}")
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode != 0:
                status = (f"killed by signal {-result.returncode}" if result.returncode < 0
                          else f"exit status {result.returncode}")
                detail = result.stderr.strip() or result.stdout.strip()
                explained = self.kernel_sources.explain(detail)
                raise IreeRuntimeError(explained or
                                       f"{fn.name} under {self.target.qemu} ({status}){': ' + detail if detail else ''}")
            self._peak_bytes, self._arena_bytes = _runner_memory(result.stdout)
            if self._tracing:
                self._trace = parse_runner_trace((d / "trace.txt").read_text())
            shapes = _runner_output_shapes((d / "shapes.txt").read_text(), len(fn.outputs))
            return [np.fromfile(d / f"out{i}.bin", dtype=s.dtype.numpy).reshape(shape)
                    for i, (s, shape) in enumerate(zip(fn.outputs, shapes))]


def _runner_output_shapes(text: str, count: int) -> list[tuple[int, ...]]:
    """irp-run --output-shapes: one line per output, its dims separated by spaces (empty: a scalar)."""
    lines = text.split("\n")[:count]
    if len(lines) != count:
        raise IreeRuntimeError(f"the runner wrote {len(lines)} output shapes for {count} outputs: {text!r}")
    return [tuple(int(d) for d in line.split()) for line in lines]


def _runner_memory(stdout: str) -> tuple[int | None, int | None]:
    """The peak and arena bytes of the `peak memory: N bytes (arena A + pool)` line irp-run --stats prints."""
    for line in stdout.splitlines():
        if line.startswith("peak memory: "):
            words = line.split()
            return int(words[2]), int(words[5]) if len(words) > 5 and words[5].isdigit() else None
    return None, None


def parse_runner_trace(text: str) -> CallTrace:
    """irp-run --trace's file (runtime_c/tools/runner.c, write_trace): the last call's timeline."""
    names: dict[int, str] = {}
    call: list[int] = []
    dispatches: list[tuple[list[int], list[ThreadSpan]]] = []
    try:
        for line in text.splitlines():
            kind, _, rest = line.partition(" ")
            if kind == "entry":
                index, _, name = rest.partition(" ")
                names[int(index)] = name
            elif kind == "call":
                call = [int(w) for w in rest.split()]
            elif kind == "dispatch":
                dispatches.append(([int(w) for w in rest.split()], []))
            elif kind == "span":
                start, end, workgroups = (int(w) for w in rest.split())
                dispatches[-1][1].append(ThreadSpan(start, end, workgroups))
        start_ns, end_ns, _, dropped = call
        events = [DispatchTrace(names.get(f[0], f"entry point {f[0]}"), f[1], f[2], (f[3], f[4], f[5]), f[6], f[7],
                                tuple(spans)) for f, spans in dispatches]
    except (ValueError, IndexError) as e:
        raise IreeRuntimeError(f"the runner's trace file is malformed ({e}): {text[:200]!r}") from None
    return CallTrace(start_ns, end_ns, events, dropped)


THREADS_ENV = "IREE_PY_THREADS"  # the thread count load() uses when given none (tests/conftest.py sets 1)
MAX_THREADS = 256  # IRP_MAX_THREADS (runtime_c/base/config.h)


def thread_count(threads: int | None) -> int:
    """The thread count to run with: `threads`, else $IREE_PY_THREADS, else 0 (one per physical core)."""
    if threads is None:
        text = os.environ.get(THREADS_ENV, "0")
        if not text.isdigit():
            raise IreePyError(f"{THREADS_ENV}={text!r}: expected a thread count (0: one per physical core)")
        threads = int(text)
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_THREADS:
        raise IreePyError(f"threads={threads!r}: expected 0 (one per physical core) to {MAX_THREADS}")
    return threads


def open_device(device: str, image: np.ndarray, module: Module, threads: int | None = None
                ) -> LocalDevice | QemuDevice | SerialDevice:
    """The device for `device`; `threads` (see thread_count) for the CPU devices: in this process,
    or the runner under qemu-user. A board or Vulkan runs without host threads."""
    threads = thread_count(threads)
    archs = [e.arch for e in module.executables]
    arch = archs[0] if archs else HOST_ARCH
    sources = KernelSources.of(module)
    if device == "vulkan":
        if arch != SPIRV_ARCH:
            raise IreePyError(f"this module was compiled for {arch}; device 'vulkan' runs modules compiled with "
                              f"--target=vulkan")
        return LocalDevice(image, sources, device="vulkan")
    if device in ("local", "host"):
        if arch == SPIRV_ARCH:
            raise IreePyError("this module was compiled for Vulkan (spirv): run it with device='vulkan' "
                              "(--device=vulkan)")
        if arch != HOST_ARCH:
            raise IreePyError(f"this module was compiled for {arch}; this host is {HOST_ARCH}: "
                              f"run it with device='qemu' (--device=qemu)")
        return LocalDevice(image, sources, threads=threads)
    if device == "qemu-user":  # the Linux runner under qemu-user, also for bare-metal archs (user_mode_stand_in)
        return QemuDevice(image, arch, has_state(module), sources, threads)
    if device.startswith(("serial://", "socket://")):  # a board running the device server
        from iree_py.runtime.serial_device import SerialDevice
        board = SerialDevice(device)
        board.ensure_module(image.tobytes(), arch)
        board.kernel_sources = sources
        return board
    if device == "qemu" or device.startswith("qemu:"):  # a bare-metal module: its target's emulated board
        from iree_py.runtime.board import board_target_for, open_board_device
        target = board_target_for(arch, device.removeprefix("qemu").removeprefix(":"))
        if target is not None:
            emulated = open_board_device(target, image.tobytes(), arch)
            emulated.kernel_sources = sources
            return emulated
    if device == "qemu" or device.startswith("qemu-"):
        return QemuDevice(image, device.removeprefix("qemu-") if device.startswith("qemu-") else arch, has_state(module),
                          sources, threads)
    raise IreePyError(f"unknown device {device!r}: use 'local', 'vulkan', 'qemu', 'qemu:TARGET', serial://PORT or "
                      f"socket://HOST:PORT")

"""`--trace=FILE` on `iree-py run` and `iree-py benchmark`: the calls' timeline as a Chrome
trace-event JSON file, which ui.perfetto.dev and chrome://tracing open (docs/debugging.md).

Tracks (threads of one process): the calling thread, with a slice per call, inside it a slice per
dispatch (kernel name; source nodes, workgroup count, bytes of its bindings) and a `vm` slice for the
interpreter's own time between them; one track per worker thread when the threaded driver runs,
with the span of each dispatch it took workgroups of; and a `memory` counter (arena and pool
bytes in use) at each dispatch. Timestamps are microseconds from the first call's start.

From a board (serial://, socket://, or the emulated board of --device=qemu) the runs are traced on
the board: each dispatch's start and end in its cycle counter (the TRACE request,
docs/device_protocol.md), made times with the cycles per second the board reported at HELLO. Under
qemu-user the runner records the timeline (irp-run --trace) in the emulated CPU's time."""
from __future__ import annotations

import json
from pathlib import Path

from iree_py.errors import IreePyError
from iree_py.runtime.devices import CallTrace, DispatchTrace, LocalDevice, QemuDevice
from iree_py.runtime.module import LoadedModule
from iree_py.runtime.serial_device import RunResult

MAX_EVENTS = 1 << 16  # dispatches kept per call; more are counted as dropped (the file says so)
CALLER = 0            # the calling thread's track; workers are 1..


def start_tracing(module: LoadedModule) -> LocalDevice | QemuDevice:
    """Tracing on, on this host's runtime or in the runner under qemu-user (boards trace per run:
    device_commands.traced_board_runs)."""
    device = module.device
    if not isinstance(device, (LocalDevice, QemuDevice)):
        raise IreePyError(f"--trace needs this host's runtime (--device=local or vulkan), qemu-user or a board "
                          f"(serial://, socket://, or --device=qemu for a bare-metal module), not "
                          f"{type(device).__name__}")
    device.set_trace(MAX_EVENTS)
    return device


def board_call_trace(result: RunResult, cycles_per_second: int) -> CallTrace:
    """A traced board run's timeline in ns, from its cycle counts."""
    if result.trace is None:
        raise IreePyError("the board run was not traced")
    if cycles_per_second <= 0:
        raise IreePyError("the board does not report its cycles per second (HELLO), so its cycles cannot be times")
    names = [e.entry_point for e in result.profile]
    ns = lambda cycles: cycles * 1_000_000_000 // cycles_per_second

    def name(index: int) -> str:
        return names[index] if 0 <= index < len(names) else f"entry point {index}"
    t = result.trace
    dispatches = [DispatchTrace(name(d.entry_point), ns(d.start), ns(d.end), d.workgroup_count, d.binding_bytes,
                                d.pool_bytes, ()) for d in t.dispatches]
    return CallTrace(ns(t.start), ns(t.end), dispatches, t.dropped)


def source_nodes(module: LoadedModule) -> dict[str, str]:
    sources = {}
    for d in module.module.debug_info or []:
        exe = module.module.executables[d.executable]
        sources[exe.entry_points[d.entry_point].name] = ", ".join(d.source_nodes)
    return sources


def chrome_trace(module: LoadedModule, function: str, calls: list[CallTrace], arena_bytes: int,
                 other: dict | None = None) -> dict:
    sources = source_nodes(module)
    origin = calls[0].start_ns if calls else 0
    us = lambda ns: (ns - origin) / 1000.0
    events: list[dict] = [{"ph": "M", "name": "process_name", "pid": 1, "tid": CALLER, "args": {"name": "iree-py"}},
                          {"ph": "M", "name": "thread_name", "pid": 1, "tid": CALLER, "args": {"name": "caller"}}]
    workers = max((len(d.threads) for c in calls for d in c.dispatches), default=1)
    for t in range(1, workers):
        events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": t, "args": {"name": f"worker {t}"}})

    def slice_(name: str, cat: str, start: int, end: int, tid: int = CALLER, args: dict | None = None) -> dict:
        return {"name": name, "cat": cat, "ph": "X", "ts": us(start), "dur": (end - start) / 1000.0, "pid": 1,
                "tid": tid, "args": args or {}}

    dropped = 0
    for n, call in enumerate(calls):
        dropped += call.dropped
        events.append(slice_(f"call {function}", "call", call.start_ns, call.end_ns, args={"call": n}))
        cursor = call.start_ns
        for d in call.dispatches:
            if d.start_ns > cursor:
                events.append(slice_("vm", "vm", cursor, d.start_ns))
            args = {"source nodes": sources.get(d.entry_point, ""), "workgroups": list(d.workgroup_count),
                    "binding bytes": d.binding_bytes}
            events.append(slice_(d.entry_point, "dispatch", d.start_ns, d.end_ns, args=args))
            events.append({"name": "memory", "ph": "C", "ts": us(d.start_ns), "pid": 1, "tid": CALLER,
                           "args": {"arena bytes": arena_bytes, "pool bytes": d.pool_bytes}})
            for t, span in enumerate(d.threads[1:], start=1):
                if span.workgroups:
                    events.append(slice_(d.entry_point, "workgroups", span.start_ns, span.end_ns, tid=t,
                                         args={"workgroups run": span.workgroups}))
            cursor = max(cursor, d.end_ns)
        if call.end_ns > cursor:
            events.append(slice_("vm", "vm", cursor, call.end_ns))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"module function": function, "calls": len(calls), "dropped dispatches": dropped,
                          **(other or {})}}


def write_trace(path: str | Path, trace: dict) -> None:
    Path(path).write_text(json.dumps(trace, separators=(",", ":")))

"""`iree-py debug`: run a model with every intermediate value kept, on any device, beside the
reference, and find the first node whose output diverges (docs/debugging.md).

    report = debug_model("model.onnx", [x], target="arm64", device="qemu")
    print(format_report(report))

The pipeline: expose every intermediate as a model output (onnx_intermediates.py), compile that
model for the target and run it on the device, run the same model in the reference (onnxruntime),
and compare value by value in node order (compare.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from iree_py.layer_debug.compare import DebugReport, Tolerance, compare_layers
from iree_py.layer_debug.onnx_intermediates import expose_intermediates, load_onnx, run_reference
from iree_py.layer_debug.report import format_report, report_json


def debug_model(model: str | Path | bytes, inputs: list[np.ndarray], target: str = "host", device: str | None = None,
                tolerance: Tolerance | None = None, inject_fault: str | None = None) -> DebugReport:
    """Every node's output on `device` (default: this host for host-like targets, qemu otherwise)
    against onnxruntime's. `inject_fault` (tests only) makes that node's kernel wrong."""
    from iree_py.compiler import CompileOptions, compile_model
    from iree_py.runtime.module import load
    exposed, layers, given = expose_intermediates(load_onnx(model))
    data = exposed.SerializeToString()
    module = compile_model(data, CompileOptions(target=target, inject_fault=inject_fault))
    device = device or default_device(target)
    loaded = load(module, device=device)
    (fn,) = loaded.functions.values()
    ours = dict(zip(fn.output_names, fn.call(*inputs)))
    reference = run_reference(exposed, inputs)
    return compare_layers(layers, given, ours, reference, tolerance or Tolerance(), target=target, device=device)


def default_device(target: str) -> str:
    from iree_py.runtime.devices import HOST_ARCH
    from iree_py.targets import load_target
    t = load_target(target)
    return "local" if t.arch == HOST_ARCH and t.runtime != "bare-metal" else "qemu"


__all__ = ["debug_model", "format_report", "report_json", "DebugReport", "Tolerance"]

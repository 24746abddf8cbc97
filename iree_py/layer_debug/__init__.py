"""`iree-py debug`: run a model with every intermediate value kept, on any device, beside the
reference, and find the first node whose output diverges (docs/debugging.md).

    report = debug_model("model.onnx", [x], target="arm64", device="qemu")
    print(format_report(report))

The pipeline: expose every intermediate as a model output (onnx_intermediates.py,
tflite_intermediates.py), compile that model for the target and run it on the device, run the
model in the reference (onnxruntime for ONNX, LiteRT for TFLite), and compare value by value in
node order (compare.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from iree_py.layer_debug.compare import DebugReport, Layer, Tolerance, compare_layers
from iree_py.layer_debug.report import format_report, report_json


def debug_model(model: str | Path | bytes, inputs: list[np.ndarray], target: str = "host", device: str | None = None,
                tolerance: Tolerance | None = None, inject_fault: str | None = None) -> DebugReport:
    """Every node's output on `device` (default: this host for host-like targets, qemu otherwise)
    against the reference's. `inject_fault` (tests only) makes that node's kernel wrong."""
    from iree_py.frontends.tflite import is_tflite
    device = device or default_device(target)
    if is_tflite(model):
        from iree_py.layer_debug import tflite_intermediates as tfl
        data, model_t = tfl.load_tflite(model)
        found = tfl.expose_intermediates(model_t)
        _, values = _run_named(found.exposed, inputs, target, device, inject_fault)
        ours = dict(zip(found.output_keys, values))  # by position: the exposed outputs' order
        reference = tfl.run_reference(data, found, inputs)
        layers, given = found.layers, found.given
    else:
        from iree_py.layer_debug.onnx_intermediates import expose_intermediates, load_onnx, run_reference
        exposed, layers, given = expose_intermediates(load_onnx(model))
        names, values = _run_named(exposed.SerializeToString(), inputs, target, device, inject_fault)
        ours = dict(zip(names, values))
        reference = run_reference(exposed, inputs)
    return compare_layers(layers, given, ours, reference, tolerance or Tolerance(), target=target, device=device)


def _run_named(model: bytes, inputs: list[np.ndarray], target: str, device: str,
               inject_fault: str | None) -> tuple[list[str], list[np.ndarray]]:
    """The model compiled for `target` and called on `device`: its output names and values."""
    from iree_py.compiler import CompileOptions, compile_model
    from iree_py.runtime.module import load
    module = compile_model(model, CompileOptions(target=target, inject_fault=inject_fault))
    (fn,) = load(module, device=device).functions.values()
    return list(fn.output_names), list(fn.call(*inputs))


def default_device(target: str) -> str:
    from iree_py.runtime.devices import HOST_ARCH
    from iree_py.targets import load_target
    t = load_target(target)
    return "local" if t.arch == HOST_ARCH and t.runtime != "bare-metal" else "qemu"


__all__ = ["debug_model", "format_report", "report_json", "DebugReport", "Layer", "Tolerance"]

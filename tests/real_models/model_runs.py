"""Run a catalog model through iree-py and through its reference (onnxruntime for ONNX, the LiteRT
interpreter for TFLite), call by call, and compare. Shared by test_real_models.py, survey.py and
benchmarks/real_models.py.

Tolerance: a float output passes when max |error| <= 1e-4 x max |reference| or every element is within
1e-3 of the reference relatively; a quantized integer output (TFLite scale != 0) within one
quantization step; any other integer output exactly. A model may widen the first bound for an output
whose float noise is larger (RealModel.loose, with the measurement that justifies it).
"""
from __future__ import annotations

import dataclasses
import time
import traceback
from pathlib import Path
from typing import Callable

import numpy as np
from wheel_cache import model_path
from wheel_models import Case, RealModel

import iree_py

ABSOLUTE_OF_MAX = 1e-4
RELATIVE_EACH = 1e-3
DEVICE = {"host": "local", "arm64": "qemu"}

Outputs = list[np.ndarray]
Call = Callable[[list[np.ndarray]], Outputs]


@dataclasses.dataclass
class Compiled:
    data: bytes | None
    seconds: float
    error: BaseException | None

    def failure_text(self) -> str:
        """The compile error as a test failure shows it: type and message, and for an internal crash
        (anything but a CompileError) the traceback's last frames, where the fix goes."""
        assert self.error is not None
        text = f"{type(self.error).__name__}: {self.error}"
        if not isinstance(self.error, iree_py.CompileError):
            frames = traceback.format_tb(self.error.__traceback__)[-4:]
            text += "\n" + "".join(frames)
        return text


_compiled: dict[tuple[str, str], Compiled] = {}


def compiled(model: RealModel, target: str) -> Compiled:
    """The module of `model` for `target`, compiled once per process (a failure is kept too, so every
    test of the model reports the same error without compiling again)."""
    key = (model.name, target)
    if key not in _compiled:
        path = model_path(model)
        start = time.perf_counter()
        try:
            data, error = iree_py.compile(str(path), target=target, dims=dict(model.dims) or None), None
        except Exception as e:  # noqa: BLE001 - kept and re-raised by each test
            data, error = None, e
        _compiled[key] = Compiled(data, time.perf_counter() - start, error)
    return _compiled[key]


def iree_call(data: bytes, target: str) -> Call:
    """Calls of a freshly loaded module (its state, if any, starts at the initial values)."""
    module = iree_py.load(data, device=DEVICE[target])
    (function,) = module.functions.values()
    return lambda inputs: [np.asarray(o) for o in function.call(*inputs)]


def onnxruntime_call(path: Path) -> Call:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    return lambda inputs: session.run(None, dict(zip(names, inputs)))


def litert_interpreter(path: Path, reference: str):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    # TFLite's builtin kernels; "xnnpack" models need the delegate for MediaPipe's custom ops.
    resolver = OpResolverType.AUTO if reference == "xnnpack" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interp = Interpreter(model_path=str(path), num_threads=1, experimental_op_resolver_type=resolver)
    interp.allocate_tensors()
    return interp


def litert_call(path: Path, reference: str) -> Call:
    """Calls of one interpreter, so resource variables persist from call to call as in iree-py."""
    interp = litert_interpreter(path, reference)

    def call(inputs: list[np.ndarray]) -> Outputs:
        for detail, x in zip(interp.get_input_details(), inputs):
            interp.set_tensor(detail["index"], x)
        interp.invoke()
        return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]
    return call


def reference_call(model: RealModel) -> Call:
    path = model_path(model)
    return onnxruntime_call(path) if model.kind == "onnx" else litert_call(path, model.reference)


def output_steps(model: RealModel) -> list[float]:
    """Per output: the quantization step of a quantized TFLite output, else 0."""
    if model.kind == "onnx":
        return []
    interp = litert_interpreter(model_path(model), model.reference)
    return [float(d["quantization"][0]) for d in interp.get_output_details()]


def run_case(call: Call, case: Case) -> list[Outputs]:
    """Every call of `case` in order; `feedback` inputs come from this engine's previous outputs."""
    results: list[Outputs] = []
    for i, inputs in enumerate(case.calls()):
        inputs = list(inputs)
        if i > 0:
            for out_index, in_index in case.feedback:
                inputs[in_index] = results[-1][out_index].astype(inputs[in_index].dtype)
        results.append(call(inputs))
    return results


def mismatch(actual: np.ndarray, expected: np.ndarray, step: float = 0.0,
             of_max: float = ABSOLUTE_OF_MAX) -> str | None:
    """None when `actual` matches `expected` within the suite's tolerance, else what differs."""
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)}, reference {list(expected.shape)}"
    if expected.size == 0:
        return None
    if expected.dtype.kind in "iub" or step:
        diff = int(np.max(np.abs(actual.astype(np.int64) - expected.astype(np.int64))))
        allowed = 1 if step else 0
        return None if diff <= allowed else f"max |error| {diff} steps (allowed {allowed})"
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    if not np.all(np.isfinite(a) == np.isfinite(e)):
        return f"{int(np.sum(~np.isfinite(a)))} non-finite values, reference {int(np.sum(~np.isfinite(e)))}"
    finite = np.isfinite(e)
    err = np.abs(a - e)[finite]
    scale = float(np.max(np.abs(e[finite]))) if finite.any() else 0.0
    worst = float(np.max(err)) if err.size else 0.0
    if worst <= of_max * scale or np.all(err <= RELATIVE_EACH * np.abs(e[finite])):
        return None
    return f"max |error| {worst:.3g} > {of_max:g} x max |ref| {scale:.3g}"


def compare_runs(actual: list[Outputs], expected: list[Outputs], steps: list[float],
                 loose: tuple[tuple[int, float], ...] = ()) -> list[str]:
    """One line per output of each call that does not match; empty when everything matches. `steps`:
    output_steps(); `loose`: the model's wider tolerances (RealModel.loose)."""
    of_max = dict(loose)
    problems = []
    for call, (outs, refs) in enumerate(zip(actual, expected)):
        if len(outs) != len(refs):
            problems.append(f"call {call}: {len(outs)} outputs, reference {len(refs)}")
            continue
        for i, (a, e) in enumerate(zip(outs, refs)):
            why = mismatch(a, e, steps[i] if i < len(steps) else 0.0, of_max.get(i, ABSOLUTE_OF_MAX))
            if why:
                problems.append(f"call {call} output {i}: {why}")
    return problems

"""Compare two engines' values of every layer and find the first that diverges."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Layer:
    """One node (ONNX) or operator (TFLite) of the model, in graph order: what it computes and from what."""

    index: int
    node: str             # the node's name (ONNX: as given, or OP_INDEX; TFLite: op_index, as the IR names it)
    op: str
    outputs: tuple[str, ...]  # its tensors that both engines report (others have no known type)
    inputs: tuple[str, ...]


NOT_COMPARED = "not compared"


@dataclass(frozen=True)
class Tolerance:
    """When a value counts as matching: floats by the largest error relative to the reference's
    largest magnitude; 8-bit integers (quantized values) by the largest difference in steps;
    other integers and booleans exactly."""

    relative: float = 1e-3
    quantized_steps: int = 1


@dataclass(frozen=True)
class TensorError:
    """How far one tensor is from the reference."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    max_abs: float        # floats: the largest |ours - reference|; integers: in steps
    relative: float       # floats: max_abs / the reference's largest |value|; integers: = max_abs
    within: bool
    problem: str = ""     # a shape or dtype that differs, a value only one engine has


@dataclass(frozen=True)
class LayerResult:
    layer: Layer
    values: tuple[TensorError, ...]

    @property
    def within(self) -> bool:
        return all(v.within for v in self.values)


@dataclass
class DebugReport:
    target: str
    device: str
    tolerance: Tolerance
    layers: list[LayerResult]
    first_divergence: LayerResult | None = None
    # the first divergent layer's inputs: name -> its error, or None where the input is given (a model
    # input, an initializer, a constant) and so the same in both engines
    first_inputs: dict[str, TensorError | None] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        first = self.first_divergence
        if first is None:
            return f"no divergence: every compared value is within tolerance ({len(self.layers)} layers)"
        where = f"node '{first.layer.node}' ({first.layer.op})"
        inherited = [name for name, e in self.first_inputs.items() if e is not None and not e.within]
        if inherited:
            return f"{where} is the first to diverge, but its input {', '.join(inherited)} already differs"
        unseen = [name for name, e in self.first_inputs.items() if e is not None and e.problem == NOT_COMPARED]
        if unseen:
            return (f"{where} is the first compared node to diverge; its input {', '.join(unseen)} was not compared "
                    f"(no known type), so the error may come from the node that computes it")
        return f"{where} diverges while all its inputs match: its kernel is wrong"


def tensor_error(name: str, ours: np.ndarray | None, reference: np.ndarray | None, tolerance: Tolerance) -> TensorError:
    if ours is None or reference is None:
        which = "iree-py" if ours is None else "the reference"
        return TensorError(name, "", (), float("inf"), float("inf"), False, f"{which} has no value for it")
    shape = tuple(int(d) for d in reference.shape)
    if ours.shape != reference.shape:
        return TensorError(name, str(reference.dtype), shape, float("inf"), float("inf"), False,
                           f"shape {list(ours.shape)}, the reference's {list(reference.shape)}")
    if np.issubdtype(reference.dtype, np.floating):
        a, b = ours.astype(np.float64), reference.astype(np.float64)
        same_nan = np.isnan(a) == np.isnan(b)
        diff = np.where(np.isnan(a) & np.isnan(b), 0.0, np.abs(a - b))
        max_abs = float(np.max(diff, initial=0.0)) if same_nan.all() else float("inf")
        max_abs = float("inf") if np.isnan(max_abs) else max_abs
        scale = float(np.max(np.abs(np.where(np.isfinite(b), b, 0.0)), initial=0.0))
        relative = max_abs / scale if scale > 0 else max_abs
        return TensorError(name, str(reference.dtype), shape, max_abs, relative, relative <= tolerance.relative)
    steps = float(np.max(np.abs(ours.astype(np.int64) - reference.astype(np.int64)), initial=0))
    allowed = tolerance.quantized_steps if reference.dtype.itemsize == 1 and reference.dtype != np.bool_ else 0
    return TensorError(name, str(reference.dtype), shape, steps, steps, steps <= allowed)


def compare_layers(layers: list[Layer], given: frozenset[str], ours: dict[str, np.ndarray],
                   reference: dict[str, np.ndarray], tolerance: Tolerance, target: str, device: str) -> DebugReport:
    errors: dict[str, TensorError] = {}
    results = []
    for layer in layers:
        values = tuple(tensor_error(name, ours.get(name), reference.get(name), tolerance) for name in layer.outputs)
        errors.update((v.name, v) for v in values)
        results.append(LayerResult(layer, values))
    report = DebugReport(target, device, tolerance, results)
    report.first_divergence = next((r for r in results if not r.within), None)
    if report.first_divergence is not None:
        for name in report.first_divergence.layer.inputs:
            if name in given:
                report.first_inputs[name] = None
            elif name in errors:
                report.first_inputs[name] = errors[name]
            else:  # computed, but neither engine reports it (a value without a known type)
                report.first_inputs[name] = TensorError(name, "", (), float("nan"), float("nan"), True, NOT_COMPARED)
    return report

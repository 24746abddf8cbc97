"""`iree-py debug` output: a table of every layer, or the same as JSON."""
from __future__ import annotations

import json
import math

from iree_py.layer_debug.compare import DebugReport, TensorError


def _number(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if x != int(x) or abs(x) >= 1e6 else str(int(x))


def _error_text(e: TensorError) -> str:
    if e.problem:
        return e.problem
    kind = "rel" if "float" in e.dtype else "steps"
    return f"max abs {_number(e.max_abs)}, {kind} {_number(e.relative)}"


def format_report(report: DebugReport) -> str:
    tol = report.tolerance
    lines = [f"target {report.target}, device {report.device}; tolerance: floats {tol.relative:g} of the largest "
             f"reference magnitude, 8-bit integers {tol.quantized_steps} step(s), other integers exact", ""]
    rows = [("#", "node", "op", "output", "max abs err", "rel err / steps", "")]
    first = report.first_divergence
    for result in report.layers:
        for e in result.values or ():
            mark = "" if e.within else ("<- first divergence" if result is first else "x")
            rel = e.problem or _number(e.relative)
            rows.append((str(result.layer.index), result.layer.node, result.layer.op, e.name, _number(e.max_abs), rel,
                         mark))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i < 4 or i == 6 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    lines.append("")
    if first is not None:
        lines.append(f"first divergence: node '{first.layer.node}' ({first.layer.op}), output "
                     f"{', '.join(f'{e.name} ({_error_text(e)})' for e in first.values if not e.within)}")
        for name, e in report.first_inputs.items():
            lines.append(f"  input {name}: {'given (model input or constant): the same in both' if e is None else _error_text(e)}")
    lines.append(report.verdict)
    return "\n".join(lines) + "\n"


def report_json(report: DebugReport) -> str:
    def tensor(e: TensorError | None) -> dict | None:
        if e is None:
            return None
        finite = lambda x: x if math.isfinite(x) else str(x)  # JSON has no inf / nan
        return {"name": e.name, "dtype": e.dtype, "shape": list(e.shape), "max_abs": finite(e.max_abs),
                "relative": finite(e.relative), "within": e.within, "problem": e.problem}
    first = report.first_divergence
    return json.dumps({
        "target": report.target, "device": report.device,
        "tolerance": {"relative": report.tolerance.relative, "quantized_steps": report.tolerance.quantized_steps},
        "layers": [{"index": r.layer.index, "node": r.layer.node, "op": r.layer.op, "inputs": list(r.layer.inputs),
                    "outputs": [tensor(e) for e in r.values], "within": r.within} for r in report.layers],
        "first_divergence": None if first is None else {
            "node": first.layer.node, "op": first.layer.op,
            "inputs": {name: tensor(e) for name, e in report.first_inputs.items()}},
        "verdict": report.verdict,
    }, indent=1) + "\n"

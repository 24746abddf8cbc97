"""The conformance report: a markdown table per case, with summaries by status and by op."""
from __future__ import annotations

import re
from collections import Counter, defaultdict

from iree_py.conformance.edge_ops import is_edge_case
from iree_py.conformance.status import PASSED, STATUSES, UNSUPPORTED, CaseResult


def pass_rate(results: list[CaseResult]) -> str:
    passed = sum(r.status == PASSED for r in results)
    percent = 100.0 * passed / len(results) if results else 0.0
    return f"{passed} / {len(results)} passed ({percent:.1f}%)"


def edge_pass_rate(results: list[CaseResult]) -> str:
    """The pass rate over the cases of the edge-op list (edge_ops.py); empty if none ran."""
    edge = [r for r in results if is_edge_case(r.name, r.op)]
    return f"edge ops {pass_rate(edge)}" if edge else ""


def status_counts(results: list[CaseResult]) -> dict[str, int]:
    counts = Counter(r.status for r in results)
    return {s: counts.get(s, 0) for s in STATUSES}


def failing_by_op(results: list[CaseResult]) -> list[tuple[str, Counter]]:
    """Ops (the one a failure names, else the tested op) by number of failing cases, most first."""
    by_op: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        if r.status != PASSED:
            by_op[r.blocking_op][r.status] += 1
    return sorted(by_op.items(), key=lambda item: (-sum(item[1].values()), item[0]))


# Why unsupported cases are unsupported, first matching pattern wins.
_REASONS = [
    ("op not supported", "op not supported"),
    ("element type / dtype", "element type|dtype|Cast of a computed tensor"),
    ("sequence / optional / string value", "sequence|optional|string tensor|is not a tensor"),
    ("input must be a constant (static shapes)", "must be a constant"),
    ("other domain or opset", "default-domain|opset \\d+ is not supported"),
]


def unsupported_reasons(results: list[CaseResult]) -> list[tuple[str, int]]:
    counts: Counter = Counter()
    for r in results:
        if r.status == UNSUPPORTED:
            counts[next((label for label, pattern in _REASONS if re.search(pattern, r.detail)),
                        "attribute, rank or shape limits")] += 1
    return counts.most_common()


def summary_text(results: list[CaseResult]) -> str:
    counts = ", ".join(f"{s} {n}" for s, n in status_counts(results).items())
    edge = edge_pass_rate(results)
    return f"{pass_rate(results)}; {counts}" + (f"; {edge}" if edge else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_report(results: list[CaseResult], target: str, header: str = "", top_ops: int = 40) -> str:
    lines = [f"# ONNX backend node tests on iree-py, target {target}", ""]
    if header:
        lines += [header, ""]
    edge = edge_pass_rate(results)
    lines += [f"**{pass_rate(results)}**" + (f" ({edge})" if edge else ""), "", "## By status", "", "| status | cases |", "|---|---|"]
    lines += [f"| {s} | {n} |" for s, n in status_counts(results).items()]
    lines += ["", "## Why cases are unsupported", "", "| reason | cases |", "|---|---|"]
    lines += [f"| {reason} | {n} |" for reason, n in unsupported_reasons(results)]
    failing = [s for s in STATUSES if s != PASSED]
    lines += ["", f"## Ops with the most failing cases (top {top_ops})", "",
              "The op named by the failure message (the first one iree-py could not handle), else the tested op.", "",
              "| op | failing | " + " | ".join(failing) + " |", "|---|---|" + "---|" * len(failing)]
    for op, counter in failing_by_op(results)[:top_ops]:
        lines.append(f"| {op} | {sum(counter.values())} | " + " | ".join(str(counter.get(s, 0)) for s in failing) + " |")
    lines += ["", "## Cases", "", "| case | op | status | detail |", "|---|---|---|---|"]
    lines += [f"| {r.name} | {_cell(r.op)} | {r.status} | {_cell(r.detail)} |" for r in results]
    return "\n".join(lines) + "\n"

"""The expected-pass list: one case name per line, sorted; blank lines and `#` comments are ignored."""
from __future__ import annotations

from pathlib import Path

from iree_py.conformance.status import PASSED, CaseResult


def read_expected(path: Path) -> list[str]:
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def regressions(expected: list[str], results: list[CaseResult], known: set[str], name_filter: str = "") -> list[str]:
    """Expected cases that ran and did not pass, plus expected names (within the filter) that no
    longer exist among the installed onnx's cases (`known`): each as 'name: status: detail'."""
    by_name = {r.name: r for r in results}
    out = []
    for name in expected:
        r = by_name.get(name)
        if r is not None and r.status != PASSED:
            out.append(f"{name}: {r.status}" + (f": {r.detail}" if r.detail else ""))
        elif r is None and name not in known and name_filter in name:
            out.append(f"{name}: no such case in the installed onnx")
    return out


def updated_expected(old: list[str], results: list[CaseResult]) -> list[str]:
    """The list after a run: the cases that ran are replaced by whether they passed now, the rest kept."""
    ran = {r.name for r in results}
    kept = [name for name in old if name not in ran]
    return sorted(set(kept) | {r.name for r in results if r.status == PASSED})


def write_expected(path: Path, names: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{n}\n" for n in sorted(names)))

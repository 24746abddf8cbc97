"""Dependencies point one way (docs/architecture.md): a package imports only the layers below it."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "iree_py"

# package -> the iree_py packages (or modules) it may import, besides itself and iree_py.errors.
ALLOWED = {
    "ir": set(),
    "frontends": {"ir"},
    "passes": {"ir"},
    "codegen": {"ir"},
    "vm": {"ir", "codegen.kernel_spec", "codegen.dispatch"},
    "module": {"ir", "vm"},
    "runtime": {"module", "ir.types", "codegen.target"},
    "cli": {"*"},
    "conformance": {"*"},  # a tool on top, like the CLI
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n.removeprefix("iree_py.") for n in names if n.startswith("iree_py.")}


def allowed(package: str, target: str) -> bool:
    rules = ALLOWED[package]
    if "*" in rules or target == "errors" or target.split(".")[0] == package:
        return True
    return any(target == r or target.startswith(r + ".") for r in rules)


def test_imports_point_down():
    violations = []
    for package in ALLOWED:
        for path in (PACKAGE / package).rglob("*.py"):
            for target in imported_modules(path):
                if not allowed(package, target):
                    violations.append(f"{path.relative_to(PACKAGE.parent)} imports iree_py.{target}")
    assert not violations, "\n".join(violations)


def test_checker_catches_an_upward_import():
    assert not allowed("ir", "passes.pipeline")
    assert not allowed("runtime", "compiler")

"""Dependencies point one way (docs/architecture.md): a package imports only the layers below it."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "iree_py"

# Top-level modules that any package may import, each with the iree_py modules it may import
# itself: they sit below every package, so they import only each other.
SHARED = {
    "errors": set(),
    "user_cache": set(),                 # the per-user folder for what is built on first use
    "resources": {"errors"},             # where the data files are (targets, runtime sources)
    "system_tools": {"errors"},          # programs from the system (compilers, qemu) and their packages
    "targets": {"errors", "resources"},  # target records: data that codegen, runtime and cli read
}

# package -> the iree_py packages (or modules) it may import, besides itself and the SHARED modules.
ALLOWED = {
    "ir": set(),
    "frontends": {"ir"},
    "passes": {"ir"},
    "codegen": {"ir"},
    "vm": {"ir", "codegen.kernel_spec", "codegen.dispatch"},
    "module": {"ir", "vm"},
    "runtime": {"module", "ir.types", "codegen.kernel_abi"},  # the ABI's status table
    "cli": {"*"},
    "conformance": {"*"},  # a tool on top, like the CLI
    "layer_debug": {"compiler", "runtime", "frontends.tflite"},  # iree-py debug: compiles and runs, beside the reference (reads TFLite files to expose their tensors)
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "iree_py" and node.level == 0:
            # `from iree_py import resources` imports a module; `__version__` is the package's own
            names.update(f"iree_py.{a.name}" for a in node.names if _is_module(PACKAGE / a.name))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return {n.removeprefix("iree_py.") for n in names if n.startswith("iree_py.")}


def _is_module(path: Path) -> bool:
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def allowed(package: str, target: str) -> bool:
    rules = ALLOWED[package]
    if "*" in rules or target in SHARED or target.split(".")[0] == package:
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


def test_shared_modules_import_only_each_other():
    violations = []
    for module, rules in SHARED.items():
        for target in imported_modules(PACKAGE / f"{module}.py"):
            if target not in rules:
                violations.append(f"iree_py/{module}.py imports iree_py.{target}")
    assert not violations, "\n".join(violations)


def test_checker_catches_an_upward_import():
    assert not allowed("ir", "passes.pipeline")
    assert not allowed("runtime", "compiler")


def test_checker_reads_modules_imported_from_the_package(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("from iree_py import __version__, compiler, resources\n")
    assert imported_modules(source) == {"compiler", "resources"}


# A backend's package is reached through codegen/backend.py (by the target's `backend`), never imported.
BACKEND_PACKAGES = ("codegen.llvm",)


def test_nothing_outside_a_backend_imports_it():
    violations = []
    for path in PACKAGE.rglob("*.py"):
        here = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        for target in imported_modules(path):
            for backend in BACKEND_PACKAGES:
                inside = here == backend or here.startswith(backend + ".")
                if not inside and (target == backend or target.startswith(backend + ".")):
                    violations.append(f"iree_py/{path.relative_to(PACKAGE)} imports iree_py.{target}")
    assert not violations, "\n".join(violations)

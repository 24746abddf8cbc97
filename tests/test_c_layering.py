"""The C runtime's includes point one way (docs/architecture.md, runtime_c/Makefile): base <- hal <-
vm <- api, and above api the device server, the firmware and the tools, which use the runtime
through its public header. Like tests/test_layering.py for the Python imports."""
from __future__ import annotations

import re
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[1] / "runtime_c"

# layer -> the layers its files may include besides its own. runtime_c/tests/ is not a layer: the
# C tests may reach into any of them.
ALLOWED = {
    "base": set(),
    "hal": {"base"},
    "vm": {"base", "hal"},
    "api": {"base", "hal", "vm"},
    "device": {"base", "api"},
    "firmware": {"base", "api", "device"},
    "tools": {"base", "api", "device"},
    "fuzz": {"base", "hal", "vm", "api", "device"},  # the harnesses drive each layer directly
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def includes(path: Path) -> list[str]:
    """The quoted includes of a C file, as written."""
    return INCLUDE.findall(path.read_text())


def violations(root: Path) -> list[str]:
    """Every include under root's layers that is not below (or in) its own layer, or that names no
    file of runtime_c."""
    found = []
    for layer, allowed in ALLOWED.items():
        for path in sorted((root / layer).rglob("*")):
            if path.suffix not in (".c", ".h"):
                continue
            for name in includes(path):
                target = (path.parent / name).resolve()
                where = f"{path.relative_to(root)} includes \"{name}\""
                if not target.is_file() or not target.is_relative_to(root.resolve()):
                    found.append(f"{where}, which is no file of runtime_c/")
                    continue
                target_layer = target.relative_to(root.resolve()).parts[0]
                if target_layer != layer and target_layer not in allowed:
                    found.append(f"{where}: {layer} may include only {sorted(allowed) or 'itself'}")
    return found


def test_includes_point_down():
    found = violations(RUNTIME)
    assert not found, "\n".join(found)


def test_every_layer_is_checked():
    """A new top-level folder of C sources gets a row in ALLOWED (tests/ and build/ are no layers)."""
    folders = {p.parent.relative_to(RUNTIME).parts[0] for p in RUNTIME.rglob("*.[ch]")}
    assert folders - {"tests", "build"} == set(ALLOWED)


def _tree(root: Path, files: dict[str, str]) -> Path:
    for layer in ALLOWED:
        (root / layer).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_checker_catches_an_upward_include(tmp_path):
    root = _tree(tmp_path / "runtime_c", {
        "vm/module.h": "",
        "base/status.h": "",
        "hal/executable.h": '#include "../base/status.h"\n#include "../vm/module.h"\n',
    })
    assert violations(root) == [
        "hal/executable.h includes \"../vm/module.h\": hal may include only ['base']"]


def test_checker_catches_a_missing_file_and_a_path_outside(tmp_path):
    root = _tree(tmp_path / "runtime_c", {"base/a.h": '#include "b.h"\n#include "../../x.h"\n'})
    (tmp_path / "x.h").write_text("")
    assert violations(root) == [
        'base/a.h includes "b.h", which is no file of runtime_c/',
        'base/a.h includes "../../x.h", which is no file of runtime_c/']

#!/usr/bin/env bash
# The wheel check (issue 15): what `pip install iree-py` gives a user works on its own.
#   1. build the sdist, and the wheel from that sdist (python3 -m build), so the sdist is shown to
#      carry what building the wheel needs; check what the wheel holds;
#   2. install the wheel into a fresh plain venv outside the checkout, its dependencies from PyPI;
#   3. from another directory, as a user: compile examples/mlp.onnx and run it on this host with no
#      C compiler or make on PATH (the wheel's prebuilt runtime), compile it for arm64 and run it under
#      qemu, and write the cortex-m4 runtime and firmware with build-runtime; the outputs must match
#      onnx's reference evaluator;
#   4. cross builds must land in the per-user cache (a fresh IREE_PY_CACHE_DIR), keyed by version and
#      source hash, and nothing may be written into site-packages.
# Every Python process of the installed iree-py runs under a guard (an audit hook the venv loads at
# start-up) that stops it when it imports, opens or lists anything in the checkout, or starts a
# program that names a path in it; the checkout is never on sys.path.
# Takes about 60 s here with pip's cache warm (building 10 s, installing 25 s, using it 25 s); the
# first run also downloads numpy, onnx and llvmlite.
set -euo pipefail
checkout="$(cd "$(dirname "$0")/.." && pwd -P)"
work="$(mktemp -d /tmp/iree-py-wheel-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT
begin=$SECONDS
step() { printf 'check_wheel: %s (%d s)\n' "$*" $((SECONDS - begin)); }
fail() { printf 'check_wheel: FAILED: %s\n' "$*" >&2; exit 1; }

step "building the sdist and, from it, the wheel"
python3 -m build --outdir "$work/dist" "$checkout" >"$work/build.log" 2>&1 || { tail -50 "$work/build.log"; fail "python3 -m build"; }
wheels=("$work"/dist/iree_py-*-py3-none-linux_*.whl)
[ -f "${wheels[0]}" ] || fail "no platform wheel (py3-none-linux_*) in $work/dist: $(ls "$work/dist")"
wheel="${wheels[0]}"
ls "$work"/dist/iree_py-*.tar.gz >/dev/null || fail "no sdist in $work/dist"

python3 - "$wheel" "$checkout" <<'EOF'
"""The wheel carries every target, the runtime sources without their tests, and the host runtime."""
import sys
import zipfile
from collections import Counter
from pathlib import Path

wheel, checkout = zipfile.ZipFile(sys.argv[1]), Path(sys.argv[2])
entries = {i.filename: i for i in wheel.infolist()}
data = "iree_py/_data/"
missing = [f"{data}targets/{p.name}" for p in (checkout / "targets").glob("*.toml")]
missing += [f"{data}runtime_c/{p}" for p in ("Makefile", "api/iree_py_runtime.h", "tools/runner.c",
                                             "firmware/boards/mps2-an386.mk")]
missing += [f"{data}runtime/host/{p}" for p in ("libiree_py_runtime.so", "irp-run")]
missing = [m for m in missing if m not in entries]
assert not missing, f"the wheel lacks {missing}"
assert not [n for n in entries if n.startswith(f"{data}runtime_c/tests/")], "the wheel carries runtime_c/tests"
assert entries[f"{data}runtime/host/irp-run"].external_attr >> 16 & 0o100, "irp-run is not executable in the wheel"

def kind(name: str) -> str:
    if name.startswith(f"{data}runtime/host/"):
        return "host runtime"
    if name.startswith(f"{data}runtime_c/"):
        return "C runtime sources"
    if name.startswith(f"{data}targets/"):
        return "targets"
    return "Python code" if name.endswith(".py") else "other (metadata)"

sizes = Counter()
for info in entries.values():
    sizes[kind(info.filename)] += info.file_size
print(f"check_wheel: {Path(sys.argv[1]).name}: {Path(sys.argv[1]).stat().st_size / 1024:.0f} KB; unpacked: "
      + ", ".join(f"{k} {v / 1024:.0f} KB" for k, v in sizes.most_common()))
EOF

step "installing it into a fresh venv"
python3 -m venv "$work/venv"
venv="$work/venv"
install_begin=$SECONDS
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" >"$work/pip.log" 2>&1 \
  || { tail -30 "$work/pip.log"; fail "pip install $wheel"; }
site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"
installed_at=$SECONDS

# The guard: loaded by every Python start-up in the venv, active when IREE_PY_CHECKOUT_GUARD is set.
cat >"$site/_iree_py_checkout_guard.py" <<'EOF'
import os
import sys

ROOT = os.environ.get("IREE_PY_CHECKOUT_GUARD")


def _inside(path) -> bool:
    if isinstance(path, int) or path is None:
        return False
    path = os.path.realpath(os.fsdecode(path))
    return path == ROOT or path.startswith(ROOT + os.sep)


def _stop(what: str) -> None:
    sys.stderr.write(f"checkout guard: the installed iree-py {what} in the checkout {ROOT}\n")
    sys.stderr.flush()
    os._exit(97)


def _hook(event: str, args: tuple) -> None:
    if event in ("open", "os.listdir", "os.scandir") and _inside(args[0]):
        _stop(f"used {args[0]} ({event})")
    elif event == "import" and args[1] and _inside(args[1]):
        _stop(f"imported {args[0]} from {args[1]}")
    elif event == "subprocess.Popen":
        executable, argv = args[0], args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        if any(ROOT in os.fsdecode(a) for a in [executable, *argv] if isinstance(a, (str, bytes, os.PathLike))):
            _stop(f"started {argv}, which names a path")


if ROOT:
    ROOT = os.path.realpath(ROOT)
    for entry in sys.path:
        if entry and _inside(entry):
            _stop(f"has {entry} on sys.path")
    sys.addaudithook(_hook)
EOF
echo "import _iree_py_checkout_guard" >"$site/_iree_py_checkout_guard.pth"
guard_status=0
IREE_PY_CHECKOUT_GUARD="$checkout" "$venv/bin/python" -c "open('$checkout/README.md')" 2>/dev/null || guard_status=$?
[ "$guard_status" -eq 97 ] || fail "the checkout guard let a read of $checkout/README.md through (status $guard_status)"
touch "$work/installed.stamp"

user="$work/user"
mkdir -p "$user"
cp "$checkout/examples/mlp.onnx" "$checkout/examples/mlp_input.npy" "$user/"
cd "$user"
export IREE_PY_CHECKOUT_GUARD="$checkout" IREE_PY_CACHE_DIR="$work/cache"
unset PYTHONPATH PYTHONHOME
iree_py="$venv/bin/iree-py"

step "importing every iree_py module from the venv"
"$venv/bin/python" - "$site" <<'EOF'
import importlib
import pkgutil
import sys
from pathlib import Path

import iree_py
from iree_py import resources

site = Path(sys.argv[1]).resolve()
for module in pkgutil.walk_packages(iree_py.__path__, "iree_py."):
    importlib.import_module(module.name)
outside = [m.__name__ for m in list(sys.modules.values())
           if m.__name__.startswith("iree_py") and not Path(m.__file__).resolve().is_relative_to(site)]
assert not outside, f"modules not from the venv: {outside}"
layout = resources.layout()
assert layout.checkout is None and layout.data.is_relative_to(site), layout
print(f"check_wheel: {len([m for m in sys.modules if m.startswith('iree_py')])} modules, data in {layout.data}")
EOF

step "compiling on this host, running it with no C compiler on PATH"
"$iree_py" --version
"$iree_py" compile mlp.onnx -o mlp.vmfb
PATH="$venv/bin" "$iree_py" run mlp.vmfb --input=@mlp_input.npy --output=@y_host.npy
first_run_at=$SECONDS

step "compiling for arm64, running under qemu-aarch64"
"$iree_py" compile mlp.onnx --target=arm64 -o mlp_arm64.vmfb
"$iree_py" run mlp_arm64.vmfb --device=qemu --input=@mlp_input.npy --output=@y_arm64.npy

step "writing the cortex-m4 runtime and firmware"
"$iree_py" build-runtime --target=cortex-m4 -o out/ >build_runtime.txt
for f in lib/libiree_py_runtime.a include/iree_py_runtime.h firmware/mps2-an386.elf firmware/mps2-an386.bin; do
  [ -s "out/$f" ] || fail "build-runtime wrote no out/$f"
done

step "checking the results, the cache and site-packages"
"$venv/bin/python" - <<'EOF'
import numpy as np
from onnx.reference import ReferenceEvaluator

reference = ReferenceEvaluator("mlp.onnx")
expected = reference.run(None, {reference.input_names[0]: np.load("mlp_input.npy")})[0]
for name in ("y_host.npy", "y_arm64.npy"):
    np.testing.assert_allclose(np.load(name), expected, rtol=1e-5, atol=1e-5, err_msg=name)
EOF
key="$("$venv/bin/python" -c 'import iree_py; from iree_py.resources import runtime_sources; from iree_py.runtime.build import cache_key; print(cache_key(runtime_sources(), iree_py.__version__))')"
[ -x "$IREE_PY_CACHE_DIR/builds/$key/runtime/arm64/irp-run" ] || fail "the arm64 runner is not in $IREE_PY_CACHE_DIR/builds/$key/runtime/arm64: $(find "$IREE_PY_CACHE_DIR" -maxdepth 4)"
[ -f "$IREE_PY_CACHE_DIR/builds/$key/firmware/cortex-m4/firmware.elf" ] || fail "the cortex-m4 firmware is not in the cache"
[ ! -e "$IREE_PY_CACHE_DIR/builds/$key/runtime/host" ] || fail "the host runtime was built, not taken from the wheel"
written="$(find "$site/iree_py" -type f -newer "$work/installed.stamp" ! -name '*.pyc')"
[ -z "$written" ] || fail "iree-py wrote into site-packages: $written"

step "passed: pip install to the first run $((first_run_at - install_begin)) s (install $((installed_at - install_begin)) s)"

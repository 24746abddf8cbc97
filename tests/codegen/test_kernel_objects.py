"""kernel_objects: one object per kernel, shared by identical kernels whatever their names, kept in
the per-user cache; a damaged cache file is recompiled, a disabled or unwritable cache only slows
things down; worker processes give the same objects as one process."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import iree_py
from iree_py.codegen.kernel_spec import Expr, ExprStep, KernelSpec
from iree_py.codegen.llvm import build_executable, build_kernel_objects
from iree_py.codegen.llvm.jit import LoadedLibrary
from iree_py.codegen.llvm import kernel_objects
from iree_py.codegen.llvm.kernel_objects import CACHE_ENABLED_VARIABLE, cache_folder, compile_kernel, compile_kernels
from iree_py.codegen.llvm.module_builder import kernel_ir
from iree_py.targets import load_target
from iree_py.user_cache import CACHE_DIR_VARIABLE
from tests.codegen.conftest import f32

SIGMOID = KernelSpec("k3_sigmoid", "elementwise", (f32(4, 100),), (f32(4, 100),),
                     {"expr": Expr((ExprStep("Sigmoid", (("in", 0),)),))})
TANH = KernelSpec("k4_tanh", "elementwise", (f32(4, 100),), (f32(4, 100),),
                  {"expr": Expr((ExprStep("Tanh", (("in", 0),)),))})


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    monkeypatch.delenv(CACHE_ENABLED_VARIABLE, raising=False)
    return cache_folder()


def cached_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.o")) if folder.exists() else []


def test_the_same_kernel_under_another_name_is_one_object(cache: Path):
    target = load_target("host")
    renamed = dataclasses.replace(SIGMOID, name="k9_sigmoid")
    assert kernel_ir(SIGMOID, target).text == kernel_ir(renamed, target).text
    built = build_kernel_objects([SIGMOID, renamed, TANH], target)
    assert [k.name for k in built.kernels] == ["k3_sigmoid", "k9_sigmoid", "k4_tanh"]
    assert built.symbols[0] == built.symbols[1] != built.symbols[2]
    assert len(built.objects) == 2 and len(cached_files(cache)) == 2


def test_both_names_of_a_shared_object_run(cache: Path):
    renamed = dataclasses.replace(SIGMOID, name="k9_sigmoid")
    library = LoadedLibrary(build_executable([SIGMOID, renamed], load_target("host")))
    x = np.linspace(-4, 4, 400, dtype=np.float32).reshape(4, 100)
    for spec in (SIGMOID, renamed):
        (y,) = library.run(spec, [x])
        np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-5)


def test_a_second_compile_reads_the_cache(cache: Path):
    target = load_target("host")
    text = kernel_ir(TANH, target).text
    first = compile_kernel(text, target)
    (path,) = cached_files(cache)
    stamp = path.stat().st_mtime_ns
    assert compile_kernel(text, target) == first
    assert path.stat().st_mtime_ns == stamp   # read, not written again


def test_another_target_is_another_object(cache: Path):
    host, arm = (compile_kernel(kernel_ir(TANH, load_target(t)).text, load_target(t)) for t in ("x86_64", "arm64"))
    assert host.symbol != arm.symbol and len(cached_files(cache)) == 2


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_cache_file_is_recompiled(cache: Path, damage: str):
    target = load_target("host")
    text = kernel_ir(TANH, target).text
    fresh = compile_kernel(text, target)
    (path,) = cached_files(cache)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        del data[len(data) // 2:]
    else:
        data.clear()
    path.write_bytes(bytes(data))
    assert compile_kernel(text, target) == fresh
    assert path.read_bytes() != bytes(data)    # and the file is repaired


def test_a_disabled_cache_writes_nothing(cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(CACHE_ENABLED_VARIABLE, "0")
    build_kernel_objects([SIGMOID], load_target("host"))
    assert cached_files(cache) == []


def test_an_unwritable_cache_only_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(blocker))
    monkeypatch.delenv(CACHE_ENABLED_VARIABLE, raising=False)
    built = build_kernel_objects([SIGMOID], load_target("host"))
    assert built.objects[0][:4] == b"\x7fELF"


def test_worker_processes_give_the_objects_one_process_gives(cache: Path, monkeypatch: pytest.MonkeyPatch):
    target = load_target("arm64")
    texts = [kernel_ir(s, target).text for s in (SIGMOID, TANH)]
    monkeypatch.setenv(CACHE_ENABLED_VARIABLE, "0")
    serial = compile_kernels(texts, target, jobs=1)
    monkeypatch.setattr(kernel_objects, "PARALLEL_MIN_TEXT_BYTES", 0)
    monkeypatch.delenv(CACHE_ENABLED_VARIABLE)
    assert compile_kernels(texts, target, jobs=2) == serial
    assert len(cached_files(cache)) == 2      # the workers filled the cache


def test_a_failing_worker_is_an_error_that_says_what_failed(cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kernel_objects, "PARALLEL_MIN_TEXT_BYTES", 0)
    broken = kernel_ir(TANH, load_target("host")).text.replace("ret i32", "ret i64", 1)
    with pytest.raises(RuntimeError, match=r"compiling kernels for host in a worker process failed: RuntimeError: generated LLVM IR .* is invalid"):
        compile_kernels([broken, kernel_ir(SIGMOID, load_target("host")).text], load_target("host"), jobs=2)


def test_compile_jobs_do_not_change_the_module(cache: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(kernel_objects, "PARALLEL_MIN_TEXT_BYTES", 0)
    monkeypatch.setenv(CACHE_ENABLED_VARIABLE, "0")
    model = Path(__file__).resolve().parents[2] / "examples" / "small_cnn.onnx"
    assert iree_py.compile(model, jobs=2) == iree_py.compile(model, jobs=1)

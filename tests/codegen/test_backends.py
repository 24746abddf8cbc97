"""Every backend against the one table of kernel kinds, and the targets' choice of backend."""
import dataclasses
import importlib

import pytest

from iree_py.codegen.backend import BACKENDS, backend_for
from iree_py.codegen.kernel_kinds import KERNEL_KINDS
from iree_py.errors import CompileError
from iree_py.targets import available_targets, load_target

# Kinds a backend does not build yet, by backend: listed here, so they are known before compile time.
LACKING: dict[str, set[str]] = {
    "llvm": set(),
    # The first Vulkan slice (docs/vulkan.md): f32 linear algebra, windows, softmax, reduce, data movement.
    "spirv": {"dequantize",
              "gru", "lstm", "maxpool_index",
              "nms_output", "nms_select", "qadd", "qavgpool",
              "qconv_dot", "qconv_transpose", "qdwconv", "qlookup", "qlstm", "qsoftmax", "quantize",
              "resize", "rnn", "roi_align",
              "string_equal", "unique", "unique_count"},
}


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_backend_builds_every_kernel_kind_but_the_listed(name: str):
    backend = importlib.import_module(BACKENDS[name]).BACKEND
    assert backend.name == name
    unknown = sorted(backend.kernel_kinds - set(KERNEL_KINDS))
    assert not unknown, f"backend {name} builds kinds KERNEL_KINDS does not document: {unknown}"
    missing = set(KERNEL_KINDS) - backend.kernel_kinds
    assert missing == LACKING[name], (f"backend {name}: lacks {sorted(missing - LACKING[name])} (not listed), "
                                      f"builds {sorted(LACKING[name] - missing)} (listed as lacking)")


def test_every_kernel_kind_says_what_it_takes():
    assert all(isinstance(doc, str) and len(doc) > 10 for doc in KERNEL_KINDS.values())


@pytest.mark.parametrize("name", available_targets())
def test_every_target_names_a_known_backend(name: str):
    assert backend_for(load_target(name)).name == load_target(name).backend


def test_unknown_backend_is_a_compile_error():
    target = dataclasses.replace(load_target("host"), backend="metal")
    with pytest.raises(CompileError, match="target host: unknown backend 'metal'; known backends: llvm, spirv"):
        backend_for(target)

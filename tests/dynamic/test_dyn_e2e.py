"""Dynamic shapes end to end: each model of dyn_models.py is compiled ONCE per target and run at
several input sizes in the C runtime (host in-process, arm64 under qemu-aarch64), matching
onnxruntime within 1e-4 of the largest reference value."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import iree_py
from dyn_models import MODELS

from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module

from tests.e2e.harness import DEVICE, assert_close, run_onnxruntime

SIZES = {
    "mlp": [{"batch": 1}, {"batch": 5}, {"batch": 33}],
    "encoder_block": [{"batch": 1, "seq": 1}, {"batch": 2, "seq": 7}, {"batch": 3, "seq": 20}],
    "conv_lstm": [{"T": 1}, {"T": 9}, {"T": 40}],
    "image_net": [{"height": 5, "width": 5}, {"height": 17, "width": 23}, {"height": 32, "width": 40}],
}
ARM64_SIZES = {name: sizes[1:] for name, sizes in SIZES.items()}  # qemu is slow: two sizes each


@functools.cache
def _compiled(name: str, target: str) -> bytes:
    model, _ = MODELS[name]()
    return iree_py.compile(model.SerializeToString(), target=target)


def _check(name: str, target: str, sizes: list[dict[str, int]]) -> None:
    model, make_inputs = MODELS[name]()
    module = iree_py.load(_compiled(name, target), device=DEVICE[target])
    for size in sizes:
        inputs = make_inputs(size)
        actual = module.main.call(*inputs)
        assert_close(actual, run_onnxruntime(model, inputs))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_module_serves_every_size_on_host(name: str) -> None:
    _check(name, "host", SIZES[name])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_one_module_serves_every_size_on_arm64(name: str) -> None:
    _check(name, "arm64", ARM64_SIZES[name])


def test_dump_shows_symbolic_signature_and_shape_arithmetic() -> None:
    data = _compiled("encoder_block", "host")
    text = dump_module(read_module(data), data)
    assert "{batch}" in text and "{seq}" in text          # the signature names the symbols
    for op in ("mul_i64", "buffer_alloc", "buffer_free", "ret_i64"):  # shape arithmetic, pool, output dims
        assert op in text, f"no {op} in the dump"


def test_peak_memory_grows_with_the_input() -> None:
    model, make_inputs = MODELS["encoder_block"]()
    module = iree_py.load(_compiled("encoder_block", "host"))
    peaks = []
    for size in ({"batch": 1, "seq": 2}, {"batch": 2, "seq": 30}):
        module.main.call(*make_inputs(size))
        peaks.append(module.peak_bytes)
    assert 0 < peaks[0] < peaks[1]

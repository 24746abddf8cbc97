"""`iree-py dump` of a small model, against a golden file.

Compiled for the fixed `x86_64` target (not `host`, whose kernels follow this machine's CPU).
The byte counts of machine code depend on the LLVM version, so those numbers are masked; the
bytecode, signatures, entry points, constants and memory plan are compared exactly.
Regenerate with: IREE_PY_UPDATE_GOLDEN=1 python -m pytest tests/module/test_dump_golden.py
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
from onnx import helper

import iree_py
from iree_py.module.dump import dump_module
from iree_py.module.reader import read_module
from tests.e2e.harness import model

GOLDEN = Path(__file__).parent / "golden" / "conv_block.dump.txt"


def conv_block():
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "FW", "FB"], ["y"], name="fc", transB=1),
    ]
    return model(nodes, {"x": (1, 2, 4, 4)}, ["y"], {"W": rng.standard_normal((3, 2, 3, 3)).astype(np.float32),
                                                      "B": np.zeros(3, np.float32),
                                                      "FW": rng.standard_normal((5, 12)).astype(np.float32),
                                                      "FB": np.zeros(5, np.float32)})


def masked_dump(data: bytes) -> str:
    text = dump_module(read_module(data), data)
    text = re.sub(r"^(sections \()\d+( bytes in all\):)$", r"\1N\2", text, flags=re.M)
    text = re.sub(r"^(  (kernels|metadata) +)\d+( bytes)$", r"\1N\3", text, flags=re.M)
    return re.sub(r"(elf, )\d+( bytes of code)", r"\1N\2", text)


def test_dump_matches_golden():
    text = masked_dump(iree_py.compile(conv_block().SerializeToString(), target="x86_64"))
    if os.environ.get("IREE_PY_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()

"""Dynamic shapes through the device protocol: the device server (device-sim, under ASan + UBSan)
passes each input's shape to irp_call and sends back each output's real shape."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import iree_py
from iree_py.errors import IreeRuntimeError
from iree_py.module.writer import write_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime_c" / "tests"))
import dynamic_test_modules as dyn  # noqa: E402


def test_dynamic_module_on_a_board(sim):
    m = iree_py.load(write_module(dyn.dynamic_module()), device=sim.url)
    for n, k in [(4, 3), (0, 2), (9, 0)]:
        a = np.arange(n, dtype=np.float32)
        b = np.arange(k, dtype=np.float32) + 50
        c = m.concat(a, b)
        assert c.shape == (n + k,)
        np.testing.assert_array_equal(c, np.concatenate([a, b]))
    with pytest.raises(IreeRuntimeError, match=r"input 'b' dim 0 \(n\) is 3 but input 'a' dim 0 \(n\) is 2"):
        m.same_n(np.zeros(2, np.float32), np.zeros(3, np.float32))

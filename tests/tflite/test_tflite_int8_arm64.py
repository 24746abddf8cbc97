"""The int8 ops the small CNN (test_tflite_quant.py) does not hold, in one model under
qemu-aarch64, bit-exact with TFLite's reference kernels: CONCATENATION, SOFTMAX, LOGISTIC, TANH and
TRANSPOSE_CONV (per-channel weights)."""
from __future__ import annotations

import numpy as np
from tflite_quant_harness import check, qbias, qinput, qtensor, qweights

from iree_py.frontends.tflite.schema.ConcatenationOptions import ConcatenationOptionsT
from iree_py.frontends.tflite.schema.SoftmaxOptions import SoftmaxOptionsT
from iree_py.frontends.tflite.schema.TransposeConvOptions import TransposeConvOptionsT
from tflite_writer import TfliteModel

SAME = 0


def int8_zoo() -> TfliteModel:
    rng = np.random.default_rng(5)
    m = TfliteModel()
    x = qinput(m, "x", (1, 4, 5, 3), 0.05, -3)
    concat = qtensor(m, "concat", 0.05, -3)
    opts = ConcatenationOptionsT()
    opts.axis = 3
    m.op("CONCATENATION", [x, x], [concat], opts)
    softmax = qtensor(m, "softmax", 1 / 256, -128)
    beta = SoftmaxOptionsT()
    beta.beta = 1.0
    m.op("SOFTMAX", [x], [softmax], beta)
    logistic, tanh = qtensor(m, "logistic", 1 / 256, -128), qtensor(m, "tanh", 1 / 128, 0)
    m.op("LOGISTIC", [x], [logistic])
    m.op("TANH", [x], [tanh])
    scales = list(rng.uniform(0.002, 0.02, 4))
    tconv = qtensor(m, "tconv", 0.04, 5)
    t_opts = TransposeConvOptionsT()
    t_opts.padding, t_opts.strideH, t_opts.strideW = SAME, 2, 2
    m.op("TRANSPOSE_CONV", [m.const("out_shape", np.array([1, 8, 10, 4], np.int32)),
                            qweights(m, "w", rng, (4, 3, 3, 3), scales, 0), x, qbias(m, "b", rng, 4, 0.05, scales)],
         [tconv], t_opts)
    for t in (concat, softmax, logistic, tanh, tconv):
        m.output(t)
    return m


def test_int8_ops_on_arm64_are_bit_exact():
    check(int8_zoo(), targets=("reference", "host", "arm64"))

"""Damaged models get one clear error of ours, never an internal error or a raw Python exception
(issue 14 part 5): seeded mutants of the bundled examples and of ONNX node-test models (every kind
of op) through iree_py.compile. A mutant that still compiles is fine; a CompileError is the answer
for the rest. The first error of each kind is shown, with the seed and the model, to reproduce."""
from __future__ import annotations

import random
from pathlib import Path

import onnx
import pytest

import iree_py
from iree_py.conformance.cases import collect_cases
from iree_py.errors import CompileError
from tests.fuzz.model_mutations import mutate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MUTANTS_PER_SEED = 60
# Node tests of op families the mutations reach deep into (shape rules, windows, indexing).
NODE_TESTS = ("test_conv_with_strides_padding", "test_maxpool_2d_pads", "test_gather_1", "test_slice",
              "test_split_equal_parts_1d_opset13", "test_reshape_negative_dim", "test_concat_2d_axis_0",
              "test_layer_normalization_4d_axis2_expanded", "test_attention_3d", "test_lppool_2d_default",
              "test_resize_downsample_scales_linear", "test_transpose_all_permutations_0", "test_matmul_3d",
              "test_softmax_axis_1", "test_constant_pad", "test_reduce_sum_keepdims_example", "test_lstm_defaults")


def seed_models() -> list[tuple[str, onnx.ModelProto]]:
    models = [(p.name, onnx.load(str(p))) for p in sorted(EXAMPLES.glob("*.onnx"))]
    cases = {c.name: c for c in collect_cases()}
    models += [(name, onnx.load_from_string(cases[name].model)) for name in NODE_TESTS if name in cases]
    return models


@pytest.mark.parametrize("seed", range(4))
def test_mutated_models_get_compile_errors(seed: int):
    rng = random.Random(seed)
    models = seed_models()
    assert len(models) == len(NODE_TESTS) + len(list(EXAMPLES.glob("*.onnx")))
    failures = []
    for i in range(MUTANTS_PER_SEED):
        name, model = rng.choice(models)
        data = mutate(model, rng)
        try:
            iree_py.compile(data, target="host")
        except CompileError:
            pass
        except Exception as e:  # an InternalCompilerError or anything raw: a bug
            failures.append(f"mutant {i} of {name} (seed {seed}): {type(e).__name__}: {str(e)[:300]}")
    assert not failures, "\n".join(failures)

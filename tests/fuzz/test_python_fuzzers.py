"""The Python fuzz harnesses (tests/fuzz/python/, docs/testing.md "Fuzzing") as standing checks:
every regression input replays to one of our own errors, a seeded mutation loop over each
harness's seeds finds nothing, and the atheris driver runs each harness briefly (the CI smoke step;
long runs: tests/fuzz/python/fuzz.py with -max_total_time)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.python.harnesses import HARNESSES
from tests.fuzz.python.seeds import SEEDS

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = Path(__file__).resolve().parent / "python" / "regressions"
MUTANTS = {"compile": 40, "module": 400, "npy": 400}
SMOKE_SECONDS = 4


def regression_inputs() -> list[tuple[str, Path]]:
    return [(h, p) for h in HARNESSES for p in sorted((REGRESSIONS / h).glob("*")) if p.is_file()]


def test_every_harness_has_regression_inputs() -> None:
    assert {h for h, _ in regression_inputs()} == set(HARNESSES)


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_regression_inputs_get_clear_errors(harness: str) -> None:
    paths = [str(p) for h, p in regression_inputs() if h == harness]
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "fuzz" / "python" / "replay.py"), harness, *paths],
                            capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert result.stdout.count("ok ") == len(paths)


def mutant(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.3 and len(data) > 1:
        return data[:rng.randrange(len(data))]
    out = bytearray(data)
    for _ in range(rng.randint(1, 10)):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_seeded_mutants(harness: str) -> None:
    seeds = SEEDS[harness]()
    if harness == "compile":  # ONNX mutants: tests/fuzz/test_mutated_models.py; here the TFLite seeds
        seeds = [s for s in seeds if s[4:8] == b"TFL3"]
    rng = random.Random(harness)
    for i in range(MUTANTS[harness]):
        data = mutant(rng.choice(seeds), rng)
        try:
            HARNESSES[harness](data)
        except AssertionError as e:
            raise AssertionError(f"mutant {i} (write it to a file to reproduce: {data!r:.200}): {e}") from None


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_atheris_smoke_run(harness: str, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "fuzz" / "python" / "fuzz.py"), harness,
                             f"-max_total_time={SMOKE_SECONDS}", f"-artifact_prefix={tmp_path}/"],
                            capture_output=True, text=True, cwd=ROOT, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})  # fuzz.py imports tests.fuzz.python
    assert result.returncode == 0, result.stderr[-6000:]
    assert "Done" in result.stderr, result.stderr[-3000:]

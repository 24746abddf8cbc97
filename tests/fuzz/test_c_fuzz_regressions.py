"""The C runtime's fuzz harnesses (runtime_c/fuzz/, docs/testing.md "Fuzzing") as standing checks:
every regression input the fuzzers found replays cleanly (the replay drivers: the same harnesses
without libFuzzer, under ASan + UBSan, built with the system C compiler), and each libFuzzer
harness runs a few seconds over quick seed corpora and the regressions without a finding (the CI
smoke step). A reintroduced bug fails the replay; a new crash on the seeds fails the smoke run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime_c"
REGRESSIONS = RUNTIME / "fuzz" / "regressions"
HARNESSES = ("module", "device", "elf", "flat")
SMOKE_SECONDS = 3
# An input that made the runtime loop for ever must fail here, not hang the suite.
REPLAY_TIMEOUT = 60


def make(build: Path, *targets: str, **variables: str) -> None:
    args = ["make", "-s", "-j2", "-C", str(RUNTIME), f"BUILD_DIR={build}", *targets,
            *(f"{k}={v}" for k, v in variables.items())]
    result = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "MAKEFLAGS": ""})
    assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    build = tmp_path_factory.mktemp("fuzz-build")
    make(build, "fuzz-replay-build", f"{build}/test_modules.stamp")
    return build


def inputs_of(harness: str) -> list[Path]:
    folder = REGRESSIONS / harness
    return sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []


@pytest.mark.parametrize("harness", HARNESSES)
def test_regression_inputs_replay_cleanly(build: Path, harness: str):
    inputs = inputs_of(harness)
    env = {**os.environ, "IRP_FUZZ_DATA": f"{build}/fuzz:{REGRESSIONS}",
           "ASAN_OPTIONS": "allocator_may_return_null=1:detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"}
    try:
        result = subprocess.run([str(build / "fuzz" / f"{harness}_replay"), str(REGRESSIONS / harness)],
                                capture_output=True, text=True, env=env, timeout=REPLAY_TIMEOUT, cwd=RUNTIME)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{harness}: replaying {len(inputs)} regression inputs took over {REPLAY_TIMEOUT} s "
                    f"(a hang came back):\n{(e.stderr or b'')[-3000:]!r}")
    assert result.returncode == 0, f"{harness}:\n{result.stderr[-6000:]}"
    assert f"replayed {len(inputs)} inputs" in result.stdout


def test_every_regression_input_is_in_a_harness_folder():
    """Regression inputs live in regressions/HARNESS/; the folder's other files are what they trust."""
    stray = [p.name for p in REGRESSIONS.iterdir() if p.is_file() and p.name != "trusted_code.txt"]
    assert not stray, f"regression inputs outside a harness folder: {stray}"
    assert sum(len(inputs_of(h)) for h in HARNESSES) > 0


@pytest.mark.skipif(shutil.which("clang") is None, reason="clang (libFuzzer) is not installed: scripts/setup.sh")
def test_each_libfuzzer_harness_runs_clean_for_a_few_seconds(build: Path):
    make(build, "fuzz")
    corpus = subprocess.run([sys.executable, str(RUNTIME / "fuzz" / "make_corpus.py"), "--quick", f"--out={build}/fuzz",
                             f"--test-modules={build}/test_modules", f"--test-kernels={build}/test_kernels.so"],
                            capture_output=True, text=True)
    assert corpus.returncode == 0, corpus.stderr[-4000:]
    make(build, "fuzz-smoke", FUZZ_SECONDS=str(SMOKE_SECONDS))

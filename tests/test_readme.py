"""The README's first command (set up, compile and run the bundled example) works as written."""
import re
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    return re.findall(r"```\n(.+?)\n```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_opens_with_the_main_job_and_the_tests():
    first, second = readme_commands()[:2]
    assert "iree-py compile examples/" in first and "iree-py run" in first
    assert second.endswith("python3 -m pytest")
    assert (ROOT / ".ci" / "run").read_text().rstrip().endswith("python3 -m pytest -p no:cacheprovider")


def test_readme_main_command_runs(tmp_path):
    command = readme_commands()[0].replace("/tmp/", f"{tmp_path}/")
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("probs: 1x10xfloat32")
    probabilities = np.array([float(v) for v in re.findall(r"[-\d.e]+", result.stdout.split("\n", 1)[1])])
    assert probabilities.size == 10 and abs(probabilities.sum() - 1) < 1e-4

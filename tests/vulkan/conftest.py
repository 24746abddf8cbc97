import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "e2e"))  # harness.py, test_ops.CASES

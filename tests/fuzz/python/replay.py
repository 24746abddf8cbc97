"""Replay inputs through one Python fuzz harness, in a process of its own (under the harness's
address-space limit): `python3 tests/fuzz/python/replay.py HARNESS FILE...`. Prints each input's
outcome; exits 1 if any broke the promise (harnesses.py)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from tests.fuzz.python.harnesses import HARNESSES, limit_address_space  # noqa: E402


def main() -> int:
    harness, paths = sys.argv[1], [Path(p) for p in sys.argv[2:]]
    limit_address_space(harness)
    failed = 0
    for path in paths:
        try:
            HARNESSES[harness](path.read_bytes())
            print(f"ok {path.name}")
        except AssertionError as e:
            failed += 1
            print(f"FAILED {path.name}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

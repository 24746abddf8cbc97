"""Add the kernel code inside regression inputs to fuzz/regressions/trusted_code.txt, so replaying
them runs that code on any machine. Only blobs the build's trusted_code.txt already lists (those
the harness ran when it found the input) are added.

    python3 runtime_c/fuzz/add_regression_trust.py --trusted=BUILD/fuzz/trusted_code.txt INPUT...
"""
from __future__ import annotations

import argparse
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from iree_py.errors import IreePyError  # noqa: E402
from iree_py.module.reader import read_module  # noqa: E402

REGRESSION_TRUST = Path(__file__).resolve().parent / "regressions" / "trusted_code.txt"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trusted", required=True, type=Path)
    parser.add_argument("inputs", nargs="+", type=Path)
    args = parser.parse_args()
    known = {" ".join(line.split()[1:3]): line for line in args.trusted.read_text().splitlines() if line}
    lines = set(REGRESSION_TRUST.read_text().splitlines()) if REGRESSION_TRUST.exists() else set()
    lines.discard("")
    for path in args.inputs:
        try:
            executables = read_module(path.read_bytes()).executables
        except IreePyError:
            continue
        for executable in executables:
            key = f"{zlib.crc32(executable.code):08x} {len(executable.code)}"
            if key in known:
                lines.add(known[key])
                print(f"{path.name}: trusts {executable.arch} code {key}")
    REGRESSION_TRUST.write_text("\n".join(sorted(lines)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

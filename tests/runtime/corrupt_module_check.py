"""Load every truncation and many byte-flipped variants of a module in the C runtime.

Run as a script (by tests/runtime/test_corrupt_module.py) so that a crash is reported with the
mutation that caused it instead of killing the test process. Prints one line per finding:
`ok N`, or exits non-zero if a load misbehaves in a way Python can see.
"""
from __future__ import annotations

import struct
import sys

import numpy as np

from iree_py.errors import IreeRuntimeError
from iree_py.module.reader import read_module
from iree_py.runtime.devices import LocalDevice


def executable_code_ranges(data: bytes) -> list[tuple[int, int]]:
    """File ranges (in the module) of machine code: flipping those bytes changes what a kernel
    does, which no loader can detect, so they are left alone."""
    ranges = []
    start = 0
    while True:
        at = data.find(b"\x7fELF", start)
        if at < 0:
            return ranges
        phoff, = struct.unpack_from("<Q", data, at + 32)
        phentsize, phnum = struct.unpack_from("<HH", data, at + 54)
        for i in range(phnum):
            p = at + phoff + i * phentsize
            p_type, p_flags, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, p)
            if p_type == 1 and p_flags & 1:  # PT_LOAD, executable
                ranges.append((at + p_offset, at + p_offset + p_filesz))
        start = at + 4


def main(path: str, stride: int) -> int:
    data = open(path, "rb").read()
    module = read_module(data)
    fn = module.functions[0]
    inputs = [np.ones(s.shape, s.dtype.numpy) for s in fn.inputs]
    code = executable_code_ranges(data)
    loaded = rejected = 0

    def attempt(mutated: bytes, call: bool) -> None:
        nonlocal loaded, rejected
        try:
            device = LocalDevice(mutated)
        except IreeRuntimeError:
            rejected += 1
            return
        loaded += 1
        if call:
            try:
                device.call(fn, inputs)
            except IreeRuntimeError:
                pass

    for n in range(0, len(data), max(1, stride // 8)):
        attempt(data[:n], call=False)
    for offset in range(0, len(data), stride):
        if any(lo <= offset < hi for lo, hi in code):
            continue
        for value in (0x00, 0xFF, 0x7F, 0x80, data[offset] ^ 0x01):
            mutated = bytearray(data)
            mutated[offset] = value
            attempt(bytes(mutated), call=True)
    print(f"loaded {loaded} rejected {rejected}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

"""Load every truncation and many byte-flipped variants of a module in the C runtime.

Run as a script (by tests/runtime/test_corrupt_module.py) so that a crash is reported with the
mutation that caused it instead of killing the test process. Every mutated module that still loads
is also called. Flips inside kernel code (machine code, relocations, ELF headers) must all be
refused at load by the executable's CRC-32: no bounds check could tell a moved code pointer.
Prints `loaded N rejected N`; exits 1 if a code flip was accepted.
"""
from __future__ import annotations

import sys

import numpy as np

from iree_py.errors import IreeRuntimeError
from iree_py.module.reader import read_module
from iree_py.runtime.devices import LocalDevice


def main(path: str, stride: int) -> int:
    data = open(path, "rb").read()
    module = read_module(data)
    fn = module.functions[0]
    inputs = [np.ones(s.shape, s.dtype.numpy) for s in fn.inputs]
    code_ranges = [(at, at + len(e.code)) for e in module.executables for at in [data.find(e.code)]]
    loaded = rejected = 0

    def attempt(mutated: bytes) -> bool:
        nonlocal loaded, rejected
        try:
            device = LocalDevice(mutated)
        except IreeRuntimeError:
            rejected += 1
            return False
        loaded += 1
        try:
            device.call(fn, inputs)
        except IreeRuntimeError:
            pass
        return True

    for n in range(0, len(data), max(1, stride // 8)):
        attempt(data[:n])
    for offset in range(0, len(data), stride):
        for value in {0x00, 0xFF, 0x7F, 0x80, data[offset] ^ 0x01} - {data[offset]}:
            mutated = bytearray(data)
            mutated[offset] = value
            if attempt(bytes(mutated)) and any(lo <= offset < hi for lo, hi in code_ranges):
                print(f"a flip of kernel code at {offset} to {value:#x} was accepted")
                return 1
    print(f"loaded {loaded} rejected {rejected}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))

"""A worker process of kernel_objects.compile_kernels: reads a pickled (target, canonical IR texts)
on stdin, compiles each (filling the cache as it goes) and writes a pickled ("ok", objects) or
("error", message) on stdout. An LLVM abort ends the process; the parent reports its stderr."""
from __future__ import annotations

import pickle
import sys

from iree_py.codegen.llvm.kernel_objects import compile_kernel


def main() -> None:
    target, texts = pickle.load(sys.stdin.buffer)
    try:
        result: tuple = ("ok", [compile_kernel(t, target) for t in texts])
    except Exception as err:  # reported by the parent, which raises it
        result = ("error", f"{type(err).__name__}: {err}")
    pickle.dump(result, sys.stdout.buffer)


if __name__ == "__main__":
    main()

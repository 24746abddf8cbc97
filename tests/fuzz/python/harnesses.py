"""The Python fuzz harnesses (docs/testing.md "Fuzzing"): one function per way bad bytes reach
iree-py, each raising only when iree-py breaks its promise. A damaged input must end in one of our
own errors (IreePyError) naming what is wrong; a raw Python exception, an internal compiler error,
a crash, a hang or an out-of-memory kill is a finding.

Used by fuzz.py (atheris, coverage-guided, for long runs) and by test_python_fuzzers.py (the
regression inputs and a short run in the suite)."""
from __future__ import annotations

import contextlib
import io
import math
import resource
import tempfile
from functools import cache
from pathlib import Path

import numpy as np

import iree_py
from iree_py.errors import InternalCompilerError, IreePyError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
CALL_ELEMENTS = 1 << 24  # load_and_call calls a function only when its inputs are at most this large


class BrokenPromise(AssertionError):
    """iree-py answered a bad input with something other than one of its own clear errors."""


def _ours_only(what: str, action) -> None:
    try:
        action()
    except InternalCompilerError as e:
        raise BrokenPromise(f"{what}: internal compiler error: {e}") from e
    except IreePyError as e:
        if not str(e).strip():
            raise BrokenPromise(f"{what}: {type(e).__name__} without a message") from e


def compile_model(data: bytes) -> None:
    """Model bytes (ONNX or TFLite) through iree_py.compile for this host."""
    _ours_only("compile", lambda: iree_py.compile(data, target="host"))


def load_and_call(data: bytes) -> None:
    """Module bytes through iree_py.load, then one call of each function with zero inputs of the
    declared shapes (dynamic dims 1)."""
    def run() -> None:
        module = iree_py.load(data)
        for fn in module.functions.values():
            shapes = [[1 if d < 0 else d for d in s.shape] for s in fn.inputs]
            if any(s.dtype.value == "string" or math.prod(shape) > CALL_ELEMENTS for s, shape in zip(fn.inputs, shapes)):
                continue  # the harness cannot make such inputs (the runtime's own checks are the C fuzzer's)
            fn.call(*[np.zeros(shape, dtype=s.dtype.numpy) for s, shape in zip(fn.inputs, shapes)])
    _ours_only("load and call", run)


def run_npy(data: bytes) -> None:
    """`iree-py run` of the bundled small CNN with the bytes as its --input=@x.npy file: the exit
    status must be 0 or 1 (a clear error), never the internal-error status or an exception."""
    from iree_py.cli.main import main
    with tempfile.TemporaryDirectory(prefix="iree-py-fuzz-") as tmp:
        path = Path(tmp) / "x.npy"
        path.write_bytes(data)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            status = main(["run", str(small_cnn_module()), f"--input=@{path}"])
        if status not in (0, 1):
            raise BrokenPromise(f"iree-py run exited {status}: {stderr.getvalue()[-2000:]}")
        if status == 1 and not stderr.getvalue().startswith("iree-py run: error: "):
            raise BrokenPromise(f"iree-py run failed without its error line: {stderr.getvalue()[-2000:]}")


@cache
def small_cnn_module() -> Path:
    path = Path(tempfile.mkdtemp(prefix="iree-py-fuzz-")) / "small_cnn.vmfb"
    path.write_bytes(iree_py.compile(EXAMPLES / "small_cnn.onnx", target="host"))
    return path


HARNESSES = {"compile": compile_model, "module": load_and_call, "npy": run_npy}

# The module and npy harnesses run under this address-space limit (fuzz.py, replay.py): the runtime
# takes the machine's physical memory as its bound, and a module that plans an 8 GiB arena is
# legitimate on a machine of 24 GiB, but where the allocation fails it must fail clearly.
ADDRESS_SPACE_LIMITED = ("module", "npy")
ADDRESS_SPACE_BYTES = 4 << 30


def limit_address_space(harness: str) -> None:
    if harness in ADDRESS_SPACE_LIMITED:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, resource.getrlimit(resource.RLIMIT_AS)[1]))

"""The errors iree-py raises. Each message names what was wrong and what was expected."""
from __future__ import annotations

import contextlib
from typing import Iterator


class IreePyError(Exception):
    """Base of every iree-py error."""


class CompileError(IreePyError):
    """The model cannot be compiled: malformed input, unsupported op or attribute."""


class ModuleFormatError(IreePyError):
    """Module bytes that are not a valid iree-py module."""


class IreeRuntimeError(IreePyError):
    """The C runtime reported an error (verification, bad inputs, kernel failure)."""


class ToolNotFoundError(IreePyError):
    """A program iree-py runs (a C compiler, make, qemu, ld.lld) is not installed; the message names
    the package that brings it."""


class InternalCompilerError(IreePyError):
    """A bug in iree-py: an exception that is none of the above, caught where it happened (the node
    being imported, the pass, the kernel being generated). `__cause__` is the original exception;
    the CLI prints its traceback with --verbose and exits with INTERNAL_ERROR_EXIT_CODE."""


INTERNAL_ERROR_EXIT_CODE = 3  # the CLI's exit status for an internal error (1: an error in the input)


def internal_error(where: str, err: BaseException) -> InternalCompilerError:
    """The error to raise `from err` for an unexpected `err` at `where` ("at node 'X' (op Y, opset
    Z)", "in pass fold-constants", ...)."""
    text = " ".join(str(err).split())
    notes = getattr(err, "__notes__", None)  # a more precise place, noted by the code that knew it
    where = notes[0] if notes else where
    return InternalCompilerError(f"internal compiler error {where}: {type(err).__name__}"
                                 f"{': ' + text[:500] if text else ''}")


@contextlib.contextmanager
def reported_as_internal(where: str) -> Iterator[None]:
    """Inside the block, an exception that is not an IreePyError becomes an InternalCompilerError
    naming `where`."""
    try:
        yield
    except IreePyError:
        raise
    except Exception as err:
        raise internal_error(where, err) from err

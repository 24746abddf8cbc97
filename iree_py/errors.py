"""The errors iree-py raises. Each message names what was wrong and what was expected."""
from __future__ import annotations


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

"""What happened to one case, and how a compile failure is classified."""
from __future__ import annotations

import dataclasses
import re

PASSED = "passed"
WRONG_RESULT = "wrong result"
UNSUPPORTED = "unsupported"
COMPILE_ERROR = "compile error"
RUNTIME_ERROR = "runtime error"
STATUSES = (PASSED, WRONG_RESULT, UNSUPPORTED, COMPILE_ERROR, RUNTIME_ERROR)

# A CompileError whose message says iree-py does not handle something (an op, an element type, an
# attribute value, a non-tensor value, a shape that is not static) is "unsupported"; any other
# compile failure is a "compile error" worth a look. A backend's refusal of a kernel it cannot build
# ("target vulkan (backend spirv) cannot build kernel kind 'gather': ...", codegen/spirv/plan.py) is
# "unsupported" too: the target does not handle that kind or dtype yet.
_UNSUPPORTED = re.compile(
    r"not supported|unsupported|is only supported|are supported|is supported"
    r"|is not a tensor|must be a constant|needs static shapes|imports no default-domain"
    r"|\(backend \w+\) cannot build kernel kind")
_BLOCKING_OP = re.compile(r"\((?:op )?([A-Z]\w*)[,)]")  # frontend "(op Foo, opset 13)", verifier "(Foo)"


@dataclasses.dataclass(frozen=True)
class CaseResult:
    name: str
    op: str           # the tested op (cases.tested_op)
    status: str       # one of STATUSES
    detail: str = ""  # the reason: error message, or what differed

    @property
    def blocking_op(self) -> str:
        """The op a failure message names ("node 'n' (op Foo, opset 13): ..."), else the tested op."""
        match = _BLOCKING_OP.search(self.detail)
        return match.group(1) if match and self.status != PASSED else self.op


def classify_compile_error(message: str) -> str:
    return UNSUPPORTED if _UNSUPPORTED.search(message) else COMPILE_ERROR

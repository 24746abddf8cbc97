"""The compiler's mirror of runtime_c/hal/kernel_abi.h.

Kernel builders read the dispatch state through the offsets here (they depend on the target's
pointer size); the test harness (codegen/llvm/jit.py) fills the ctypes structs for this host.
KERNEL_STATUSES is the one table of what a kernel may return: builders return its codes, the C
runtime adds the meaning to a failed dispatch's message, and the Python runtime names the failed
node with it (iree_py/runtime/kernel_failures.py). tests/test_kernel_abi.py compiles a C program
against the header and checks that both agree, layouts and statuses.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass

KERNEL_ABI_VERSION = 2  # 2: the dispatch state's read_only_bindings
LIBRARY_QUERY_SYMBOL = "irp_kernel_library_query"


@dataclass(frozen=True)
class KernelStatus:
    """A value a kernel entry point returns: kernel_abi.h's IRP_KERNEL_STATUS_<name> = code."""

    code: int
    name: str
    meaning: str  # what went wrong, as the user reads it after "node 'X' (op Y): "


STATUS_OK = 0
STATUS_DISPATCH_REFUSED = 1
STATUS_STRINGS_MALFORMED = 2
STATUS_INDEX_OUT_OF_RANGE = 3
STATUS_UNSUPPORTED_VALUE = 4
STATUS_READ_ONLY_BINDING = 5

KERNEL_STATUSES: tuple[KernelStatus, ...] = (
    KernelStatus(STATUS_OK, "OK", "the kernel ran to the end"),
    # the dispatch guard (codegen/llvm/dispatch_guard.py), and a symbolic kernel whose run-time
    # dims disagree with each other or with what it can do (copy_common.py fail_unless)
    KernelStatus(STATUS_DISPATCH_REFUSED, "DISPATCH_REFUSED",
                 "the kernel refused its dispatch (grid, bindings or run-time dims other than it was built for)"),
    KernelStatus(STATUS_STRINGS_MALFORMED, "STRINGS_MALFORMED", "a packed string tensor's offsets do not fit its buffer"),
    # Gather, GatherElements, GatherND, ScatterElements, ScatterND, RoiAlign's batch indices
    KernelStatus(STATUS_INDEX_OUT_OF_RANGE, "INDEX_OUT_OF_RANGE", "an index is outside the range of its axis"),
    # Unique's data with a NaN (no order to sort it in), a RoiAlign roi whose sample count is not finite
    KernelStatus(STATUS_UNSUPPORTED_VALUE, "UNSUPPORTED_VALUE", "an input holds a value this kernel cannot compute "
                                                               "with (a NaN to sort, a non-finite size)"),
    # the dispatch guard: a binding its kernel writes is marked in read_only_bindings (a damaged module)
    KernelStatus(STATUS_READ_ONLY_BINDING, "READ_ONLY_BINDING",
                 "the kernel refused its dispatch: a binding it writes is read-only (a constant of the module or "
                 "a caller's input)"),
)


def kernel_status(code: int) -> KernelStatus | None:
    """The table's entry for `code`; None for a code that is not in it."""
    return next((s for s in KERNEL_STATUSES if s.code == code), None)


@dataclass(frozen=True)
class StructLayout:
    """Byte offsets of a struct's fields and its total size, for one pointer width."""

    name: str
    size: int
    offsets: dict[str, int]


def dispatch_state_layout(pointer_bits: int) -> StructLayout:
    """irp_dispatch_state_t: u32 workgroup_count[3], u32 push_constant_count, three pointers, u32
    binding_count, u32 reserved, then the read_only_bindings pointer (a bitmap: bit i % 32 of u32
    word i / 32 set when binding i is read-only)."""
    p = _pointer_bytes(pointer_bits)
    return StructLayout("irp_dispatch_state_t", 24 + 4 * p, {
        "workgroup_count": 0,
        "push_constant_count": 12,
        "push_constants": 16,
        "bindings": 16 + p,
        "binding_lengths": 16 + 2 * p,
        "binding_count": 16 + 3 * p,
        "reserved": 20 + 3 * p,
        "read_only_bindings": 24 + 3 * p,
    })


def workgroup_state_layout(pointer_bits: int) -> StructLayout:
    """irp_workgroup_state_t: u32 workgroup_id[3], u32 reserved."""
    _pointer_bytes(pointer_bits)
    return StructLayout("irp_workgroup_state_t", 16, {"workgroup_id": 0, "reserved": 12})


def kernel_library_layout(pointer_bits: int) -> StructLayout:
    """irp_kernel_library_t: u32 abi_version, u32 entry_count, names, entries."""
    p = _pointer_bytes(pointer_bits)
    return StructLayout("irp_kernel_library_t", 8 + 2 * p, {
        "abi_version": 0, "entry_count": 4, "entry_names": 8, "entries": 8 + p,
    })


def _pointer_bytes(pointer_bits: int) -> int:
    if pointer_bits not in (32, 64):
        raise ValueError(f"kernel ABI: pointer_bits must be 32 or 64, got {pointer_bits}")
    return pointer_bits // 8


# ctypes mirrors for this host (used by the test harness only).

class DispatchState(ctypes.Structure):
    _fields_ = [
        ("workgroup_count", ctypes.c_uint32 * 3),
        ("push_constant_count", ctypes.c_uint32),
        ("push_constants", ctypes.POINTER(ctypes.c_uint32)),
        ("bindings", ctypes.POINTER(ctypes.c_void_p)),
        ("binding_lengths", ctypes.POINTER(ctypes.c_size_t)),
        ("binding_count", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
        ("read_only_bindings", ctypes.POINTER(ctypes.c_uint32)),
    ]


class WorkgroupState(ctypes.Structure):
    _fields_ = [("workgroup_id", ctypes.c_uint32 * 3), ("reserved", ctypes.c_uint32)]


KernelFn = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(DispatchState), ctypes.POINTER(WorkgroupState))


class KernelLibrary(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("entry_count", ctypes.c_uint32),
        ("entry_names", ctypes.POINTER(ctypes.c_char_p)),
        ("entries", ctypes.POINTER(ctypes.c_void_p)),
    ]

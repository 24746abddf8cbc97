"""Test harness (host only): build kernels with build_executable for the `host` target, load the
library with ctypes, and run each kernel over its whole workgroup grid.

The product never uses this: the C runtime has its own ELF loader. Outputs start as NaN (float)
or a fill pattern, so a kernel that leaves elements unwritten fails comparisons. Inputs are marked
read-only in the dispatch state, as the runtime marks a constant or a caller's input, and a kernel
that changes an input's bytes fails the run: the guard's write set is the outputs alone
(dispatch_guard.py).
"""
from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Iterable

import numpy as np

from iree_py.codegen.kernel_abi import (KERNEL_ABI_VERSION, LIBRARY_QUERY_SYMBOL, DispatchState, KernelFn,
                                        KernelLibrary, WorkgroupState)
from iree_py.codegen.kernel_spec import ExecutableBlob, KernelInfo, KernelSpec
from iree_py.codegen.llvm import build_executable
from iree_py.targets import Target, load_target
from iree_py.ir.symbols import evaluate
from iree_py.ir.types import TensorType


def _concrete(t: TensorType, symbols: dict[str, int]) -> TensorType:
    """`t` with its symbolic dims evaluated."""
    return TensorType(t.dtype, tuple(evaluate(d, symbols) for d in t.shape)) if t.symbols else t


def _check_inputs(spec: KernelSpec, arrays: list[np.ndarray], symbols: dict[str, int]) -> list[np.ndarray]:
    if len(arrays) != len(spec.inputs):
        raise ValueError(f"kernel {spec.name}: expected {len(spec.inputs)} inputs, got {len(arrays)}")
    checked = []
    for i, (t, a) in enumerate(zip(spec.inputs, arrays)):
        a = np.asarray(a)
        t = _concrete(t, symbols)
        if tuple(a.shape) != tuple(t.shape):
            raise ValueError(f"kernel {spec.name} input {i}: expected shape {t.shape}, got {a.shape}")
        checked.append(np.ascontiguousarray(a, dtype=t.dtype.numpy))
    return checked


def _new_output(t) -> np.ndarray:
    dtype = t.dtype.numpy
    if np.issubdtype(dtype, np.floating):
        return np.full(t.shape, np.nan, dtype=dtype)
    return np.full(t.shape, 0x5A, dtype=dtype)


class LoadedLibrary:
    """A kernel library loaded from an ExecutableBlob with ctypes; entries by name."""

    def __init__(self, blob: ExecutableBlob):
        fd, path = tempfile.mkstemp(prefix="irp-kernels-", suffix=".so")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob.code)
            self._dll = ctypes.CDLL(path)
        finally:
            os.unlink(path)
        query = getattr(self._dll, LIBRARY_QUERY_SYMBOL)
        query.restype = ctypes.POINTER(KernelLibrary)
        query.argtypes = [ctypes.c_uint32]
        if query(KERNEL_ABI_VERSION + 1):
            raise RuntimeError("kernel library accepted a wrong ABI version")
        lib = query(KERNEL_ABI_VERSION)
        if not lib:
            raise RuntimeError(f"kernel library rejected ABI version {KERNEL_ABI_VERSION}")
        table = lib.contents
        if table.abi_version != KERNEL_ABI_VERSION:
            raise RuntimeError(f"kernel library reports ABI version {table.abi_version}")
        self.entries: dict[str, KernelFn] = {}
        for i in range(table.entry_count):
            name = table.entry_names[i].decode()
            self.entries[name] = KernelFn(table.entries[i])
        self.kernels = {info.name: info for info in blob.kernels}

    def run(self, spec: KernelSpec, arrays: list[np.ndarray], symbols: dict[str, int] | None = None,
            read_only: Iterable[int] | None = None) -> list[np.ndarray]:
        """Run over the whole grid; a dynamic spec needs `symbols`, the values of its symbols
        (push constants, grid, binding lengths and output shapes are evaluated from them).
        `read_only`: the bindings marked read-only (None: every input)."""
        symbols = symbols or {}
        info: KernelInfo = self.kernels[spec.name]
        inputs = _check_inputs(spec, arrays, symbols)
        outputs = [_new_output(_concrete(t, symbols)) for t in spec.outputs]
        buffers = inputs + outputs
        info = KernelInfo(info.name, tuple(evaluate(n, symbols) for n in info.workgroup_count),
                          tuple(evaluate(n, symbols) for n in info.push_constants),
                          tuple(evaluate(n, symbols) for n in info.binding_min_lengths))
        for i, (a, need) in enumerate(zip(buffers, info.binding_min_lengths)):
            if a.nbytes < need:
                raise ValueError(f"kernel {spec.name} binding {i}: {a.nbytes} bytes < declared minimum {need}")
        count = len(buffers)
        bindings = (ctypes.c_void_p * max(count, 1))(*[a.ctypes.data for a in buffers])
        lengths = (ctypes.c_size_t * max(count, 1))(*[a.nbytes for a in buffers])
        pcs = (ctypes.c_uint32 * max(len(info.push_constants), 1))(*info.push_constants)
        state = DispatchState()
        state.workgroup_count[:] = list(info.workgroup_count)
        state.push_constant_count = len(info.push_constants)
        state.push_constants = ctypes.cast(pcs, ctypes.POINTER(ctypes.c_uint32))
        state.bindings = ctypes.cast(bindings, ctypes.POINTER(ctypes.c_void_p))
        state.binding_lengths = ctypes.cast(lengths, ctypes.POINTER(ctypes.c_size_t))
        state.binding_count = count
        marked = (ctypes.c_uint32 * (count // 32 + 1))()
        for i in range(len(inputs)) if read_only is None else read_only:
            marked[i // 32] |= 1 << (i % 32)
        state.read_only_bindings = ctypes.cast(marked, ctypes.POINTER(ctypes.c_uint32))
        before = [a.tobytes() for a in inputs]
        wg = WorkgroupState()
        entry = self.entries[spec.name]
        gx, gy, gz = info.workgroup_count
        for z in range(gz):
            for y in range(gy):
                for x in range(gx):
                    wg.workgroup_id[:] = [x, y, z]
                    rc = entry(ctypes.byref(state), ctypes.byref(wg))
                    if rc != 0:
                        raise RuntimeError(f"kernel {spec.name} returned {rc} at workgroup ({x}, {y}, {z})")
        changed = [i for i, (a, b) in enumerate(zip(inputs, before)) if a.tobytes() != b]
        if changed:
            raise RuntimeError(f"kernel {spec.name} wrote into its input bindings {changed}, which it may only read")
        return outputs


def run_kernels(specs: list[KernelSpec], inputs: list[list[np.ndarray]],
                target: Target | None = None, symbols: dict[str, int] | None = None) -> list[list[np.ndarray]]:
    """Build all `specs` into one library for the host and run spec i on inputs[i] (`symbols`:
    the values of the symbolic dims of dynamic specs)."""
    if len(specs) != len(inputs):
        raise ValueError(f"run_kernels: {len(specs)} specs but {len(inputs)} input lists")
    blob = build_executable(list(specs), target or load_target("host"))
    lib = LoadedLibrary(blob)
    return [lib.run(spec, arrays, symbols) for spec, arrays in zip(specs, inputs)]


def run_kernel(spec: KernelSpec, inputs: list[np.ndarray], target: Target | None = None,
               symbols: dict[str, int] | None = None) -> list[np.ndarray]:
    """run_kernels for one spec."""
    return run_kernels([spec], [inputs], target, symbols)[0]

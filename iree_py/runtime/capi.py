"""ctypes declarations of runtime_c/api/iree_py_runtime.h (the one public C API)."""
from __future__ import annotations

import ctypes
from functools import cache

from iree_py.runtime.build import host_library

MAX_RANK = 8


class BufferView(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32), ("shape", ctypes.c_int64 * MAX_RANK),
                ("data", ctypes.c_void_p), ("length", ctypes.c_size_t)]


class TraceEvent(ctypes.Structure):
    _fields_ = [("start_ns", ctypes.c_uint64), ("end_ns", ctypes.c_uint64), ("entry_point", ctypes.c_int32),
                ("workgroup_count", ctypes.c_uint32 * 3), ("binding_bytes", ctypes.c_uint64),
                ("pool_bytes", ctypes.c_uint64), ("thread_count", ctypes.c_uint32)]


class Allocator(ctypes.Structure):
    _fields_ = [("ctx", ctypes.c_void_p), ("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p)]


_SIGNATURES = {
    "irp_allocator_system": ([], Allocator),
    "irp_runtime_create": ([ctypes.POINTER(Allocator), ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int),
    "irp_runtime_release": ([ctypes.c_void_p], None),
    "irp_runtime_set_device": ([ctypes.c_void_p, ctypes.c_char_p], ctypes.c_int),
    "irp_runtime_set_thread_count": ([ctypes.c_void_p, ctypes.c_int32], ctypes.c_int),
    "irp_runtime_thread_count": ([ctypes.c_void_p], ctypes.c_int32),
    "irp_runtime_error_message": ([ctypes.c_void_p], ctypes.c_char_p),
    "irp_module_load": ([ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)], ctypes.c_int),
    "irp_module_release": ([ctypes.c_void_p], None),
    "irp_module_find_function": ([ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32)], ctypes.c_int),
    "irp_module_arena_size": ([ctypes.c_void_p], ctypes.c_size_t),
    "irp_module_peak_bytes": ([ctypes.c_void_p], ctypes.c_size_t),
    "irp_function_input_dim_name": ([ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32], ctypes.c_char_p),
    "irp_function_output_dim_name": ([ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32], ctypes.c_char_p),
    "irp_module_reset_state": ([ctypes.c_void_p], ctypes.c_int),
    "irp_module_set_profiling": ([ctypes.c_void_p, ctypes.c_int32], None),
    "irp_module_entry_point_count": ([ctypes.c_void_p], ctypes.c_int32),
    "irp_module_entry_point_profile": ([ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)], ctypes.c_int),
    "irp_module_entry_point_device_time": ([ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint64)],
                                           ctypes.c_int),
    "irp_module_set_trace": ([ctypes.c_void_p, ctypes.c_uint32], ctypes.c_int),
    "irp_module_trace_call": ([ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                               ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)], ctypes.c_int),
    "irp_module_trace_event": ([ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(TraceEvent)], ctypes.c_int),
    "irp_module_trace_thread_span": ([ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)], ctypes.c_int),
    "irp_call": ([ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(BufferView), ctypes.c_int32,
                  ctypes.POINTER(BufferView), ctypes.c_int32], ctypes.c_int),
}


@cache
def library() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(host_library()))
    for name, (argtypes, restype) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes = argtypes
        fn.restype = restype
    return lib

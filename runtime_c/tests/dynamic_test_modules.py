"""The dynamic-shape test module (dynamic.vmfb): exported functions whose signatures have -1 dims,
written with the bytecode encoder and run by runtime_tests.c, runner_tests.sh and
tests/vm/test_dyn_runtime.py. Every function only moves bytes (buffer_alloc, buffer_copy,
buffer_subview), so the module has no kernels and runs on any architecture.

Functions (n, m: dynamic dims, each passed as an i64 input; outputs' dims come back by ret_i64):
  copy_rows(x f32[n, 3]) -> y f32[n, 3]           y = a pool copy of x
  concat(a f32[n], b f32[m]) -> c f32[n + m]       c = a then b, written through two subviews
  same_n(a f32[n], b f32[n]) -> s f32[n]           allocs, frees and reallocs; s = a copy of a
  checked(x f32[n]) -> y f32[n]                    check n <= 8 with message 0 (MESSAGES[0])
  double_free(x f32[n]) -> ()                      frees one block twice
  free_input(x f32[n]) -> ()                       frees the caller's input (not a pool block)
  fail_message() -> ()                             fail with message 1
  negative_dim(x f32[n]) -> y f32[n]               returns dim -1
  wrong_dim(x f32[n]) -> y f32[n]                  returns dim n + 1 with n elements
"""
from __future__ import annotations

from iree_py.ir.types import DType
from iree_py.module.model import MESSAGE_CODE_BASE, Function, MemoryPlan, Module, TensorSig
from iree_py.vm.encoder import BytecodeBuilder

F32 = DType.f32
POOL_SIZE = 1024
ARENA_SIZE = 64
MESSAGES = ["input 'x' dim 0 (n) must be at most 8", "the model refused: a fail with a message"]


def dyn(name: str, *dims: int | str) -> TensorSig:
    """A f32 signature; a str dim is dynamic with that name."""
    shape = tuple(-1 if isinstance(d, str) else d for d in dims)
    return TensorSig(name, F32, shape, dim_names=tuple(d if isinstance(d, str) else "" for d in dims))


def _function(name: str, inputs: list[TensorSig], outputs: list[TensorSig], body, i64: int = 8,
              refs: int = 6) -> Function:
    code = BytecodeBuilder()
    body(code)
    return Function(name, inputs, outputs, i64, refs, code.finish(),
                    i64_input_count=sum(len(s.dynamic_axes) for s in inputs),
                    i64_output_count=sum(len(s.dynamic_axes) for s in outputs))


def _alloc_copy(c: BytecodeBuilder, dst: int, src: int, bytes_reg: int) -> None:
    c.emit("buffer_alloc", dst, bytes_reg)
    c.emit("buffer_copy", dst, src)


def _copy_rows(c: BytecodeBuilder) -> None:
    c.emit("const_i64", 1, 12)
    c.emit("mul_i64", 2, 0, 1)          # i2 = n * 3 * 4 bytes
    _alloc_copy(c, 1, 0, 2)
    c.emit("ret_i64", [0], [1])


def _concat(c: BytecodeBuilder) -> None:
    c.emit("add_i64", 2, 0, 1)          # i2 = n + m
    c.emit("const_i64", 3, 4)
    c.emit("mul_i64", 4, 2, 3)
    c.emit("buffer_alloc", 2, 4)        # r2: (n + m) floats
    c.emit("mul_i64", 5, 0, 3)          # i5 = bytes of a
    c.emit("const_i64", 6, 0)
    c.emit("buffer_subview", 3, 2, 6, 5)
    c.emit("buffer_copy", 3, 0)
    c.emit("mul_i64", 7, 1, 3)          # i7 = bytes of b
    c.emit("buffer_subview", 4, 2, 5, 7)
    c.emit("buffer_copy", 4, 1)
    c.emit("ret_i64", [2], [2])


def _same_n(c: BytecodeBuilder) -> None:
    c.emit("const_i64", 2, 4)
    c.emit("mul_i64", 3, 0, 2)
    _alloc_copy(c, 2, 1, 3)             # a scratch copy of b, freed again
    c.emit("buffer_free", 2)
    _alloc_copy(c, 3, 0, 3)             # first fit: the freed block again
    c.emit("ret_i64", [0], [3])


def _checked(c: BytecodeBuilder) -> None:
    c.emit("const_i64", 1, 8)
    c.emit("cmp_le_i64", 2, 0, 1)
    c.emit("check", 2, MESSAGE_CODE_BASE + 0)
    c.emit("const_i64", 1, 4)
    c.emit("mul_i64", 3, 0, 1)
    _alloc_copy(c, 1, 0, 3)
    c.emit("ret_i64", [0], [1])


def _double_free(c: BytecodeBuilder) -> None:
    c.emit("const_i64", 1, 4)
    c.emit("mul_i64", 2, 0, 1)
    c.emit("buffer_alloc", 1, 2)
    c.emit("buffer_free", 1)
    c.emit("buffer_free", 1)
    c.emit("ret", [])


def _returns_dim(value: int | None):
    def body(c: BytecodeBuilder) -> None:
        if value is None:
            c.emit("const_i64", 2, 1)
            c.emit("add_i64", 1, 0, 2)  # n + 1
        else:
            c.emit("const_i64", 1, value)
        c.emit("ret_i64", [1], [0])
    return body


def dynamic_functions() -> list[Function]:
    x = dyn("x", "n")
    return [
        _function("copy_rows", [dyn("x", "n", 3)], [dyn("y", "n", 3)], _copy_rows),
        _function("concat", [dyn("a", "n"), dyn("b", "m")], [dyn("c", "n + m")], _concat),
        _function("same_n", [dyn("a", "n"), dyn("b", "n")], [dyn("s", "n")], _same_n),
        _function("checked", [x], [dyn("y", "n")], _checked),
        _function("double_free", [x], [], _double_free),
        _function("free_input", [x], [], lambda c: (c.emit("buffer_free", 0), c.emit("ret", []))),
        _function("fail_message", [], [], lambda c: c.emit("fail", MESSAGE_CODE_BASE + 1)),
        _function("negative_dim", [x], [dyn("y", "n")], _returns_dim(-1)),
        _function("wrong_dim", [x], [dyn("y", "n")], _returns_dim(None)),
    ]


def dynamic_module(pool_size: int = POOL_SIZE) -> Module:
    return Module("dynamic", dynamic_functions(), memory_plan=MemoryPlan(ARENA_SIZE, pool_size=pool_size),
                  messages=list(MESSAGES))

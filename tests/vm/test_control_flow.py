"""Self-checking VM programs: loops, branches, calls (nested and recursive) and the scalar i64 ops,
hand-built with the bytecode encoder and run by the host C runtime. Each program writes its results
into an i64 output buffer (buffer_store_i64) that the test compares with Python's answer."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import iree_py
from iree_py.errors import IreePyError
from iree_py.ir.types import DType
from iree_py.module.model import Function, MemoryPlan, Module, TensorSig
from iree_py.module.writer import write_module
from iree_py.vm.encoder import BytecodeBuilder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime_c" / "tests"))
import make_test_modules  # noqa: E402  (the C tests' module builders)

I64 = DType.i64
INT64_MIN = -(1 << 63)


def sig(name: str, n: int) -> TensorSig:
    return TensorSig(name, I64, (n,))


def run(functions: list[Function], *args: np.ndarray, arena: int = 64) -> np.ndarray:
    module = iree_py.load(write_module(Module("cf", functions, memory_plan=MemoryPlan(arena))))
    return getattr(module, functions[0].name)(*args)


def main_with(n_in: int, n_out: int, body, i64: int = 16, refs: int = 4) -> Function:
    """main(x: i64[n_in]) -> y: i64[n_out] with y in arena bytes [0, 8 n_out) as ref 1; `body`
    emits the code between loading nothing and `ret [1]`."""
    code = BytecodeBuilder()
    code.emit("buffer_arena", 1, 0, 8 * n_out)
    body(code)
    code.emit("ret", [1])
    return Function("main", [sig("x", n_in)], [sig("y", n_out)], i64, refs, code.finish())


def load_input(code: BytecodeBuilder, dst: int, index: int, scratch: int = 15) -> None:
    code.emit("const_i64", scratch, 8 * index)
    code.emit("buffer_load_i64", dst, 0, scratch)


def store_output(code: BytecodeBuilder, index: int, value: int, scratch: int = 15) -> None:
    code.emit("const_i64", scratch, 8 * index)
    code.emit("buffer_store_i64", 1, scratch, value)


def x(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


# --- loops and branches --------------------------------------------------------------------------

def sum_program() -> Function:
    code = BytecodeBuilder()
    loop, body, done = code.label("loop"), code.label("body"), code.label("done")
    code.emit("buffer_arena", 1, 0, 8)
    load_input(code, 0, 0)
    code.emit("const_i64", 1, 0)           # acc = 0
    code.emit("const_i64", 2, 0)           # zero
    code.emit("const_i64", 4, 1)           # one
    code.bind(loop)
    code.emit("cmp_le_i64", 3, 0, 2)       # n <= 0 ?
    code.emit("cond_br", 3, done, body)
    code.bind(body)
    code.emit("add_i64", 1, 1, 0)          # acc += n
    code.emit("sub_i64", 0, 0, 4)          # n -= 1
    code.emit("br", loop)
    code.bind(done)
    store_output(code, 0, 1)
    code.emit("ret", [1])
    return Function("main", [sig("x", 1)], [sig("y", 1)], 16, 4, code.finish())


@pytest.mark.parametrize("n", [0, 1, 10, 1000])
def test_loop_sums_one_to_n(n):
    assert run([sum_program()], x(n)).tolist() == [n * (n + 1) // 2]


def factorial_program() -> Function:
    def body(code: BytecodeBuilder) -> None:
        loop, body_, done = code.label("loop"), code.label("body"), code.label("done")
        load_input(code, 0, 0)             # n
        code.emit("const_i64", 1, 1)       # acc
        code.emit("const_i64", 2, 1)       # i
        code.emit("const_i64", 4, 1)
        code.bind(loop)
        code.emit("cmp_lt_i64", 3, 0, 2)   # n < i ?
        code.emit("cond_br", 3, done, body_)
        code.bind(body_)
        code.emit("mul_i64", 1, 1, 2)
        code.emit("add_i64", 2, 2, 4)
        code.emit("br", loop)
        code.bind(done)
        store_output(code, 0, 1)
    return main_with(1, 1, body)


@pytest.mark.parametrize("n, expected", [(0, 1), (1, 1), (5, 120), (20, 2432902008176640000)])
def test_loop_factorial(n, expected):
    assert run([factorial_program()], x(n)).tolist() == [expected]


def gcd_program() -> Function:
    """y[0] = gcd(x[0], x[1]) by Euclid with rem_i64."""
    def body(code: BytecodeBuilder) -> None:
        loop, body_, done = code.label("loop"), code.label("body"), code.label("done")
        load_input(code, 0, 0)
        load_input(code, 1, 1)
        code.emit("const_i64", 2, 0)
        code.bind(loop)
        code.emit("cmp_ne_i64", 3, 1, 2)
        code.emit("cond_br", 3, body_, done)
        code.bind(body_)
        code.emit("rem_i64", 4, 0, 1)
        code.emit("add_i64", 0, 1, 2)      # a = b
        code.emit("add_i64", 1, 4, 2)      # b = a % b
        code.emit("br", loop)
        code.bind(done)
        store_output(code, 0, 0)
    return main_with(2, 1, body)


@pytest.mark.parametrize("a, b", [(48, 18), (17, 5), (0, 9), (1071, 462), (2**40 * 3, 2**35 * 9)])
def test_loop_gcd(a, b):
    assert run([gcd_program()], x(a, b)).tolist() == [np.gcd(a, b)]


# --- scalar ops ----------------------------------------------------------------------------------

def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def wrap(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


BINARY = {
    "div_i64": c_div, "rem_i64": lambda a, b: a - b * c_div(a, b),
    "min_i64": min, "max_i64": max, "cmp_le_i64": lambda a, b: int(a <= b), "cmp_ne_i64": lambda a, b: int(a != b),
    "and_i64": lambda a, b: a & b, "or_i64": lambda a, b: a | b, "xor_i64": lambda a, b: a ^ b,
    "shl_i64": lambda a, b: wrap(a << (b & 63)), "shr_i64": lambda a, b: a >> (b & 63),
    "shr_u_i64": lambda a, b: wrap((a & ((1 << 64) - 1)) >> (b & 63)),
}
PAIRS = [(7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5), (INT64_MIN, 3), (-1, 63), (5, 64 + 3), (123456789, -1)]


def binary_program(op: str) -> Function:
    """y[i] = op(x[2i], x[2i+1]) for every pair."""
    def body(code: BytecodeBuilder) -> None:
        for i in range(len(PAIRS)):
            load_input(code, 0, 2 * i)
            load_input(code, 1, 2 * i + 1)
            code.emit(op, 2, 0, 1)
            store_output(code, i, 2)
    return main_with(2 * len(PAIRS), len(PAIRS), body)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_matches_c_semantics(op):
    got = run([binary_program(op)], x(*[v for p in PAIRS for v in p]), arena=8 * len(PAIRS)).tolist()
    assert got == [BINARY[op](a, b) for a, b in PAIRS]


def test_rem_of_int64_min_by_minus_one_is_zero():
    got = run([binary_program("rem_i64")], x(*([INT64_MIN, -1] * len(PAIRS))), arena=8 * len(PAIRS))
    assert got.tolist() == [0] * len(PAIRS)


def test_select_picks_by_condition_and_buffer_length_reads_bytes():
    def body(code: BytecodeBuilder) -> None:
        load_input(code, 0, 0)             # cond
        code.emit("const_i64", 1, 111)
        code.emit("const_i64", 2, 222)
        code.emit("select_i64", 3, 0, 1, 2)
        store_output(code, 0, 3)
        code.emit("buffer_length", 4, 0)
        store_output(code, 1, 4)
    fn = main_with(3, 2, body)
    assert run([fn], x(5, 0, 0)).tolist() == [111, 24]
    assert run([fn], x(0, 0, 0)).tolist() == [222, 24]


# --- calls -----------------------------------------------------------------------------------------

def fib_function() -> Function:
    """fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2), recursive, not exported: function 1 here."""
    return make_test_modules.fib_function(own_index=1)


def calls_fib() -> Function:
    def body(code: BytecodeBuilder) -> None:
        load_input(code, 0, 0)
        code.emit("call", 1, [0], [], [1], [])
        store_output(code, 0, 1)
    return main_with(1, 1, body)


@pytest.mark.parametrize("n, expected", [(0, 0), (1, 1), (2, 1), (10, 55), (20, 6765)])
def test_recursive_fib(n, expected):
    assert run([calls_fib(), fib_function()], x(n)).tolist() == [expected]


def test_recursion_beyond_the_call_depth_is_a_runtime_error():
    """fib(32) from main nests 33 calls (main, then fib(32) down to fib(1)): one more than the limit."""
    with pytest.raises(IreePyError, match=r"fib: bytecode at \d+: call of 'fib' is deeper than the 32 calls"):
        run([calls_fib(), fib_function()], x(32))


def square_into() -> Function:
    """square_into(buf, i: i64, v: i64) -> (buf, v * v): stores v * v at element i, returns both."""
    code = BytecodeBuilder()
    code.emit("mul_i64", 2, 1, 1)
    code.emit("const_i64", 3, 8)
    code.emit("mul_i64", 3, 3, 0)
    code.emit("buffer_store_i64", 0, 3, 2)
    code.emit("ret_i64", [2], [0])
    return Function("square_into", [sig("buf", 4)], [sig("buf", 4)], 4, 1, code.finish(), exported=False,
                    i64_input_count=2, i64_output_count=1)


def fill_squares() -> Function:
    """fill(buf, n: i64) -> (buf, sum): buf[i] = (x[i])^2 for i < n by calling square_into; nested."""
    code = BytecodeBuilder()
    loop, body, done = code.label("loop"), code.label("body"), code.label("done")
    code.emit("const_i64", 1, 0)           # i
    code.emit("const_i64", 2, 0)           # sum
    code.emit("const_i64", 3, 1)
    code.bind(loop)
    code.emit("cmp_lt_i64", 4, 1, 0)
    code.emit("cond_br", 4, body, done)
    code.bind(body)
    code.emit("const_i64", 5, 8)
    code.emit("mul_i64", 5, 5, 1)
    code.emit("buffer_load_i64", 6, 1, 5)  # v = x[i] (ref 1 is the input)
    code.emit("call", 3, [1, 6], [0], [7], [2])
    code.emit("add_i64", 2, 2, 7)
    code.emit("add_i64", 1, 1, 3)
    code.emit("br", loop)
    code.bind(done)
    code.emit("ret_i64", [2], [2])
    return Function("fill", [sig("buf", 4), sig("x", 4)], [sig("buf", 4)], 8, 3, code.finish(), exported=False,
                    i64_input_count=1, i64_output_count=1)


def view_maker() -> Function:
    """make_view() -> arena bytes [32, 64): a buffer created by the callee, returned to the caller."""
    code = BytecodeBuilder()
    code.emit("buffer_arena", 0, 32, 32)
    code.emit("ret", [0])
    return Function("make_view", [], [sig("v", 4)], 0, 1, code.finish(), exported=False)


def test_nested_calls_pass_and_return_i64_values_and_buffers():
    code = BytecodeBuilder()
    code.emit("call", 2, [], [], [], [1])  # r1 = make_view()
    code.emit("const_i64", 0, 3)
    code.emit("call", 1, [0], [1, 0], [1], [2])  # r2, i1 = fill(r1, 3, x)
    code.emit("const_i64", 2, 24)
    code.emit("buffer_store_i64", 2, 2, 1)  # y[3] = sum
    code.emit("ret", [2])
    main = Function("main", [sig("x", 4)], [sig("y", 4)], 3, 3, code.finish())
    got = run([main, fill_squares(), view_maker(), square_into()], x(2, -3, 5, 99))
    assert got.tolist() == [4, 9, 25, 4 + 9 + 25]


def test_non_exported_functions_are_not_callable_from_python():
    module = iree_py.load(write_module(Module("cf", [calls_fib(), fib_function()], memory_plan=MemoryPlan(64))))
    assert sorted(module.functions) == ["main"]


# --- run-time errors -------------------------------------------------------------------------------

def one_op(op: str, a: int, b: int) -> Function:
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 0, a)
        code.emit("const_i64", 1, b)
        code.emit(op, 2, 0, 1)
        store_output(code, 0, 2)
    return main_with(1, 1, body)


@pytest.mark.parametrize("op, a, b, message", [
    ("div_i64", 7, 0, r"main: bytecode at 41: div_i64 of 7 by zero"),
    ("rem_i64", -7, 0, r"main: bytecode at 41: rem_i64 of -7 by zero"),
    ("div_i64", INT64_MIN, -1, r"main: bytecode at 41: div_i64 of -9223372036854775808 by -1 overflows"),
])
def test_division_errors_name_function_and_pc(op, a, b, message):
    with pytest.raises(IreePyError, match=message):
        run([one_op(op, a, b)], x(0))


def test_check_fails_with_its_code_only_when_the_condition_is_zero():
    def body(code: BytecodeBuilder) -> None:
        load_input(code, 0, 0)
        code.emit("check", 0, 77)
        store_output(code, 0, 0)
    fn = main_with(1, 1, body)
    assert run([fn], x(4)).tolist() == [4]
    with pytest.raises(IreePyError, match=r"main: check failed with code 77 at bytecode \d+"):
        run([fn], x(0))


@pytest.mark.parametrize("offset", [-8, 1, 8, 1 << 62])
def test_store_outside_the_buffer_is_refused(offset):
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 0, offset)
        code.emit("buffer_store_i64", 1, 0, 0)
    with pytest.raises(IreePyError, match=f"buffer_store_i64 at byte {offset} of a 8-byte buffer"):
        run([main_with(1, 1, body)], x(0))


def test_subview_reads_and_writes_a_window_of_its_buffer():
    """y[i] = x[n-1-i] through 8-byte subviews of the input and output at run-time offsets."""
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 5, 0)
        code.emit("const_i64", 6, 8)
        for i in range(4):
            code.emit("const_i64", 2, 8 * (3 - i))
            code.emit("buffer_subview", 2, 0, 2, 6)    # r2 = x bytes [8(3-i), +8)
            code.emit("const_i64", 3, 8 * i)
            code.emit("buffer_subview", 3, 1, 3, 6)    # r3 = y bytes [8i, +8)
            code.emit("buffer_copy", 3, 2)
    assert run([main_with(4, 4, body)], x(10, 20, 30, 40)).tolist() == [40, 30, 20, 10]


@pytest.mark.parametrize("offset,length", [(-8, 8), (9, 8), (0, 24), (16, -1), (1 << 62, 8)])
def test_subview_outside_its_buffer_is_refused(offset, length):
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 0, offset)
        code.emit("const_i64", 2, length)
        code.emit("buffer_subview", 2, 1, 0, 2)
    with pytest.raises(IreePyError, match=rf"buffer_subview of bytes \[{offset}, {offset} \+ {length}\) "
                                          r"of a 16-byte buffer"):
        run([main_with(1, 2, body)], x(0))


def test_subview_of_an_input_stays_read_only():
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 0, 0)
        code.emit("const_i64", 2, 8)
        code.emit("buffer_subview", 2, 0, 0, 2)
        code.emit("buffer_store_i64", 2, 0, 0)
    with pytest.raises(IreePyError, match="buffer_store_i64 into read-only ref register 2"):
        run([main_with(1, 1, body)], x(0))


def test_store_into_an_input_is_refused():
    def body(code: BytecodeBuilder) -> None:
        code.emit("const_i64", 0, 0)
        code.emit("buffer_store_i64", 0, 0, 0)
    with pytest.raises(IreePyError, match="buffer_store_i64 into read-only ref register 0"):
        run([main_with(1, 1, body)], x(0))


# --- the verifier ----------------------------------------------------------------------------------

def load_error(functions: list[Function]) -> str:
    with pytest.raises(IreePyError) as error:
        iree_py.load(write_module(Module("cf", functions, memory_plan=MemoryPlan(64))))
    return str(error.value)


def caller(emit, outputs: int = 1) -> Function:
    def body(code: BytecodeBuilder) -> None:
        emit(code)
    return main_with(1, outputs, body)


def test_verifier_refuses_a_bad_callee_index():
    message = load_error([caller(lambda c: c.emit("call", 5, [0], [], [1], [])), fib_function()])
    assert "main: bytecode at 19: call of function 5 but the module has 2" in message


@pytest.mark.parametrize("operands, what", [
    (([], [], [1], []), "passes 0 i64 arguments, expected 1"),
    (([0], [0], [1], []), "passes 1 buffer arguments, expected 0"),
    (([0], [], [], []), "passes 0 i64 results, expected 1"),
    (([0], [], [1], [1]), "passes 1 buffer results, expected 0"),
])
def test_verifier_checks_call_counts_against_the_callee(operands, what):
    message = load_error([caller(lambda c: c.emit("call", 1, *operands)), fib_function()])
    assert f"main: bytecode at 19: call of fib {what}" in message


def test_verifier_refuses_ret_without_the_i64_outputs():
    code = BytecodeBuilder()
    code.emit("ret", [])
    bad = Function("f", [], [], 1, 0, code.finish(), exported=False, i64_output_count=1)
    assert "f: bytecode at 0: ret in a function with 1 i64 outputs (use ret_i64)" in load_error([bad])


def test_verifier_refuses_ret_i64_with_the_wrong_count():
    code = BytecodeBuilder()
    code.emit("ret_i64", [0, 0], [])
    bad = Function("f", [], [], 1, 0, code.finish(), exported=False, i64_output_count=1)
    assert "f: bytecode at 0: ret_i64 passes 2 i64 results, expected 1" in load_error([bad])


def test_exported_functions_take_i64_values_only_for_dynamic_dims():
    code = BytecodeBuilder()
    code.emit("ret_i64", [0], [])
    bad = Function("f", [], [], 1, 0, code.finish(), i64_input_count=1, i64_output_count=1)
    assert ("f: exported with 1 i64 inputs and 1 i64 outputs but its signature has 0 dynamic input dims and 0 "
            "dynamic output dims") in load_error([bad])


def test_i64_inputs_must_fit_the_registers():
    code = BytecodeBuilder()
    code.emit("ret", [])
    bad = Function("f", [], [], 1, 0, code.finish(), exported=False, i64_input_count=2)
    assert "f: 2 i64 inputs do not fit its 1 i64 registers" in load_error([bad])

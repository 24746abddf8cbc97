"""ONNX Gemm, MatMul, Einsum and Det -> MatMul and the ops around it.

Gemm: transposes, alpha (folded into a constant B) and beta * C added after. MatMul: 1-D operands
are reshaped to matrices and back. Det (22): cofactor expansion along the first row, for matrices
up to 4x4.

Einsum: operands are contracted left to right. For a pair, every index is one of: batch (in both, still
needed), contracted (in both, not needed after), kept from one side, or summed away first (in one
side only, not needed). The pair becomes one batched MatMul:
A -> [batch, m, k], B -> [batch, k, n], then the result is reshaped to batch + kept-A + kept-B.
Ellipsis dims get letters of their own (right-aligned, as in numpy); they must match in size.
An index repeated in one operand (a diagonal) is taken first with Reshape + a strided Slice.
Not supported (CompileError naming the equation): an index whose sizes differ between operands
(size-1 broadcasting).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import (Converter, reduce_axes, require_float, reshape, shape_of, slice_axis,
                                            transpose)
from iree_py.frontends.onnx.dims import dims_of
from iree_py.frontends.onnx.layout import _reshape
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


F32 = np.float32


def gemm(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    alpha, beta = float(ctx.attr("alpha", 1.0)), float(ctx.attr("beta", 1.0))
    if a.type.rank != 2 or b.type.rank != 2:
        raise ctx.error(f"Gemm operands must be 2-D, got {a.type} and {b.type}")
    if ctx.attr("transA", 0):
        a = ctx.emit("Transpose", [a], {"perm": [1, 0]})
    if ctx.attr("transB", 0):
        b = ctx.emit("Transpose", [b], {"perm": [1, 0]})
    has_c = ctx.has_input(2) and beta != 0.0
    scale_b = alpha != 1.0 and b.is_const
    if scale_b:
        b = ctx.emit("Mul", [b, ctx.const(np.array(alpha, F32), "alpha")])
    last = not has_c and (alpha == 1.0 or scale_b)
    y = ctx.emit("MatMul", [a, b], out=0 if last else None)
    if alpha != 1.0 and not scale_b:
        y = ctx.emit("Mul", [y, ctx.const(np.array(alpha, F32), "alpha")], out=None if has_c else 0)
    if not has_c:
        return [y]
    c = ctx.input(2)
    if beta != 1.0:
        c = ctx.emit("Mul", [c, ctx.const(np.array(beta, F32), "beta")])
    return [ctx.emit("Add", [y, c], out=0)]


def matmul(ctx: "OnnxContext") -> list[Value]:
    a, b = ctx.input(0), ctx.input(1)
    a_vec, b_vec = a.type.rank == 1, b.type.rank == 1
    if a_vec:
        a = _reshape(ctx, a, (1, *dims_of(a)))
    if b_vec:
        b = _reshape(ctx, b, (*dims_of(b), 1))
    if not (a_vec or b_vec):
        return [ctx.emit("MatMul", [a, b], out=0)]
    y = ctx.emit("MatMul", [a, b])
    shape = list(dims_of(y))
    if b_vec:
        shape.pop(-1)
    if a_vec:
        shape.pop(-2 if not b_vec else -1)
    return [_reshape(ctx, y, tuple(shape), out=0)]


ELLIPSIS = "..."


ELLIPSIS_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # ONNX einsum letters are lower case; upper case is free


Term = tuple[Value, str]  # an operand and its index letters, one per axis


class EinsumError(Exception):
    pass


def _expand_ellipsis(term: str, rank: int, letters: str) -> str:
    if ELLIPSIS not in term:
        if len(term) != rank:
            raise EinsumError(f"term '{term}' has {len(term)} indices but the operand has rank {rank}")
        return term
    before, after = term.split(ELLIPSIS)
    count = rank - len(before) - len(after)
    if count < 0:
        raise EinsumError(f"term '{term}' has more indices than the operand's rank {rank}")
    return before + (letters[len(letters) - count:] if count else "") + after


def parse(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Index letters of each operand and of the output, ellipses spelled out."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise EinsumError(f"{len(terms)} terms for {len(ranks)} inputs")
    for t in terms + [rhs]:
        if t.count(ELLIPSIS) > 1:
            raise EinsumError(f"term '{t}' has more than one '...'")
        if not all(c.isalpha() for c in t.replace(ELLIPSIS, "")):
            raise EinsumError(f"term '{t}' has characters other than letters and '...'")
        if any(c in ELLIPSIS_LETTERS for c in t.replace(ELLIPSIS, "")):
            raise EinsumError(f"term '{t}': upper-case indices are not supported")
    widest = max([r - len(t.replace(ELLIPSIS, "")) for t, r in zip(terms, ranks) if ELLIPSIS in t], default=0)
    letters = ELLIPSIS_LETTERS[:widest]
    inputs = [_expand_ellipsis(t, r, letters) for t, r in zip(terms, ranks)]
    if arrow:
        output = rhs.replace(ELLIPSIS, letters)
    else:
        counts = {c: sum(t.count(c) for t in inputs) for c in set("".join(inputs))}
        output = letters + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in letters))
    if len(set(output)) != len(output) or not set(output) <= set("".join(inputs)):
        raise EinsumError(f"output '{output}' repeats an index or names one no input has")
    return inputs, output


def _take_diagonals(ctx: "OnnxContext", term: Term) -> Term:
    """An index repeated k times in one operand ('ii', a diagonal): move its k axes to the end, merge
    them into one axis of n**k elements and take every (1 + n + ... + n**(k-1))-th: the n diagonal ones."""
    value, letters = term
    for c in dict.fromkeys(letters):
        at = [i for i, x in enumerate(letters) if x == c]
        if len(at) == 1:
            continue
        shape = shape_of(value)
        if len({shape[i] for i in at}) != 1:
            raise EinsumError(f"repeated index '{c}' has different sizes {[shape[i] for i in at]}")
        n, others = shape[at[0]], [i for i in range(len(letters)) if i not in at]
        moved = reshape(ctx, transpose(ctx, value, others + at), tuple(shape[i] for i in others) + (n ** len(at),))
        rank = len(others) + 1
        step = sum(n ** i for i in range(len(at)))
        attrs = {"starts": [0] * rank, "ends": list(shape_of(moved)), "steps": [1] * (rank - 1) + [step]}
        value = ctx.emit("Slice", [moved], attrs)
        letters = "".join(letters[i] for i in others) + c
    return value, letters


def _sum_away(ctx: "OnnxContext", term: Term, keep: set[str]) -> Term:
    value, letters = term
    axes = [i for i, c in enumerate(letters) if c not in keep]
    if not axes:
        return term
    return reduce_axes(ctx, value, "sum", axes, 0), "".join(c for c in letters if c in keep)


def _arrange(ctx: "OnnxContext", term: Term, order: str) -> Value:
    value, letters = term
    return transpose(ctx, value, [letters.index(c) for c in order])


def _contract(ctx: "OnnxContext", a: Term, b: Term, needed: set[str]) -> Term:
    a = _sum_away(ctx, a, needed | set(b[1]))
    b = _sum_away(ctx, b, needed | set(a[1]))
    sizes = {c: d for c, d in zip(a[1], shape_of(a[0]))}
    for c, d in zip(b[1], shape_of(b[0])):
        if sizes.setdefault(c, d) != d:
            raise EinsumError(f"index '{c}' has size {sizes[c]} in one operand and {d} in another")
    batch = "".join(c for c in a[1] if c in b[1] and c in needed)
    contracted = "".join(c for c in a[1] if c in b[1] and c not in needed)
    left = "".join(c for c in a[1] if c not in b[1])
    right = "".join(c for c in b[1] if c not in a[1])

    def size(letters: str) -> int:
        return math.prod(sizes[c] for c in letters)

    lhs = reshape(ctx, _arrange(ctx, a, batch + left + contracted), (size(batch), size(left), size(contracted)))
    rhs = reshape(ctx, _arrange(ctx, b, batch + contracted + right), (size(batch), size(contracted), size(right)))
    product = ctx.emit("MatMul", [lhs, rhs])
    letters = batch + left + right
    return reshape(ctx, product, tuple(sizes[c] for c in letters)), letters


def einsum(ctx: "OnnxContext") -> list[Value]:
    equation = str(ctx.attr("equation", ""))
    values = ctx.inputs()
    try:
        terms, output = parse(equation, [v.type.rank for v in values])
        operands = [_take_diagonals(ctx, term) for term in zip(values, terms)]
        terms = [letters for _, letters in operands]
        acc = _sum_away(ctx, operands[0], set(output) | set("".join(terms[1:])))
        for i, operand in enumerate(operands[1:], start=1):
            needed = set(output) | set("".join(terms[i + 1:]))
            acc = _contract(ctx, acc, operand, needed)
        acc = _sum_away(ctx, acc, set(output))
    except EinsumError as e:
        raise ctx.error(f"equation '{equation}' is not supported: {e}") from None
    value, letters = acc
    perm = [letters.index(c) for c in output]
    if perm != sorted(perm):
        return [ctx.emit("Transpose", [value], {"perm": perm}, out=0)]
    return [value]


DET_MAX_SIZE = 4


def det(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    require_float(ctx, x, "input")
    shape = shape_of(x)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ctx.error(f"input {x.type} must be [..., n, n]")
    n = shape[-1]
    if not 1 <= n <= DET_MAX_SIZE:
        raise ctx.error(f"{n}x{n} matrices are not supported (cofactor expansion up to {DET_MAX_SIZE}x{DET_MAX_SIZE})")
    batch = shape[:-2]
    rank = len(shape)
    rows = [slice_axis(ctx, x, rank - 2, i, i + 1) for i in range(n)]
    element = {(i, j): slice_axis(ctx, rows[i], rank - 1, j, j + 1) for i in range(n) for j in range(n)}
    minors: dict[tuple[int, tuple[int, ...]], Value] = {}

    def minor(row: int, cols: tuple[int, ...]) -> Value:
        """Determinant of rows row.. and columns `cols`, as [..., 1, 1]."""
        if len(cols) == 1:
            return element[(row, cols[0])]
        key = (row, cols)
        if key not in minors:
            total = None
            for k, col in enumerate(cols):
                term = ctx.emit("Mul", [element[(row, col)], minor(row + 1, cols[:k] + cols[k + 1:])])
                total = term if total is None else ctx.emit("Sub" if k % 2 else "Add", [total, term])
            minors[key] = total
        return minors[key]

    return [reshape(ctx, minor(0, tuple(range(n))), batch, out=0)]


CONVERTERS: dict[str, Converter] = {
    "Gemm": gemm,
    "MatMul": matmul,
    "Einsum": einsum,
    "Det": det,
}

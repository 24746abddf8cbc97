"""ONNX Einsum as Reduce / Transpose / Reshape / MatMul.

Operands are contracted left to right. For a pair, every index is one of: batch (in both, still
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

from iree_py.frontends.onnx_compose import reduce_axes, reshape, shape_of, transpose
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx import OnnxContext

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

"""Symbolic dims (docs/dynamic_shapes.md, step 1): integer expressions over named symbols.

A dim of a TensorType is an int or a symbol name; a derived dim (a conv's output height, a
Concat's summed axis, Reshape's -1) is an expression. `Expr` keeps every expression in one
canonical form, so two computations of the same size compare equal and share one VM register:

    a sum of monomials with integer coefficients, each monomial a sorted tuple of atoms, where an
    atom is a symbol name or an opaque call (floordiv, ceildiv, min, max) of canonical arguments.

`evaluate` computes a value from symbol values, `bounds` an interval from symbol intervals, and
`emit` lowers an expression to VM i64 instructions with common subexpressions shared.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, NoReturn, Union

Atom = Union[str, "Call"]
Monomial = tuple[Atom, ...]            # sorted by `_atom_key`; () is the constant term
CALLS = ("floordiv", "ceildiv", "min", "max")


@dataclass(frozen=True)
class Call:
    fn: str
    args: tuple["Expr", "Expr"]


def _atom_key(atom: Atom) -> str:
    return atom if isinstance(atom, str) else f"{atom.fn}({_text(atom.args[0])}, {_text(atom.args[1])})"


@dataclass(frozen=True)
class Expr:
    terms: tuple[tuple[Monomial, int], ...]   # sorted, no zero coefficients

    # --- construction ----------------------------------------------------------------------------
    @staticmethod
    def of(x: "int | str | Expr") -> "Expr":
        if isinstance(x, Expr):
            return x
        if isinstance(x, float):
            raise SymbolicDimError(f"a symbolic dim is used in float arithmetic (with {x!r})")
        if isinstance(x, bool) or not isinstance(x, (int, str)):
            raise TypeError(f"a dim is an int, a symbol name or an Expr, not {x!r}")
        return _make({(): x} if isinstance(x, int) else {(x,): 1})

    @property
    def constant(self) -> int | None:
        """The value when the expression has no symbols, else None."""
        if not self.terms:
            return 0
        if len(self.terms) == 1 and self.terms[0][0] == ():
            return self.terms[0][1]
        return None

    @property
    def symbol(self) -> str | None:
        """The name when the expression is exactly one symbol (`batch`), else None."""
        if len(self.terms) == 1 and self.terms[0][1] == 1 and len(self.terms[0][0]) == 1:
            atom = self.terms[0][0][0]
            return atom if isinstance(atom, str) else None
        return None

    @property
    def symbols(self) -> set[str]:
        found: set[str] = set()
        for monomial, _ in self.terms:
            for atom in monomial:
                if isinstance(atom, str):
                    found.add(atom)
                else:
                    found |= atom.args[0].symbols | atom.args[1].symbols
        return found

    # --- arithmetic --------------------------------------------------------------------------------
    def __add__(self, other: "int | str | Expr") -> "Expr":
        result = dict(self.terms)
        for monomial, c in Expr.of(other).terms:
            result[monomial] = result.get(monomial, 0) + c
        return _make(result)

    def __neg__(self) -> "Expr":
        return _make({m: -c for m, c in self.terms})

    def __sub__(self, other: "int | str | Expr") -> "Expr":
        return self + (-Expr.of(other))

    def __mul__(self, other: "int | str | Expr") -> "Expr":
        result: dict[Monomial, int] = {}
        for ma, ca in self.terms:
            for mb, cb in Expr.of(other).terms:
                m = tuple(sorted(ma + mb, key=_atom_key))
                result[m] = result.get(m, 0) + ca * cb
        return _make(result)

    __radd__ = __add__
    __rmul__ = __mul__

    def __rsub__(self, other: "int | str | Expr") -> "Expr":
        return Expr.of(other) - self

    def __floordiv__(self, other: "int | str | Expr") -> "Expr":
        return call("floordiv", self, other)

    def __rfloordiv__(self, other: "int | str | Expr") -> "Expr":
        return call("floordiv", other, self)

    def __str__(self) -> str:
        return _text(self)

    def __repr__(self) -> str:
        return f"Expr({_text(self)})"

    # --- what a symbolic dim is not: code written for numbers gets a SymbolicDimError ------------
    def _not_a_number(self, *_: object) -> "NoReturn":
        raise SymbolicDimError(f"the symbolic dim {_text(self)} is used where a number is needed")

    __int__ = __index__ = __float__ = __mod__ = __rmod__ = __truediv__ = __rtruediv__ = _not_a_number
    __lt__ = __le__ = __gt__ = __ge__ = _not_a_number


class SymbolicDimError(TypeError):
    """A symbolic dim reached code that needs a number (a shape rule or converter written for
    static shapes): the frontends report it as what the op cannot do with symbolic dims."""


def _make(terms: dict[Monomial, int]) -> Expr:
    return Expr(tuple(sorted(((m, c) for m, c in terms.items() if c != 0),
                             key=lambda t: (len(t[0]), [_atom_key(a) for a in t[0]]))))


def call(fn: str, a: "int | str | Expr", b: "int | str | Expr") -> Expr:
    """floordiv / ceildiv (b > 0) / min / max, folded when both sides are known."""
    if fn not in CALLS:
        raise ValueError(f"unknown function {fn}; expected one of {CALLS}")
    a, b = Expr.of(a), Expr.of(b)
    ca, cb = a.constant, b.constant
    if ca is not None and cb is not None:
        return Expr.of(_apply(fn, ca, cb))
    if fn in ("floordiv", "ceildiv") and cb == 1:
        return a
    if fn in ("min", "max") and a == b:
        return a
    if fn in ("floordiv", "ceildiv") and cb is not None and cb > 0 and all(c % cb == 0 for _, c in a.terms):
        return _make({m: c // cb for m, c in a.terms})  # exact: every coefficient divides
    if fn in ("min", "max") and _atom_key(Call(fn, (b, a))) < _atom_key(Call(fn, (a, b))):
        a, b = b, a  # commutative: one canonical order
    return _make({(Call(fn, (a, b)),): 1})


def _apply(fn: str, a: int, b: int) -> int:
    if fn in ("floordiv", "ceildiv") and b <= 0:
        raise ZeroDivisionError(f"{fn}({a}, {b}): the divisor must be positive")
    if fn == "floordiv":
        return a // b
    if fn == "ceildiv":
        return -(-a // b)
    return min(a, b) if fn == "min" else max(a, b)


def _text(e: Expr) -> str:
    if not e.terms:
        return "0"
    parts = []
    for monomial, c in e.terms:
        atoms = [_atom_key(a) for a in monomial]
        if not atoms:
            parts.append(str(c))
        elif c == 1:
            parts.append("*".join(atoms))
        elif c == -1:
            parts.append("-" + "*".join(atoms))
        else:
            parts.append(f"{c}*" + "*".join(atoms))
    return " + ".join(parts).replace("+ -", "- ")


# --- evaluation and bounds -----------------------------------------------------------------------

def evaluate(e: "int | str | Expr", values: dict[str, int]) -> int:
    e = Expr.of(e)
    total = 0
    for monomial, c in e.terms:
        product = c
        for atom in monomial:
            if isinstance(atom, str):
                if atom not in values:
                    raise KeyError(f"symbol {atom} has no value")
                product *= values[atom]
            else:
                product *= _apply(atom.fn, evaluate(atom.args[0], values), evaluate(atom.args[1], values))
        total += product
    return total


Interval = tuple[int, int]


def _mul(a: Interval, b: Interval) -> Interval:
    products = [a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]]
    return min(products), max(products)


def bounds(e: "int | str | Expr", ranges: dict[str, Interval]) -> Interval:
    """An interval holding every value of `e` when each symbol lies in its range (interval
    arithmetic: exact for sums of distinct symbols, safe otherwise)."""
    e = Expr.of(e)
    lo = hi = 0
    for monomial, c in e.terms:
        term: Interval = (c, c)
        for atom in monomial:
            term = _mul(term, ranges[atom] if isinstance(atom, str) else _call_bounds(atom, ranges))
        lo, hi = lo + term[0], hi + term[1]
    return lo, hi


_UNKNOWN = (-(1 << 256), 1 << 256)  # what bounds cannot bound (a division by something not proven positive)


def known_bounds(e: "int | str | Expr", ranges: dict[str, Interval]) -> Interval:
    """`bounds`, or an interval wider than any i64 where a division inside cannot be bounded."""
    try:
        return bounds(e, ranges)
    except ValueError:
        return _UNKNOWN


def _call_bounds(atom: Call, ranges: dict[str, Interval]) -> Interval:
    (alo, ahi), (blo, bhi) = bounds(atom.args[0], ranges), bounds(atom.args[1], ranges)
    if atom.fn in ("min", "max"):
        f = min if atom.fn == "min" else max
        return f(alo, blo), f(ahi, bhi)
    if blo <= 0:
        raise ValueError(f"{_atom_key(atom)}: the divisor can be {blo}, not positive")
    values = [_apply(atom.fn, a, b) for a in (alo, ahi) for b in (blo, bhi)]
    return min(values), max(values)


# --- lowering to the VM --------------------------------------------------------------------------

_I64 = (-(1 << 63), (1 << 63) - 1)  # a symbol's range when nothing more is known


@dataclass
class Emitter:
    """Emits i64 VM code for expressions; each distinct (canonical) subexpression is computed once.
    `symbol_reg` gives the register holding a symbol, `const_reg` one holding a constant, and
    `new_reg` a fresh register; `emit(op, *operands)` appends an instruction. `nonnegative` says
    which symbols cannot be negative (input dims): a division whose operands are proven
    nonnegative or positive needs fewer instructions than the general floor."""

    emit_op: Callable[..., None]
    symbol_reg: Callable[[str], int]
    const_reg: Callable[[int], int]
    new_reg: Callable[[], int]
    nonnegative: Callable[[str], bool] = lambda _: False

    def __post_init__(self) -> None:
        self.done: dict[str, int] = {}

    def _binary(self, op: str, a: int, b: int, key: str) -> int:
        if key not in self.done:
            self.done[key] = self.new_reg()
            self.emit_op(op, self.done[key], a, b)
        return self.done[key]

    def _bounds(self, e: Expr) -> Interval:
        """An interval holding `e` for every value of its symbols ((-inf, inf) when a division
        inside is by something not proven positive)."""
        return known_bounds(e, {s: (0 if self.nonnegative(s) else _I64[0], _I64[1]) for s in e.symbols})

    def at_least(self, e: "int | str | Expr", n: int) -> bool:
        """Whether `e >= n` is proven for every value of its symbols."""
        e = Expr.of(e)
        return self._bounds(e)[0] >= n

    def _division(self, atom: Call, key: str) -> int:
        """floordiv / ceildiv of registers. The VM divides toward zero, so the general floor
        corrects the quotient when the remainder is nonzero and its sign differs from the
        divisor's; a positive divisor needs only the remainder's sign, and a nonnegative dividend
        over a positive divisor none."""
        a, b = self.emit(atom.args[0]), self.emit(atom.args[1])
        zero = self.const_reg(0)
        if not self.at_least(atom.args[1], 1):
            if atom.fn == "ceildiv":  # ceil(a / b) = -floor(-a / b)
                minus_a = self._binary("sub_i64", zero, a, f"na:{key}")
                return self._binary("sub_i64", zero, self._general_floor(minus_a, b, f"c:{key}"), key)
            return self._general_floor(a, b, key)
        if self.at_least(atom.args[0], 0):
            if atom.fn == "floordiv":
                return self._binary("div_i64", a, b, f"q:{key}")
            # ceil(a / b) = (a + b - 1) / b
            return self._binary("div_i64", self.emit(atom.args[0] + atom.args[1] - 1), b, key)
        q = self._binary("div_i64", a, b, f"q:{key}")
        r = self._binary("rem_i64", a, b, f"r:{key}")
        if atom.fn == "floordiv":  # q - (r < 0)
            return self._binary("sub_i64", q, self._binary("cmp_lt_i64", r, zero, f"rn:{key}"), key)
        return self._binary("add_i64", q, self._binary("cmp_lt_i64", zero, r, f"rp:{key}"), key)  # q + (r > 0)

    def _general_floor(self, a: int, b: int, key: str) -> int:
        zero = self.const_reg(0)
        q = self._binary("div_i64", a, b, f"q:{key}")
        r = self._binary("rem_i64", a, b, f"r:{key}")
        nonzero = self._binary("cmp_ne_i64", r, zero, f"nz:{key}")
        r_neg = self._binary("cmp_lt_i64", r, zero, f"rn:{key}")
        b_neg = self._binary("cmp_lt_i64", b, zero, f"bn:{key}")
        differ = self._binary("xor_i64", r_neg, b_neg, f"df:{key}")
        fix = self._binary("and_i64", nonzero, differ, f"fx:{key}")
        return self._binary("sub_i64", q, fix, f"fd:{key}")

    def _atom(self, atom: Atom) -> int:
        if isinstance(atom, str):
            return self.symbol_reg(atom)
        key = _atom_key(atom)
        if atom.fn in ("floordiv", "ceildiv"):
            return self._division(atom, key)
        a, b = self.emit(atom.args[0]), self.emit(atom.args[1])
        return self._binary(f"{atom.fn}_i64", a, b, key)

    def emit(self, e: "int | str | Expr") -> int:
        """The register holding `e`'s value (emitting what is not computed yet)."""
        e = Expr.of(e)
        key = _text(e)
        if key in self.done:
            return self.done[key]
        if e.constant is not None:
            return self.const_reg(e.constant)
        lo, hi = self._bounds(e)
        if lo == hi:  # max(1, min(1, n)), ceildiv(1, max(n, 1)): one value whatever the symbols
            return self.const_reg(lo)
        total: int | None = None
        for monomial, c in e.terms:
            reg = self.const_reg(c) if not monomial else None
            for atom in monomial:
                r = self._atom(atom)
                reg = r if reg is None else self._binary("mul_i64", reg, r, f"m:{reg}*{r}")
            if monomial and c != 1:
                reg = self._binary("mul_i64", reg, self.const_reg(c), f"m:{reg}*#{c}")
            total = reg if total is None else self._binary("add_i64", total, reg, f"a:{total}+{reg}")
        assert total is not None
        self.done[key] = total
        return total



# --- dims: an int, or an Expr with at least one symbol -------------------------------------------

def dim(x: "int | str | Expr") -> "int | Expr":
    """The canonical form of a dim: a plain int when it is constant, else its Expr."""
    e = Expr.of(x)
    c = e.constant
    return int(c) if c is not None else e


def dim_text(d: "int | Expr") -> str:
    """`7`, `{seq}` or `{seq + 1}`: a dim as TensorType prints it (braces keep symbol names
    apart from the `x` between dims)."""
    return str(d) if isinstance(d, int) else f"{{{_text(d)}}}"


def parse_dim(text: str) -> "int | Expr":
    """Inverse of dim_text for ints, symbol names and the forms `_text` prints."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    if text.lstrip("-").isdigit():
        return int(text)
    if text.isidentifier():
        return Expr.of(text)
    return dim(_parse_sum(text))


def _parse_sum(text: str) -> Expr:
    tokens = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+|[-+*(),]", text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def primary() -> Expr:
        t = take()
        if t == "-":
            return -primary()
        if t == "(":
            e = sum_()
            take()
            return e
        if t.isdigit():
            return Expr.of(int(t))
        if peek() == "(" and t in CALLS:
            take()
            a = sum_()
            take()
            b = sum_()
            take()
            return call(t, a, b)
        return Expr.of(t)

    def product() -> Expr:
        e = primary()
        while peek() == "*":
            take()
            e = e * primary()
        return e

    def sum_() -> Expr:
        e = product()
        while peek() in ("+", "-"):
            e = e + product() if take() == "+" else e - product()
        return e

    return sum_()

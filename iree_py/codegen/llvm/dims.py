"""Dims in kernel builders: every dim of a spec is an `int` or an `Expr` (iree_py/ir/symbols.py),
and one builder per kernel family serves both (docs/dynamic_shapes.md §3). An int folds to an LLVM
constant; an Expr is computed from the kernel's push constants, which hold the values of the
symbols its spec mentions, sorted by name (`kernel_symbols`).

    dk = begin_dynamic_kernel(module, spec, target)
    b = dk.builder
    n = dk.dim(spec.outputs[0].shape[0])          # i64: a constant, or computed from push constants
    with for_range(b, 0, n) as i:
        ...
    dk.finish()
    return dk.info(workgroup_count=(1, 1, 1))

`dim` lowers an Expr once per kernel (canonical text as the key), with floordiv/ceildiv rounding
toward minus infinity as `symbols.evaluate` does. `index` keeps an int dim a Python int, for code
that specializes on a known size (vector splits, exact tiles). `product` multiplies dims
canonically; `Agreements` checks dims that must be equal, at build time when it can;
`runtime_strides` gives a tensor's strides with a dim that is 1 at run time broadcast.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llvmlite import ir

from iree_py.codegen.kernel_abi import STATUS_DISPATCH_REFUSED, dispatch_state_layout
from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.codegen.llvm.common import I1, I8, I32, I64, PTR, KernelBuilder, begin_kernel, const_i32, const_i64
from iree_py.targets import Target
from iree_py.ir.dim_checks import product  # noqa: F401 (the one product of dims, for ir and codegen)
from iree_py.ir.symbols import Call, Expr, dim, known_bounds
from iree_py.ir.types import Dim, TensorType

DimValue = int | Expr


def _attr_symbols(value: Any) -> set[str]:
    if isinstance(value, Expr):
        return value.symbols
    if isinstance(value, (list, tuple)):
        return set().union(*(_attr_symbols(v) for v in value)) if value else set()
    return set()


def kernel_symbols(spec: KernelSpec) -> tuple[str, ...]:
    """The symbols a spec's shapes and attributes mention, sorted: push constant i is the value
    of symbol i."""
    found: set[str] = set()
    for t in (*spec.inputs, *spec.outputs):
        found |= t.symbols
    for value in spec.attrs.values():
        found |= _attr_symbols(value)
    return tuple(sorted(found))


def is_dynamic(spec: KernelSpec) -> bool:
    return bool(kernel_symbols(spec))


def load_symbols(b: ir.IRBuilder, state: ir.Value, names: tuple[str, ...], target: Target) -> dict[str, ir.Value]:
    """Push constant i (u32) zero-extended to i64, named after symbol names[i]."""
    if not names:
        return {}
    layout = dispatch_state_layout(target.pointer_bits)
    field_ptr = b.gep(state, [const_i64(layout.offsets["push_constants"])], source_etype=I8)
    table = b.load(field_ptr, typ=PTR, align=target.pointer_bits // 8)
    values = {}
    for i, name in enumerate(names):
        raw = b.load(b.gep(table, [const_i64(i)], source_etype=I32), typ=I32, align=4)
        values[name] = b.zext(raw, I64, name=f"sym.{name}")
    return values


@dataclass
class DimEmitter:
    """Lowers dims to i64 values with shared subexpressions (one per distinct canonical text)."""

    builder: ir.IRBuilder
    symbols: dict[str, ir.Value]
    done: dict[str, ir.Value] = field(default_factory=dict)

    def __call__(self, d: DimValue) -> ir.Value:
        if isinstance(d, int):
            return const_i64(d)
        e = Expr.of(d)
        if e.constant is not None:
            return const_i64(e.constant)
        key = str(e)
        if key not in self.done:
            self.done[key] = self._sum(e)
        return self.done[key]

    def _sum(self, e: Expr) -> ir.Value:
        b = self.builder
        total: ir.Value | None = None
        for monomial, c in e.terms:
            term: ir.Value = const_i64(c)
            for k, atom in enumerate(monomial):
                v = self._atom(atom)
                term = v if (k == 0 and c == 1) else b.mul(term, v)
            total = term if total is None else b.add(total, term)
        assert total is not None
        return total

    def _atom(self, atom: str | Call) -> ir.Value:
        b = self.builder
        if isinstance(atom, str):
            if atom not in self.symbols:
                raise ValueError(f"symbol {atom!r} is not among the kernel's push constants {sorted(self.symbols)}")
            return self.symbols[atom]
        x, y = self(atom.args[0]), self(atom.args[1])
        if atom.fn == "min":
            return b.select(b.icmp_signed("<", x, y), x, y)
        if atom.fn == "max":
            return b.select(b.icmp_signed(">", x, y), x, y)
        if self._at_least(atom.args[0], 0) and self._at_least(atom.args[1], 1):
            if atom.fn == "ceildiv":  # (x + y - 1) / y
                return b.udiv(self(atom.args[0] + atom.args[1] - 1), y)
            return b.udiv(x, y)
        if atom.fn == "ceildiv":  # ceil(x / y) = -floor(-x / y)
            return b.neg(floordiv(b, b.neg(x), y))
        return floordiv(b, x, y)

    def _at_least(self, e: Expr, n: int) -> bool:
        """Whether `e >= n` whatever the push constants (u32 words) hold."""
        return known_bounds(e, {s: (0, (1 << 32) - 1) for s in e.symbols})[0] >= n


def floordiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """floor(x / y) for i64 values (y != 0)."""
    zero = const_i64(0)
    q, r = b.sdiv(x, y), b.srem(x, y)
    differ = b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero))
    fix = b.and_(b.icmp_signed("!=", r, zero), differ)
    return b.sub(q, b.zext(fix, I64))


@dataclass
class DynamicKernel:
    """A kernel under construction: the builder, the symbols its spec mentions and `dim`."""

    kb: KernelBuilder
    spec: KernelSpec
    symbols: tuple[str, ...]
    dim: DimEmitter

    @property
    def builder(self) -> ir.IRBuilder:
        return self.kb.builder

    def binding(self, index: int) -> ir.Value:
        return self.kb.binding(index)

    def workgroup_id_index(self, axis: int) -> ir.Value:
        return self.kb.workgroup_id_index(axis)

    def dims(self, t: TensorType) -> list[ir.Value]:
        return [self.dim(d) for d in t.shape]

    def index(self, d: DimValue) -> int | ir.Value:
        """A known dim as a Python int (for code that specializes on it), an Expr as its i64 value."""
        d = dim(d)
        return d if isinstance(d, int) else self.dim(d)

    def finish(self) -> None:
        self.kb.finish()

    def info(self, workgroup_count: tuple[Dim, Dim, Dim] = (1, 1, 1),
             binding_min_lengths: tuple[Dim, ...] | None = None) -> KernelInfo:
        """The KernelInfo: push constants are the symbols; the workgroup counts and binding
        lengths may be Exprs over them (default lengths: each tensor's byte count)."""
        lengths = binding_min_lengths if binding_min_lengths is not None else tuple(
            t.byte_count for t in (*self.spec.inputs, *self.spec.outputs))
        for d in (*workgroup_count, *lengths):
            extra = (Expr.of(d).symbols if not isinstance(d, int) else set()) - set(self.symbols)
            if extra:
                raise ValueError(f"kernel {self.spec.name}: sizes mention {sorted(extra)}, not kernel symbols")
        return KernelInfo(self.spec.name, tuple(workgroup_count), tuple(Expr.of(s) for s in self.symbols),
                          tuple(lengths))


def begin_dynamic_kernel(module: ir.Module, spec: KernelSpec, target: Target) -> DynamicKernel:
    kb = begin_kernel(module, spec.name, target)
    names = kernel_symbols(spec)
    values = load_symbols(kb.builder, kb.dispatch_state, names, target)
    return DynamicKernel(kb, spec, names, DimEmitter(kb.builder, values))


@dataclass
class Agreements:
    """Dims that must agree, for one kernel. `equal(x, y)` / `one_or_equal(x, y)` raise at build
    time when both sides are known and disagree, drop the check when they are known to agree, and
    otherwise keep it for `emit`, which makes the kernel return STATUS_DISPATCH_REFUSED before it reads or
    writes anything when a check fails at run time (the VM's dim checks normally catch that first)."""

    what: str
    pending: list[tuple[Dim, Dim, bool, str]] = field(default_factory=list)

    def equal(self, x: Dim, y: Dim, which: str) -> None:
        self._add(x, y, False, which)

    def one_or_equal(self, x: Dim, y: Dim, which: str) -> None:
        """x == y, or x == 1 (x broadcasts to y)."""
        self._add(x, y, True, which)

    def _add(self, x: Dim, y: Dim, allow_one: bool, which: str) -> None:
        x, y = dim(x), dim(y)
        if x == y or (allow_one and x == 1):
            return
        if isinstance(x, int) and isinstance(y, int):
            wanted = f"{y} (or 1)" if allow_one else f"{y}"
            raise ValueError(f"{self.what}: {which} is {x}, expected {wanted}")
        self.pending.append((x, y, allow_one, which))

    def emit(self, dk: DynamicKernel) -> None:
        if not self.pending:
            return
        b = dk.builder
        ok: ir.Value = ir.Constant(I1, 1)
        for x, y, allow_one, _ in self.pending:
            xv, yv = dk.dim(x), dk.dim(y)
            holds = b.icmp_signed("==", xv, yv)
            if allow_one:
                holds = b.or_(holds, b.icmp_signed("==", xv, const_i64(1)))
            ok = b.and_(ok, holds)
        fn = b.function
        bad = fn.append_basic_block("dims_disagree")
        good = fn.append_basic_block("dims_agree")
        b.cbranch(ok, good, bad)
        b.position_at_end(bad)
        b.ret(const_i32(STATUS_DISPATCH_REFUSED))
        b.position_at_end(good)


def runtime_strides(b: ir.IRBuilder, dims: list[ir.Value], rank: int, static_dims: tuple) -> list[ir.Value]:
    """Element strides of a tensor with `dims`, right-aligned to an output of `rank` axes: 0 on
    the axes it lacks and where its dim is 1 (broadcast)."""
    strides = [const_i64(0)] * rank
    running: ir.Value = const_i64(1)
    for k in range(len(dims) - 1, -1, -1):
        axis = rank - len(dims) + k
        if static_dims[k] == 1:
            strides[axis] = const_i64(0)
            continue
        is_one = b.icmp_signed("==", dims[k], const_i64(1))
        strides[axis] = b.select(is_one, const_i64(0), running)
        running = b.mul(running, dims[k])
    return strides

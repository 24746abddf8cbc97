"""Sequence and optional ops as VM code on packed buffers (docs/sequences.md; the layout is in
iree_py/ir/types.py). No kernel runs: every op allocates its result from the pool, writes the
header with buffer_store_i64 and moves element data with buffer_subview + buffer_copy, so every
access is bounds-checked by the VM. Each sequence value owns its block: the graph that computes it
frees it after its last reader (`SequenceLiveness`); control flow moves blocks into its results.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from iree_py.errors import CompileError
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.types import SEQ_HEADER_BYTES, SEQ_MAX_RANK, SEQ_NONE, SEQ_RECORD_BYTES, TensorType, is_sequence
from iree_py.vm.memory_plan import MemoryPlanResult

if TYPE_CHECKING:
    from iree_py.vm.lowering import Lowerer

RECORD_OFFSET, RECORD_BYTES, RECORD_RANK, RECORD_DIMS = 0, 8, 16, 24  # byte offsets inside a record


def uses_sequences(graph: Graph) -> bool:
    """Whether any value of `graph` or of a body nested in it is a sequence (they live in the pool)."""
    from iree_py.ir.ops.control_flow import bodies
    return any(is_sequence(v.type) for v in graph.values()) or any(
        uses_sequences(b) for n in graph.nodes for b in bodies(n))


@dataclass
class SequenceLiveness:
    """The sequence values a graph computes and the node index after which each is freed (graph
    outputs are never freed here: their owner is the caller, or the enclosing control flow)."""

    free_after: dict[int, list[Value]] = field(default_factory=dict)

    @staticmethod
    def of(graph: Graph) -> "SequenceLiveness":
        last: dict[int, tuple[int, Value]] = {}
        for index, node in enumerate(graph.nodes):
            for v in node.outputs:
                if is_sequence(v.type):
                    last[id(v)] = (index, v)
            for v in node.inputs:
                if v is not None and id(v) in last:
                    last[id(v)] = (index, last[id(v)][1])
        outputs = {id(v) for v in graph.outputs}
        result = SequenceLiveness()
        for key, (index, v) in last.items():
            if key not in outputs:
                result.free_after.setdefault(index, []).append(v)
        return result


class SeqCode:
    """Small emitters over the lowerer: constants, i64 arithmetic, loads/stores, checks, loops."""

    def __init__(self, lowerer: "Lowerer", node: Node | None = None, plan: MemoryPlanResult | None = None) -> None:
        self.lw = lowerer
        self.code = lowerer.code
        self.node = node
        self.plan = plan

    def const(self, value: int) -> int:
        return self.lw.int_reg(value)

    def tmp(self) -> int:
        return self.lw.new_int()

    def binary(self, op: str, a: int, b: int) -> int:
        r = self.tmp()
        self.code.emit(op, r, a, b)
        return r

    def add(self, a: int, b: int) -> int:
        return self.binary("add_i64", a, b)

    def sub(self, a: int, b: int) -> int:
        return self.binary("sub_i64", a, b)

    def mul(self, a: int, b: int) -> int:
        return self.binary("mul_i64", a, b)

    def select(self, cond: int, a: int, b: int) -> int:
        r = self.tmp()
        self.code.emit("select_i64", r, cond, a, b)
        return r

    def load(self, buffer: int, offset: int) -> int:
        r = self.tmp()
        self.code.emit("buffer_load_i64", r, buffer, offset)
        return r

    def store(self, buffer: int, offset: int, value: int) -> None:
        self.code.emit("buffer_store_i64", buffer, offset, value)

    def length(self, buffer: int) -> int:
        r = self.tmp()
        self.code.emit("buffer_length", r, buffer)
        return r

    def alloc(self, length: int) -> int:
        r = self.lw.new_ref()
        self.code.emit("buffer_alloc", r, length)
        return r

    def view(self, buffer: int, offset: int, length: int) -> int:
        r = self.lw.new_ref()
        self.code.emit("buffer_subview", r, buffer, offset, length)
        return r

    def copy(self, dst: int, dst_offset: int, src: int, src_offset: int, length: int) -> None:
        self.code.emit("buffer_copy", self.view(dst, dst_offset, length), self.view(src, src_offset, length))

    def check(self, cond: int, text: str) -> None:
        where = f"node '{self.node.name}' (op {self.node.op}): " if self.node is not None else ""
        self.code.emit("check", cond, self.lw.message_code(where + text))

    def record(self, index: int) -> int:
        """Byte offset of record `index` (a register)."""
        return self.add(self.const(SEQ_HEADER_BYTES), self.mul(index, self.const(SEQ_RECORD_BYTES)))

    def header_end(self, count: int) -> int:
        return self.record(count)

    def loop(self, count: int, body: Callable[[int], None]) -> None:
        """for j in 0..count: body(j); the body's cached registers do not outlive it."""
        j = self.tmp()
        self.code.emit("const_i64", j, 0)
        top, inside, done = self.code.label("seq_loop"), self.code.label("seq_body"), self.code.label("seq_done")
        self.code.bind(top)
        more = self.tmp()
        self.code.emit("cmp_lt_i64", more, j, count)
        self.code.emit("cond_br", more, inside, done)
        self.code.bind(inside)
        with self.lw.scope():
            body(j)
        self.code.emit("add_i64", j, j, self.const(1))
        self.code.emit("br", top)
        self.code.bind(done)

    def position(self, node: Node, value: Value | None, count: int, default: int, upper_inclusive: bool) -> int:
        """A position input as an index: negative ones count from the end; checked in range."""
        if value is None:
            p = default
        else:
            raw = self.load(self.lw.ref_of(value, self.plan), self.const(0))
            negative = self.binary("cmp_lt_i64", raw, self.const(0))
            p = self.select(negative, self.add(raw, count), raw)
        low = self.binary("cmp_le_i64", self.const(0), p)
        high = self.binary("cmp_le_i64" if upper_inclusive else "cmp_lt_i64", p, count)
        self.check(self.binary("and_i64", low, high),
                   f"position is outside the sequence (0..{'n' if upper_inclusive else 'n-1'}, or -n.. from the end)")
        return p

    def write_record(self, dst: int, index: int, offset: int, nbytes: int, dims: list[int]) -> None:
        """Record `index` of `dst`: data offset, byte count, rank and the dims (registers), unused dims 0."""
        rec = self.record(index)
        self.store(dst, self.add(rec, self.const(RECORD_OFFSET)), offset)
        self.store(dst, self.add(rec, self.const(RECORD_BYTES)), nbytes)
        self.store(dst, self.add(rec, self.const(RECORD_RANK)), self.const(len(dims)))
        for a in range(SEQ_MAX_RANK):
            self.store(dst, self.add(rec, self.const(RECORD_DIMS + 8 * a)), dims[a] if a < len(dims) else self.const(0))

    def dims_of(self, t: TensorType) -> list[int]:
        return [self.lw.dim_reg(d) for d in t.shape]

    def renumber(self, dst: int, count: int) -> None:
        """Rewrite every record's data offset: packed in order from the end of the records."""
        cursor = self.tmp()
        self.code.emit("add_i64", cursor, self.header_end(count), self.const(0))

        def body(j: int) -> None:
            rec = self.record(j)
            self.store(dst, rec, cursor)
            self.code.emit("add_i64", cursor, cursor, self.load(dst, self.add(rec, self.const(RECORD_BYTES))))
        self.loop(count, body)


def _ref(sc: SeqCode, v: Value) -> int:
    return sc.lw.ref_of(v, sc.plan)


def _define(sc: SeqCode, v: Value, register: int) -> None:
    sc.lw.seq_refs[id(v)] = register


def copy_block(lowerer: "Lowerer", src: int) -> int:
    """A new pool block (its ref register) with the bytes of sequence buffer `src`."""
    dst = lowerer.new_ref()
    move_into(lowerer, dst, src, owned=False)
    return dst


def _construct(sc: SeqCode, tensors: list[Value], count_value: int) -> int:
    n = len(tensors)
    sizes = [sc.lw.dim_reg(t.type.byte_count) for t in tensors]
    total = sc.const(SEQ_HEADER_BYTES + n * SEQ_RECORD_BYTES)
    for s in sizes:
        total = sc.add(total, s)
    dst = sc.alloc(total)
    sc.store(dst, sc.const(0), sc.const(count_value))
    cursor = sc.const(SEQ_HEADER_BYTES + n * SEQ_RECORD_BYTES)
    for k, (t, size) in enumerate(zip(tensors, sizes)):
        sc.write_record(dst, sc.const(k), cursor, size, sc.dims_of(t.type))
        sc.code.emit("buffer_copy", sc.view(dst, cursor, size), _ref(sc, t))
        cursor = sc.add(cursor, size)
    return dst


def _empty(sc: SeqCode, count_value: int) -> int:
    dst = sc.alloc(sc.const(SEQ_HEADER_BYTES))
    sc.store(dst, sc.const(0), sc.const(count_value))
    return dst


def _insert(sc: SeqCode, node: Node) -> int:
    s = _ref(sc, node.inputs[0])
    t = node.inputs[1]
    n, total_in = sc.load(s, sc.const(0)), sc.length(s)
    p = sc.position(node, node.inputs[2] if len(node.inputs) > 2 else None, n, n, upper_inclusive=True)
    nb = sc.lw.dim_reg(t.type.byte_count)
    total = sc.add(sc.add(total_in, sc.const(SEQ_RECORD_BYTES)), nb)
    dst = sc.alloc(total)
    n1 = sc.add(n, sc.const(1))
    sc.store(dst, sc.const(0), n1)
    old_end, new_end = sc.header_end(n), sc.header_end(n1)
    before = sc.binary("cmp_lt_i64", p, n)
    rec_p = sc.record(p)
    split = sc.select(before, sc.load(s, sc.select(before, rec_p, sc.const(0))), total_in)  # where element p's data starts
    head_records = sc.sub(rec_p, sc.const(SEQ_HEADER_BYTES))
    sc.copy(dst, sc.const(SEQ_HEADER_BYTES), s, sc.const(SEQ_HEADER_BYTES), head_records)
    sc.copy(dst, sc.add(rec_p, sc.const(SEQ_RECORD_BYTES)), s, rec_p, sc.sub(old_end, rec_p))
    sc.write_record(dst, p, sc.const(0), nb, sc.dims_of(t.type))
    head_data = sc.sub(split, old_end)
    sc.copy(dst, new_end, s, old_end, head_data)
    at = sc.add(new_end, head_data)
    sc.code.emit("buffer_copy", sc.view(dst, at, nb), _ref(sc, t))
    sc.copy(dst, sc.add(at, nb), s, split, sc.sub(total_in, split))
    sc.renumber(dst, n1)
    return dst


def _erase(sc: SeqCode, node: Node) -> int:
    s = _ref(sc, node.inputs[0])
    n, total_in = sc.load(s, sc.const(0)), sc.length(s)
    sc.check(sc.binary("cmp_lt_i64", sc.const(0), n), "erase from an empty sequence")
    last = sc.sub(n, sc.const(1))
    p = sc.position(node, node.inputs[1] if len(node.inputs) > 1 else None, n, last, upper_inclusive=False)
    rec_p = sc.record(p)
    off_p = sc.load(s, sc.add(rec_p, sc.const(RECORD_OFFSET)))
    nb_p = sc.load(s, sc.add(rec_p, sc.const(RECORD_BYTES)))
    total = sc.sub(sc.sub(total_in, sc.const(SEQ_RECORD_BYTES)), nb_p)
    dst = sc.alloc(total)
    sc.store(dst, sc.const(0), last)
    old_end, new_end = sc.header_end(n), sc.header_end(last)
    sc.copy(dst, sc.const(SEQ_HEADER_BYTES), s, sc.const(SEQ_HEADER_BYTES), sc.sub(rec_p, sc.const(SEQ_HEADER_BYTES)))
    sc.copy(dst, rec_p, s, sc.add(rec_p, sc.const(SEQ_RECORD_BYTES)), sc.sub(new_end, rec_p))
    head_data = sc.sub(off_p, old_end)
    sc.copy(dst, new_end, s, old_end, head_data)
    tail = sc.add(off_p, nb_p)
    sc.copy(dst, sc.add(new_end, head_data), s, tail, sc.sub(total_in, tail))
    sc.renumber(dst, last)
    return dst


def _read_element(sc: SeqCode, node: Node, s: int, p: int, out: Value) -> None:
    """Element p of sequence buffer `s` into tensor `out`: its dims read into out's symbols."""
    rec = sc.record(p)
    rank = sc.load(s, sc.add(rec, sc.const(RECORD_RANK)))
    sc.check(sc.binary("cmp_eq_i64", rank, sc.const(out.type.rank)), f"the element is not of rank {out.type.rank}")
    for a, d in enumerate(out.type.shape):
        value = sc.load(s, sc.add(rec, sc.const(RECORD_DIMS + 8 * a)))
        name = d.symbol if not isinstance(d, int) else None
        if name is None:
            raise AssertionError(f"{node.op} result {out.name} dim {a} is {d}, not a symbol of its own")
        sc.lw.symbol_regs[name] = value
    sc.lw.allocate(node, sc.plan)
    offset = sc.load(s, sc.add(rec, sc.const(RECORD_OFFSET)))
    nbytes = sc.load(s, sc.add(rec, sc.const(RECORD_BYTES)))
    sc.code.emit("buffer_copy", _ref(sc, out), sc.view(s, offset, nbytes))


def _store_scalar(sc: SeqCode, node: Node, value: int) -> None:
    sc.lw.allocate(node, sc.plan)
    sc.store(_ref(sc, node.outputs[0]), sc.const(0), value)


def _check_present(sc: SeqCode, s: int) -> int:
    n = sc.load(s, sc.const(0))
    sc.check(sc.binary("cmp_ne_i64", n, sc.const(SEQ_NONE)), "the optional holds no value")
    return n


def _split(sc: SeqCode, node: Node) -> int:
    """SplitToSequence: chunk k of length l_k at a_k along the axis is outer rows of l_k * inner
    elements each, copied row by row."""
    x = node.inputs[0]
    shape, axis, isz = [int(d) for d in x.type.shape], node.attrs["axis"], x.type.dtype.itemsize
    outer, length, inner = int(np.prod(shape[:axis], dtype=np.int64)), shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64))
    split = node.inputs[1] if len(node.inputs) > 1 else None
    zero, one = sc.const(0), sc.const(1)
    if split is None:
        count, size = sc.const(length), one
    elif split.type.rank == 0:
        size = sc.load(_ref(sc, split), zero)
        sc.check(sc.binary("cmp_lt_i64", zero, size), "split must be positive")
        count = sc.binary("div_i64", sc.add(sc.const(length), sc.sub(size, one)), size)
    else:
        count, size = sc.const(int(split.type.shape[0])), None
        total = sc.tmp()
        sc.code.emit("const_i64", total, 0)
        for k in range(int(split.type.shape[0])):
            part = sc.load(_ref(sc, split), sc.const(8 * k))
            sc.check(sc.binary("cmp_le_i64", zero, part), "a split size is negative")
            sc.code.emit("add_i64", total, total, part)
        sc.check(sc.binary("cmp_eq_i64", total, sc.const(length)), f"split sizes do not sum to {length}")
    header = sc.header_end(count)
    dst = sc.alloc(sc.add(header, sc.const(x.type.num_bytes)))
    sc.store(dst, zero, count)
    src = _ref(sc, x)
    start, cursor = sc.tmp(), sc.tmp()
    sc.code.emit("const_i64", start, 0)
    sc.code.emit("add_i64", cursor, header, zero)
    squeeze = split is None and not node.attrs["keepdims"]
    dims = [d for a, d in enumerate(shape) if not (squeeze and a == axis)]

    def chunk(k: int) -> None:
        if size is None:
            n = sc.load(_ref(sc, split), sc.mul(k, sc.const(8)))
        else:
            n = sc.binary("min_i64", size, sc.sub(sc.const(length), start))
        row = sc.mul(n, sc.const(inner * isz))
        chunk_dims = [n if (a == axis and not squeeze) else sc.const(d) for a, d in enumerate(dims)]
        sc.write_record(dst, k, cursor, sc.mul(row, sc.const(outer)), chunk_dims)
        first = sc.mul(start, sc.const(inner * isz))

        def copy_row(r: int) -> None:
            at = sc.add(sc.mul(r, sc.const(length * inner * isz)), first)
            sc.copy(dst, cursor, src, at, row)
            sc.code.emit("add_i64", cursor, cursor, row)
        sc.loop(sc.const(outer), copy_row)
        sc.code.emit("add_i64", start, start, n)
    sc.loop(count, chunk)
    return dst


def emit_sequence_op(lowerer: "Lowerer", node: Node, plan: MemoryPlanResult) -> None:
    sc = SeqCode(lowerer, node, plan)
    out = node.outputs[0]
    op = node.op
    if op == "SequenceEmpty":
        _define(sc, out, _empty(sc, 0))
    elif op == "OptionalNone":
        _define(sc, out, _empty(sc, SEQ_NONE))
    elif op == "SequenceConstruct":
        _define(sc, out, _construct(sc, node.inputs, len(node.inputs)))
    elif op == "OptionalWrap":
        v = node.inputs[0]
        _define(sc, out, copy_block(sc.lw, _ref(sc, v)) if is_sequence(v.type) else _construct(sc, [v], 1))
    elif op == "SequenceInsert":
        _define(sc, out, _insert(sc, node))
    elif op == "SplitToSequence":
        _define(sc, out, _split(sc, node))
    elif op == "SequenceErase":
        _define(sc, out, _erase(sc, node))
    elif op == "SequenceAt":
        s = _ref(sc, node.inputs[0])
        n = sc.load(s, sc.const(0))
        p = sc.position(node, node.inputs[1], n, n, upper_inclusive=False)
        _read_element(sc, node, s, p, out)
    elif op == "SequenceLength":
        _store_scalar(sc, node, sc.load(_ref(sc, node.inputs[0]), sc.const(0)))
    elif op == "OptionalHasElement":
        n = sc.load(_ref(sc, node.inputs[0]), sc.const(0))
        _store_scalar(sc, node, sc.binary("cmp_ne_i64", n, sc.const(SEQ_NONE)))
    elif op == "OptionalGetElement":
        s = _ref(sc, node.inputs[0])
        _check_present(sc, s)
        if is_sequence(out.type):
            _define(sc, out, copy_block(sc.lw, s))
        else:
            _read_element(sc, node, s, sc.const(0), out)
    elif op == "SequenceAs":
        s = _ref(sc, node.inputs[0])
        if node.inputs[0].type.optional and not out.type.optional:
            _check_present(sc, s)
        _define(sc, out, copy_block(sc.lw, s))
    else:
        raise CompileError(f"node '{node.name}': sequence op {op} has no lowering")


def validate_input(lowerer: "Lowerer", v: Value, register: int) -> None:
    """Entry checks of a sequence input: the header fits, each record's rank and dims are sane and
    give its byte count, and the data is packed in order to the buffer's end. After them every op
    may trust the offsets (each access is still bounds-checked by the VM)."""
    sc = SeqCode(lowerer)
    t = v.type
    what = f"input '{v.name}' ({t}) is not a valid packed {t.kind.replace('_', ' ')}"
    total = sc.length(register)
    sc.check(sc.binary("cmp_le_i64", sc.const(SEQ_HEADER_BYTES), total), f"{what}: shorter than its 8-byte count")
    n = sc.load(register, sc.const(0))
    lowest = {"sequence": 0, "optional_sequence": SEQ_NONE, "optional_tensor": SEQ_NONE}[t.kind]
    sc.check(sc.binary("cmp_le_i64", sc.const(lowest), n), f"{what}: count is negative")
    if t.kind == "optional_tensor":
        sc.check(sc.binary("cmp_le_i64", n, sc.const(1)), f"{what}: an optional tensor holds at most one element")
    count = sc.binary("max_i64", n, sc.const(0))
    room = sc.binary("div_i64", sc.sub(total, sc.const(SEQ_HEADER_BYTES)), sc.const(SEQ_RECORD_BYTES))
    sc.check(sc.binary("cmp_le_i64", count, room), f"{what}: the records do not fit in the buffer")
    cursor = sc.tmp()
    sc.code.emit("add_i64", cursor, sc.header_end(count), sc.const(0))
    itemsize, limit = t.dtype.itemsize, (1 << 31) - 1
    fits = sc.add(total, sc.const(1))

    def body(j: int) -> None:
        rec = sc.record(j)
        offset = sc.load(register, sc.add(rec, sc.const(RECORD_OFFSET)))
        nbytes = sc.load(register, sc.add(rec, sc.const(RECORD_BYTES)))
        rank = sc.load(register, sc.add(rec, sc.const(RECORD_RANK)))
        sc.check(sc.binary("cmp_eq_i64", offset, cursor), f"{what}: element data not packed in order after the records")
        if t.rank is not None:
            sc.check(sc.binary("cmp_eq_i64", rank, sc.const(t.rank)), f"{what}: an element is not of rank {t.rank}")
        else:
            ok = sc.binary("and_i64", sc.binary("cmp_le_i64", sc.const(0), rank),
                           sc.binary("cmp_le_i64", rank, sc.const(SEQ_MAX_RANK)))
            sc.check(ok, f"{what}: an element's rank is outside 0..{SEQ_MAX_RANK}")
        product = sc.tmp()
        sc.code.emit("const_i64", product, itemsize)
        for a in range(SEQ_MAX_RANK):
            d = sc.load(register, sc.add(rec, sc.const(RECORD_DIMS + 8 * a)))
            used = sc.binary("cmp_lt_i64", sc.const(a), rank)
            sane = sc.binary("and_i64", sc.binary("cmp_le_i64", sc.const(0), d),
                             sc.binary("cmp_le_i64", d, sc.const(limit)))
            sc.check(sc.binary("or_i64", sc.binary("cmp_eq_i64", used, sc.const(0)), sane),
                     f"{what}: an element dim is negative or above {limit}")
            # product *= d for the dims in use, clamped first so that it cannot overflow
            factor = sc.select(used, d, sc.const(1))
            sc.code.emit("min_i64", product, product, fits)
            sc.code.emit("mul_i64", product, product, factor)
        sc.check(sc.binary("cmp_eq_i64", product, nbytes), f"{what}: an element's byte count does not match its dims")
        sc.code.emit("add_i64", cursor, cursor, nbytes)
        sc.check(sc.binary("cmp_le_i64", cursor, total), f"{what}: element data runs past the buffer")
    sc.loop(count, body)
    sc.check(sc.binary("cmp_eq_i64", cursor, total), f"{what}: bytes left after the last element")


def move_into(lowerer: "Lowerer", dst: int, src: int, owned: bool) -> None:
    """Ref register `dst` takes sequence buffer `src`: the same block when `src` is owned by code that
    will not free it (a body's result), else a copy into a new block."""
    sc = SeqCode(lowerer)
    length = sc.length(src)
    if owned:
        lowerer.code.emit("buffer_subview", dst, src, sc.const(0), length)
    else:
        lowerer.code.emit("buffer_alloc", dst, length)
        lowerer.code.emit("buffer_copy", dst, src)


def produced_in(graph: Graph, v: Value) -> bool:
    return any(o is v for n in graph.nodes for o in n.outputs)

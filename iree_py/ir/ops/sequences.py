"""Sequence and optional ops (docs/sequences.md). Their values are SequenceType; the lowering
(iree_py/vm/sequences.py) runs them as VM code on packed buffers, with no kernel.

  SequenceEmpty       -> sequence; attrs dtype, rank (-1: not known yet)
  SequenceConstruct   *tensors (one dtype) -> sequence
  SequenceInsert      seq, tensor[, position i64[]] -> sequence (no position: at the end)
  SequenceAt          seq, position i64[] -> tensor; attrs dims: the element's dims, symbols of their
                      own that the lowering reads from the element's record
  SequenceErase       seq[, position i64[]] -> sequence (no position: the last)
  SequenceLength      seq -> i64[]
  OptionalWrap        tensor or sequence -> optional_tensor / optional_sequence holding it
  OptionalNone        -> an optional with no value; attrs dtype, rank, kind
  OptionalHasElement  optional -> i64[] (1 or 0; the frontend casts it to bool)
  OptionalGetElement  optional -> its value; attrs dims (optional_tensor: as SequenceAt's; else ())
  SequenceAs          sequence or optional_sequence -> the same elements as type (kind, rank): a
                      sequence from an optional checks at run time that it holds one
  SplitToSequence     x (static shape)[, split i64 scalar or vector] -> sequence; attrs axis,
                      keepdims: chunks along axis (no split: size 1, squeezed unless keepdims;
                      a scalar: chunks of that size, the last one shorter; a vector: those sizes),
                      sizes read at run time
Positions are i64 scalars (the frontend casts and reshapes them); negative ones count from the end.
"""
from __future__ import annotations

from typing import Any

from iree_py.ir.opdef import ANY_DTYPE, Kernel, OpDef
from iree_py.ir.symbols import dim
from iree_py.ir.types import DType, SequenceType, TensorType, is_sequence

POSITION = TensorType(DType.i64, ())
INDEX = TensorType(DType.i64, ())


def join(a: SequenceType, b: SequenceType, what: str) -> SequenceType:
    """The type holding values of both: one dtype; rank None when they differ; optional when either is."""
    if a.dtype != b.dtype:
        raise ValueError(f"{what}: sequences of {a.dtype.value} and {b.dtype.value} cannot mix")
    if (a.kind == "optional_tensor") != (b.kind == "optional_tensor"):
        raise ValueError(f"{what}: {a} and {b} cannot be one value")
    kind = a.kind if a.kind == b.kind else "optional_sequence"
    return SequenceType(a.dtype, a.rank if a.rank == b.rank else None, kind)


def _seq(t: Any, what: str, kinds: tuple[str, ...] = ("sequence",)) -> SequenceType:
    if not is_sequence(t) or t.kind not in kinds:
        raise ValueError(f"{what} must be a {' or '.join(kinds)}, got {t}")
    return t


def _tensor(t: Any, what: str) -> TensorType:
    if is_sequence(t):
        raise ValueError(f"{what} must be a tensor, got {t}")
    return t


def _position(inputs: list, i: int) -> None:
    if len(inputs) > i and inputs[i] != POSITION:
        raise ValueError(f"the position must be {POSITION}, got {inputs[i]}")


def _element_dims(attrs: dict[str, Any], rank: int | None, what: str) -> tuple:
    if rank is None:
        raise ValueError(f"{what}: the sequence's elements differ in rank (or it is unknown), so an element "
                         f"cannot be read as a tensor")
    dims = tuple(dim(d) for d in attrs["dims"])
    if len(dims) != rank:
        raise ValueError(f"{what}: {len(dims)} dims for elements of rank {rank}")
    return dims


def _rank(attrs: dict[str, Any]) -> int | None:
    """A rank attribute: -1 is "not known" (None in the type)."""
    return None if attrs["rank"] < 0 else int(attrs["rank"])


def rank_attr(rank: int | None) -> int:
    return -1 if rank is None else rank


def _empty(inputs: list, attrs: dict[str, Any]) -> list:
    return [SequenceType(DType(attrs["dtype"]), _rank(attrs))]


def _construct(inputs: list, attrs: dict[str, Any]) -> list:
    ts = [_tensor(t, "SequenceConstruct input") for t in inputs]
    if len({t.dtype for t in ts}) != 1:
        raise ValueError(f"SequenceConstruct of tensors of different dtypes {[str(t) for t in ts]}")
    ranks = {t.rank for t in ts}
    return [SequenceType(ts[0].dtype, ranks.pop() if len(ranks) == 1 else None)]


def _insert(inputs: list, attrs: dict[str, Any]) -> list:
    s, t = _seq(inputs[0], "SequenceInsert input 0"), _tensor(inputs[1], "SequenceInsert input 1")
    _position(inputs, 2)
    return [join(s, SequenceType(t.dtype, t.rank), "SequenceInsert")]


def _at(inputs: list, attrs: dict[str, Any]) -> list:
    s = _seq(inputs[0], "SequenceAt input 0")
    _position(inputs, 1)
    return [TensorType(s.dtype, _element_dims(attrs, s.rank, "SequenceAt"))]


def _erase(inputs: list, attrs: dict[str, Any]) -> list:
    s = _seq(inputs[0], "SequenceErase input 0")
    _position(inputs, 1)
    return [s]


def _length(inputs: list, attrs: dict[str, Any]) -> list:
    _seq(inputs[0], "SequenceLength input")
    return [INDEX]


def _wrap(inputs: list, attrs: dict[str, Any]) -> list:
    t = inputs[0]
    if is_sequence(t):
        return [SequenceType(_seq(t, "Optional input").dtype, t.rank, "optional_sequence")]
    return [SequenceType(t.dtype, t.rank, "optional_tensor")]


def _none(inputs: list, attrs: dict[str, Any]) -> list:
    if attrs["kind"] == "sequence":
        raise ValueError("OptionalNone makes an optional, not a sequence")
    return [SequenceType(DType(attrs["dtype"]), _rank(attrs), attrs["kind"])]


def _has(inputs: list, attrs: dict[str, Any]) -> list:
    _seq(inputs[0], "OptionalHasElement input", ("optional_sequence", "optional_tensor"))
    return [INDEX]


def _get(inputs: list, attrs: dict[str, Any]) -> list:
    o = _seq(inputs[0], "OptionalGetElement input", ("optional_sequence", "optional_tensor"))
    if o.kind == "optional_sequence":
        if attrs["dims"]:
            raise ValueError("OptionalGetElement of an optional sequence takes no dims")
        return [SequenceType(o.dtype, o.rank)]
    return [TensorType(o.dtype, _element_dims(attrs, o.rank, "OptionalGetElement"))]


def _as(inputs: list, attrs: dict[str, Any]) -> list:
    s = _seq(inputs[0], "SequenceAs input", ("sequence", "optional_sequence"))
    if attrs["kind"] not in ("sequence", "optional_sequence"):
        raise ValueError(f"SequenceAs to {attrs['kind']}")
    rank = _rank(attrs)
    if s.rank is not None and rank is not None and rank != s.rank:
        raise ValueError(f"SequenceAs from {s} to rank {rank}: elements keep their rank")
    return [SequenceType(s.dtype, rank, attrs["kind"])]


def _split(inputs: list, attrs: dict[str, Any]) -> list:
    x = _tensor(inputs[0], "SplitToSequence input")
    if not x.is_static:
        raise ValueError(f"SplitToSequence of {x}: the input's shape must be static")
    if not 0 <= attrs["axis"] < x.rank:
        raise ValueError(f"SplitToSequence axis {attrs['axis']} is outside rank {x.rank}")
    if len(inputs) > 1 and (is_sequence(inputs[1]) or inputs[1].dtype != DType.i64 or inputs[1].rank > 1):
        raise ValueError(f"SplitToSequence split must be an i64 scalar or vector, got {inputs[1]}")
    squeeze = len(inputs) == 1 and not attrs["keepdims"]
    return [SequenceType(x.dtype, x.rank - 1 if squeeze else x.rank)]


OP_DEFS = [
    OpDef("SequenceEmpty", ("dtype", "rank"), 0, 0, _empty, dtypes=ANY_DTYPE),
    OpDef("SequenceConstruct", (), 1, None, _construct, dtypes=ANY_DTYPE),
    OpDef("SequenceInsert", (), 2, 3, _insert, dtypes=ANY_DTYPE),
    OpDef("SequenceAt", ("dims",), 2, 2, _at, dtypes=ANY_DTYPE),
    OpDef("SequenceErase", (), 1, 2, _erase, dtypes=ANY_DTYPE),
    OpDef("SequenceLength", (), 1, 1, _length, dtypes=ANY_DTYPE),
    OpDef("OptionalWrap", (), 1, 1, _wrap, dtypes=ANY_DTYPE),
    OpDef("OptionalNone", ("dtype", "kind", "rank"), 0, 0, _none, dtypes=ANY_DTYPE),
    OpDef("OptionalHasElement", (), 1, 1, _has, dtypes=ANY_DTYPE),
    OpDef("OptionalGetElement", ("dims",), 1, 1, _get, dtypes=ANY_DTYPE),
    OpDef("SequenceAs", ("kind", "rank"), 1, 1, _as, dtypes=ANY_DTYPE),
    OpDef("SplitToSequence", ("axis", "keepdims"), 1, 2, _split, dtypes=ANY_DTYPE),
]
SEQUENCE_OPS = frozenset(d.name for d in OP_DEFS)
KERNELS: dict[str, Kernel] = {}  # run as VM code on packed buffers (vm/sequences.py): no numpy reference

"""TFLite GATHER and GATHER_ND -> the normalized Gather and GatherND ops (docs/ir.md, "Indexing
ops"). Indices may be computed at run time; TFLite refuses out-of-range indices, iree-py reads
zeros for them. The data keeps TFLite's own layout (NHWC stays NHWC)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator as B
from iree_py.frontends.tflite.schema.GatherOptions import GatherOptionsT
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext

Converter = Callable[["TfliteContext"], list[Value]]


def _indices(ctx: "TfliteContext") -> Value:
    v = ctx.input(1)
    if v.type.dtype.value not in ("i32", "i64"):
        raise ctx.error(f"indices '{v.name}' are {v.type}; only int32 and int64 indices are supported")
    return v


def gather(ctx: "TfliteContext") -> list[Value]:
    opts = ctx.options(GatherOptionsT)
    data = ctx.input(0)
    rank = data.type.rank
    axis = int(opts.axis)
    if not -rank <= axis < rank:
        raise ctx.error(f"axis {axis} out of range for {data.type}")
    if int(opts.batchDims) != 0:
        raise ctx.error(f"batch_dims {opts.batchDims} is not supported; only 0")
    return [ctx.emit("Gather", [data, _indices(ctx)], {"axis": axis % rank}, out=0)]


def gather_nd(ctx: "TfliteContext") -> list[Value]:
    return [ctx.emit("GatherND", [ctx.input(0), _indices(ctx)], {"batch_dims": 0}, out=0)]


TFLITE_INDEXING_CONVERTERS: dict[int, Converter] = {
    B.GATHER: gather,
    B.GATHER_ND: gather_nd,
}

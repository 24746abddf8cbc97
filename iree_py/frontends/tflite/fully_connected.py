"""The operand checks and row reshape FULLY_CONNECTED shares between its float (ops.py) and int8
(quant_ops.py) converters."""
from __future__ import annotations

from typing import TYPE_CHECKING

from iree_py.frontends.tflite.schema.FullyConnectedOptions import FullyConnectedOptionsT
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.tflite.importer import TfliteContext


def fully_connected_rows(ctx: "TfliteContext") -> tuple[FullyConnectedOptionsT, Value, int]:
    """The options, the input as rows of the weights' depth ([rows, depth]) and the unit count."""
    opts = ctx.options(FullyConnectedOptionsT)
    if opts.weightsFormat != 0:
        raise ctx.error(f"weights_format {opts.weightsFormat} is not supported (only DEFAULT)")
    x, w = ctx.input(0), ctx.input(1)
    if w.type.rank != 2:
        raise ctx.error(f"weights {w.type} must be rank 2 ([units, inputs])")
    units, depth = (int(d) for d in w.type.shape)
    if x.type.num_elements % depth:
        raise ctx.error(f"input {x.type} does not split into rows of {depth}")
    return opts, ctx.reshape(x, (x.type.num_elements // depth, depth)), units

"""Bounds on what the compiler will represent, whatever a model declares (docs/ir.md "Limits").

A model file can declare any shape; these keep a hostile or damaged one from making the compiler
(or, later, the device) try to hold it. Each is checked where a model enters the IR."""
from __future__ import annotations

from iree_py.errors import CompileError
from iree_py.ir.graph import Graph
from iree_py.ir.types import TensorType

# Elements in one tensor of static shape: 2^32 (16 GiB of f32). Constant folding materializes far
# less (passes/fold_constants.py max_elements); this bounds what a kernel may be asked to produce.
MAX_TENSOR_ELEMENTS = 1 << 32


def check_tensor_sizes(graph: Graph, source: str) -> None:
    """CompileError naming the first value (its producer, or that it is an input) past MAX_TENSOR_ELEMENTS."""
    for value in graph.values():
        if isinstance(value.type, TensorType) and value.type.is_static and value.type.num_elements > MAX_TENSOR_ELEMENTS:
            where = (f"node '{value.producer.name}' ({value.producer.op})" if value.producer is not None
                     else "a model input or constant")
            raise CompileError(f"{source}: value '{value.name}' {value.type} ({where}) has {value.type.num_elements} "
                               f"elements, more than the {MAX_TENSOR_ELEMENTS} iree-py handles")

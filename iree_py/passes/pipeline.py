"""The default pass pipeline, in order, and `run_pipeline` (with IR printing after passes)."""
from __future__ import annotations

from typing import Callable, Literal, Protocol

from iree_py.errors import reported_as_internal
from iree_py.ir.graph import Graph
from iree_py.ir.ops.control_flow import BODY_ATTRS
from iree_py.ir.text import print_graph
from iree_py.ir.verifier import verify
from iree_py.passes.eliminate_dead_code import EliminateDeadCode
from iree_py.passes.fold_batchnorm_into_conv import FoldBatchNormIntoConv
from iree_py.passes.fold_constants import FoldConstants
from iree_py.passes.fuse_elementwise import FuseElementwise
from iree_py.passes.fuse_qdq import FuseQdq
from iree_py.passes.lower_batchnorm import LowerBatchNorm
from iree_py.passes.remove_reshape_noops import RemoveReshapeNoops


class Pass(Protocol):
    name: str

    def run(self, graph: Graph) -> Graph: ...


PASSES: dict[str, type] = {p.name: p for p in (FuseQdq, FoldConstants, FoldBatchNormIntoConv, LowerBatchNorm,
                                               RemoveReshapeNoops, EliminateDeadCode, FuseElementwise)}


def default_pipeline() -> list[Pass]:
    return [
        FuseQdq(),
        FoldConstants(),
        FoldBatchNormIntoConv(),
        LowerBatchNorm(),
        FoldConstants(),
        RemoveReshapeNoops(),
        EliminateDeadCode(),
        FuseElementwise(),
        EliminateDeadCode(),
    ]


def run_on_regions(p: Pass, graph: Graph) -> Graph:
    """Run a pass on `graph` and on every control-flow body in it (bodies are closed graphs)."""
    graph = p.run(graph)
    for node in graph.nodes:
        for name in BODY_ATTRS.get(node.op, ()):
            node.attrs[name] = run_on_regions(p, node.attrs[name])
    return graph


def run_pipeline(graph: Graph, print_ir_after: set[str] | Literal["all"] | None = None,
                 out: Callable[[str], None] = print, passes: list[Pass] | None = None,
                 elide_over: int | None = 64, final_check: bool = True) -> Graph:
    """Run the passes (default pipeline) in order, verifying after each; print the IR after the
    passes named in `print_ir_after` ("all": every pass). `final_check` also requires f32 compute
    (CompileError "unsupported dtype" naming the node)."""
    passes = default_pipeline() if passes is None else passes
    unknown = set(print_ir_after or ()) - set(PASSES) if print_ir_after != "all" else set()
    if unknown:
        from iree_py.errors import CompileError
        raise CompileError(f"--print-ir-after: unknown pass {sorted(unknown)}; passes are {sorted(PASSES)}")
    for p in passes:
        with reported_as_internal(f"in pass {p.name}"):
            graph = run_on_regions(p, graph)
        verify(graph)
        if print_ir_after == "all" or (print_ir_after and p.name in print_ir_after):
            out(f"// ----- IR after {p.name} ----- //\n{print_graph(graph, elide_over=elide_over)}")
    if final_check:
        verify(graph, final=True)
    return graph

"""Kernels for specs with symbolic dims (docs/dynamic_shapes.md §3).

A spec is dynamic when a dim of any of its tensors (or an attribute value) is a symbolic
`Expr`. Such a kernel is compiled once: the values of the symbols it mentions, sorted by name
(`kernel_symbols`), arrive as its push constants, and it computes every dim, stride, loop bound
and binding length from them at run time. Static specs keep their specialized builders
(iree_py/codegen/llvm/*.py); this table holds the dynamic ones.
"""
from __future__ import annotations

from iree_py.codegen.llvm.dims import is_dynamic, kernel_symbols  # noqa: F401 (their home is dims.py)

# kind -> "module:function" under iree_py.codegen.llvm.dynamic; imported when first used.
DYNAMIC_BUILDERS: dict[str, str] = {
    "reduce_rt": "reduce_rt:build",
    "nonzero_count": "datadep:build_nonzero_count",
    "nonzero": "datadep:build_nonzero",
    "unique_count": "datadep:build_unique_count",
    "unique": "datadep:build_unique",
    "resize_rt": "resize_rt:build",
    "nms_select": "nms:build_nms_select",
    "nms_output": "nms:build_nms_output",
    "roi_align": "roi_align:build_roi_align",
}

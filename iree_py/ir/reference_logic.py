"""An old path, kept while iree_py/codegen/llvm imports these names from it: the op family they
belong to is iree_py/ir/ops/elementwise.py (import them from there). Delete this file once nothing imports it."""
from iree_py.ir.ops.elementwise import int_clip_bounds  # noqa: F401

"""An old path, kept while iree_py/codegen/llvm imports these names from it: the op family they
belong to is iree_py/ir/ops/indexing.py (import them from there). Delete this file once nothing imports it."""
from iree_py.ir.ops.indexing import gather_elements_rule, gather_nd_rule, gather_rule, scatter_elements_rule, scatter_nd_rule  # noqa: F401

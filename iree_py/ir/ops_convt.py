"""An old path, kept while iree_py/codegen/llvm imports these names from it: the op family they
belong to is iree_py/ir/ops/conv.py (import them from there). Delete this file once nothing imports it."""
from iree_py.ir.ops.conv import conv_transpose_output  # noqa: F401

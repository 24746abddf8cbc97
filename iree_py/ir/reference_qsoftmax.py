"""An old path, kept while iree_py/codegen/llvm imports these names from it: the op family they
belong to is iree_py/ir/ops/qsoftmax.py (import them from there). Delete this file once nothing imports it."""
from iree_py.ir.ops.qsoftmax import EXP_BARREL, EXP_MINUS_ONE_EIGHTH, FORTY_EIGHT_OVER_17, MINUS_32_OVER_17, ONE_THIRD  # noqa: F401

"""An old path, kept while iree_py/codegen/llvm imports these names from it: the op family they
belong to is iree_py/ir/ops/qsoftmax.py (import them from there). Delete this file once nothing imports it."""
from iree_py.ir.ops.qsoftmax import ACCUMULATION_INTEGER_BITS, OUTPUT_ZERO_POINT, SCALED_DIFF_INTEGER_BITS  # noqa: F401

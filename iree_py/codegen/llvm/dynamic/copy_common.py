"""The data-movement helpers moved to codegen/llvm/copy_common.py (one builder per kernel family
takes int or Expr dims); re-exported here for the dynamic/ builders not yet merged into theirs."""
from iree_py.codegen.llvm.copy_common import (ROW_GROUP_ELEMENTS, RowGrid, attr_dim, copy_run,  # noqa: F401
                                              fail_unless, fill_run, group_rows, require_same_dims,
                                              row_grid, row_major_strides, total)
from iree_py.codegen.llvm.dims import product  # noqa: F401

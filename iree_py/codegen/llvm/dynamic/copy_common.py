"""The data-movement helpers moved to codegen/llvm/copy_common.py (one builder per kernel family
takes int or Expr dims); re-exported here for the dynamic/ builders not yet merged into theirs."""
from iree_py.codegen.llvm.copy_common import attr_dim, fail_unless, require_same_dims  # noqa: F401
from iree_py.codegen.llvm.dims import product  # noqa: F401

"""What every dynamic kernel builder uses, now in codegen/llvm/dims.py (one builder per kernel family
takes dims that are ints or Exprs); re-exported here for the dynamic/ builders not yet merged into theirs."""
from iree_py.codegen.llvm.dims import (DimEmitter, DimValue, DynamicKernel, begin_dynamic_kernel,  # noqa: F401
                                       floordiv, load_symbols)

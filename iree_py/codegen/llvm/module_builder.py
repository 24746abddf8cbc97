"""KernelSpec -> its kernel builder -> one LLVM module per kernel (as text), and the library export."""
from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from typing import Callable

import llvmlite.binding as llvm
from llvmlite import ir

from iree_py.codegen.kernel_spec import KernelInfo, KernelSpec
from iree_py.errors import CompileError
from iree_py.ir.symbols import SymbolicDimError
from iree_py.codegen.llvm.common import KERNEL_FN_TYPE, NO_BUILTINS_ATTR
from iree_py.codegen.llvm.dispatch_guard import add_dispatch_guard, body_name
from iree_py.codegen.llvm.dims import is_dynamic
from iree_py.codegen.llvm.kernel_objects import CANONICAL_NAME, canonical_text, data_layout, target_machine
from iree_py.codegen.llvm.library import add_library_export
from iree_py.targets import Target

Builder = Callable[[KernelSpec, ir.Module, Target], KernelInfo]

# kind -> "module:function" under iree_py.codegen.llvm; imported when first used.
KERNEL_BUILDERS: dict[str, str] = {
    "conv2d": "conv:build",
    "matmul": "matmul:build",
    "elementwise": "elementwise:build",
    "maxpool": "pool:build",
    "maxpool_index": "pool:build",
    "avgpool": "pool:build",
    "globalavgpool": "pool:build",
    "softmax": "softmax:build",
    "logsoftmax": "softmax:build_logsoftmax",
    "hardmax": "softmax:build_hardmax",
    "reduce": "reduce:build",
    "lrn": "lrn:build",
    "transpose": "transpose:build",
    "slice": "slice:build",
    "concat": "concat:build",
    "quantize": "qelementwise:build_quantize",
    "dequantize": "qelementwise:build_dequantize",
    "qadd": "qelementwise:build_qadd",
    "qconv": "qconv:build",
    "qmatmul": "qmatmul:build",
    "qavgpool": "qpool:build",
    "gather": "gather:build_gather",
    "gather_elements": "gather:build_gather_elements",
    "gather_nd": "gather:build_gather_nd",
    "scatter_elements": "scatter:build_scatter_elements",
    "scatter_nd": "scatter:build_scatter_nd",
    "expand": "expand:build",
    "resize": "resize:build",
    "pad": "pad:build",
    "argmax": "argminmax:build",
    "argmin": "argminmax:build",
    "cumsum": "cumsum:build",
    "topk": "topk:build",
    "lstm": "recurrent:build",
    "gru": "recurrent:build",
    "rnn": "recurrent:build",
    "qlstm": "qlstm:build",
    "conv_transpose": "conv_transpose:build",
    "lppool": "pool:build",
    "qconv_transpose": "qconv_transpose:build",
    "qsoftmax": "qsoftmax:build",
    "qlookup": "qlookup:build",
    "qconv_dot": "qconv_dot:build",
    "qdwconv": "qdepthwise:build",
    "cumprod": "cumsum:build_cumprod",
    "bitcast": "bitcast:build",
    "reduce_rt": "reduce:build_runtime_axes",
    "resize_rt": "resize:build_runtime",
    "nonzero_count": "data_dependent:build_nonzero_count",
    "nonzero": "data_dependent:build_nonzero",
    "unique_count": "data_dependent:build_unique_count",
    "unique": "data_dependent:build_unique",
    "nms_select": "detection:build_nms_select",
    "nms_output": "detection:build_nms_output",
    "roi_align": "detection:build_roi_align",
    "string_equal": "string_equal:build",
}


# Every builder above takes dims that are ints or Exprs (docs/dynamic_shapes.md §3), except these,
# whose kernels are specialized to known sizes: a spec of one of them with symbolic dims is refused
# here, naming the kernel and the way out.
STATIC_DIM_KINDS = frozenset({"dequantize", "gather_nd", "qadd", "qavgpool", "qconv_transpose", "qdwconv",
                              "qlookup", "qsoftmax", "quantize", "resize", "scatter_elements", "scatter_nd",
                              "string_equal"})


def kernel_builder(spec: KernelSpec) -> Builder:
    where = KERNEL_BUILDERS.get(spec.kind)
    if where is None:
        raise ValueError(f"kernel {spec.name!r}: unsupported kind {spec.kind!r}; "
                         f"supported: {', '.join(sorted(KERNEL_BUILDERS))}")
    if spec.kind in STATIC_DIM_KINDS and is_dynamic(spec):
        raise CompileError(f"kernel {spec.name!r}: kind {spec.kind!r} has no kernel for symbolic dims yet "
                           f"({', '.join(str(t) for t in (*spec.inputs, *spec.outputs))}). Give the symbols "
                           f"values (--dim NAME=VALUE) to compile a static module")
    module_name, fn_name = where.split(":")
    try:
        module = importlib.import_module(f"iree_py.codegen.llvm.{module_name}")
    except ModuleNotFoundError as err:
        raise ValueError(f"kernel {spec.name!r}: kind {spec.kind!r} has no builder yet ({err})") from err
    return getattr(module, fn_name)


@dataclass(frozen=True)
class KernelIR:
    info: KernelInfo   # named as its spec
    text: str          # LLVM IR of the entry point (dispatch guard) and its kernel, canonically named


def _add_no_builtins(text: str) -> str:
    """Mark every function definition "no-builtins" (no memcpy/memset formation)."""
    return re.sub(r"^(define [^\n]*?)\s*\{\s*$", rf"\1 {NO_BUILTINS_ATTR} {{", text, flags=re.MULTILINE)


def kernel_ir(spec: KernelSpec, target: Target) -> KernelIR:
    """One kernel as its own LLVM module: the builder's kernel under body_name(spec.name), the
    dispatch guard under spec.name, then the text named canonically (kernel_objects.canonical_text)."""
    module = ir.Module(name=CANONICAL_NAME)
    module.triple = target.triple
    module.data_layout = data_layout(target)
    body = dataclasses.replace(spec, name=body_name(spec.name))
    info = kernel_builder(body)(body, module, target)
    if info.name != body.name:
        raise ValueError(f"kernel {spec.name!r}: builder returned KernelInfo named {info.name!r}")
    info = dataclasses.replace(info, name=spec.name)
    bindings = len(spec.inputs) + len(spec.outputs)
    if len(info.binding_min_lengths) != bindings:  # the guard's write set assumes inputs then outputs
        raise ValueError(f"kernel {spec.name!r}: builder declared {len(info.binding_min_lengths)} bindings for "
                         f"{len(spec.inputs)} inputs and {len(spec.outputs)} outputs")
    add_dispatch_guard(module, info, target, written=range(len(spec.inputs), bindings))
    return KernelIR(info, canonical_text(_add_no_builtins(str(module)), spec.name))


def kernel_irs(specs: list[KernelSpec], target: Target) -> list[KernelIR]:
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"kernel names must be unique in one executable; repeated: {dupes}")
    irs = []
    for spec in specs:
        nodes = f" (nodes {', '.join(repr(n) for n in spec.source_nodes)})" if spec.source_nodes else ""
        where = f"kernel {spec.name}, {spec.kind}{nodes}, for {target.name}"
        try:
            irs.append(kernel_ir(spec, target))
        except CompileError as e:  # what the kernel cannot do (symbolic channels, a dtype): name its nodes
            raise CompileError(f"{where}: {e}") from None
        except SymbolicDimError as e:  # a builder written for static shapes
            raise CompileError(f"{where}: {e}: this kernel needs static dims; give the symbolic dims values "
                               f"(compile --dim NAME=VALUE)") from None
        except Exception as e:  # a bug (or a bad spec from a caller): the compiler reports where
            e.add_note(f"while generating {where}")
            raise
    return irs


def library_export_module(entry_names: list[str], symbols: list[str], target: Target) -> llvm.ModuleRef:
    """The kernel library's query function and its table: entry `entry_names[i]` is the function
    `symbols[i]`, defined (hidden) in the kernels' objects."""
    module = ir.Module(name="irp_library")
    module.triple = target.triple
    module.data_layout = data_layout(target)
    functions = {s: ir.Function(module, KERNEL_FN_TYPE, name=s) for s in dict.fromkeys(symbols)}
    add_library_export(module, entry_names, [functions[s] for s in symbols])
    mod = llvm.parse_assembly(str(module))
    for fn in mod.functions:
        if fn.is_declaration:
            fn.visibility = "hidden"
    return mod


def library_export_object(entry_names: list[str], symbols: list[str], target: Target) -> bytes:
    return target_machine(target).emit_object(library_export_module(entry_names, symbols, target))

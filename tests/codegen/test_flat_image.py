"""The flat image linker (iree_py/codegen/llvm/flat_image.py): images that can be used in place
are accepted with the right entry offsets; anything that would need relocating or writable memory
is refused with the reason; 32-bit kernels call no compiler builtins or libm."""
from __future__ import annotations

import dataclasses
import struct

import llvmlite.binding as llvm
import pytest

from iree_py.codegen.kernel_spec import KernelSpec
from iree_py.codegen.llvm import build_executable, build_kernel_objects
from iree_py.codegen.llvm.flat_image import FlatImageError, _Elf, link_flat_image
from iree_py.codegen.llvm.target_machine import create_target_machine
from iree_py.targets import Target, load_target
from iree_py.compiler import deduplicate, partition
from iree_py.frontends.onnx import import_onnx
from iree_py.passes.pipeline import run_pipeline
from iree_py.vm.memory_plan import plan_memory
from onnx import TensorProto, helper

from tests.codegen.conftest import f32

FLAT_TARGETS = ["cortex-m4", "cortex-m7", "riscv32"]
HOST_FLAT = dataclasses.replace(load_target("x86_64"), executable_format="flat")
# Kernels that once needed __floatdisf (an i64 -> f32 conversion) on 32-bit targets, and the math
# library's polynomials (which must not call libm's expf/logf).
BUILTIN_PRONE_OPS = ["AveragePool", "Hardmax", "Softmax", "Log", "Exp", "Tanh", "Erf", "Sin", "Pow", "Div"]


def _model_specs(op: str) -> list[KernelSpec]:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]} if op == "AveragePool" else {}
    inputs = ["x", "x"] if op in ("Pow", "Div") else ["x"]
    graph = helper.make_graph([helper.make_node(op, inputs, ["y"], **attrs)], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    g = run_pipeline(import_onnx(model.SerializeToString()), out=lambda _: None)
    plan = plan_memory(g)
    return deduplicate([d.spec for d in partition(g, plan.elided)])[0]


def _object(llvm_ir: str, target: Target, reloc: str = "pic") -> bytes:
    tm = create_target_machine(target)
    if reloc != "pic":
        tm = llvm.Target.from_triple(target.triple).create_target_machine(
            cpu=target.cpu, features=target.features, opt=2, reloc=reloc, codemodel="default")
    mod = llvm.parse_assembly(llvm_ir.replace("TRIPLE", target.triple))
    mod.verify()
    return tm.emit_object(mod)


@pytest.mark.parametrize("target_name", FLAT_TARGETS)
def test_every_kernel_op_links_without_builtins(target_name: str):
    target = load_target(target_name)
    for op in BUILTIN_PRONE_OPS:
        built = build_kernel_objects(_model_specs(op), target)
        undefined = sorted({s.name for obj in built.objects for s in _Elf(obj, op).symbols() if s.shndx == 0 and s.name})
        assert undefined == [], f"{op} on {target_name} calls {undefined}"
        image = link_flat_image(list(built.objects), list(built.symbols), target, op)
        assert not image.used_libgcc


@pytest.mark.parametrize("target_name", FLAT_TARGETS)
def test_flat_blob_has_offsets_inside_the_image(target_name: str):
    target = load_target(target_name)
    specs = _model_specs("AveragePool") + [dataclasses.replace(s, name="second") for s in _model_specs("Exp")]
    blob = build_executable(specs, target)
    assert blob.format == "flat" and blob.code[:4] != b"\x7fELF"
    assert len(blob.entry_offsets) == len(specs) == len(blob.kernels)
    thumb = target.arch == "thumbv7em"
    for offset in blob.entry_offsets:
        assert bool(offset & 1) == thumb
        assert 0 <= offset & ~1 < len(blob.code) and (offset & ~1) % 2 == 0


def test_elf_targets_keep_the_library_table():
    blob = build_executable(_model_specs("Exp"), load_target("x86_64"))
    assert blob.format == "elf" and blob.code[:4] == b"\x7fELF" and blob.entry_offsets == ()


KERNEL = """
target triple = "TRIPLE"
{globals}
define i32 @k(ptr %s, ptr %w) nounwind {{
  {body}
}}
"""


def test_writable_data_is_refused():
    ir_text = KERNEL.format(globals="@counter = internal global i32 0",
                            body="%v = load i32, ptr @counter\n  %n = add i32 %v, 1\n  store i32 %n, ptr @counter\n  ret i32 %v")
    with pytest.raises(FlatImageError, match=r"writable|zero-fill"):
        link_flat_image([_object(ir_text, load_target("riscv32"))], ["k"], None, "counter kernel")


def test_pointer_table_is_refused():
    """A table of pointers needs relocating wherever the image lies: PIC puts it in writable
    .data.rel.ro, so the image is refused."""
    ir_text = KERNEL.format(globals="@table = internal constant [1 x ptr] [ptr @k]",
                            body="%p = load ptr, ptr @table\n  %i = ptrtoint ptr %p to i32\n  ret i32 %i")
    with pytest.raises(FlatImageError, match=r"writable sections \(\.data\.rel\.ro"):
        link_flat_image([_object(ir_text, load_target("cortex-m4"))], ["k"], None, "table kernel")


def test_absolute_address_is_refused():
    """Non-PIC code holds absolute addresses: linked at two bases, the images differ."""
    ir_text = KERNEL.format(globals="@c = internal constant [4 x i32] [i32 1, i32 2, i32 3, i32 4]",
                            body="%p = getelementptr [4 x i32], ptr @c, i32 0, i32 2\n  %v = load volatile i32, ptr %p\n  ret i32 %v")
    with pytest.raises(FlatImageError, match=r"not position independent: linked at 0x10000 instead of 0 its bytes "
                                             r"differ from offset 0x[0-9a-f]+ \(\.text\)"):
        link_flat_image([_object(ir_text, load_target("cortex-m4"), reloc="static")], ["k"], None, "absolute kernel")


def test_missing_entry_is_refused():
    ir_text = KERNEL.format(globals="", body="ret i32 0")
    with pytest.raises(FlatImageError, match=r"entry point 'other' is not a function in the linked image"):
        link_flat_image([_object(ir_text, HOST_FLAT)], ["k", "other"], None, "one kernel")


def test_thumb_offsets_come_from_the_symbol_table():
    ir_text = KERNEL.format(globals="", body="ret i32 7")
    image = link_flat_image([_object(ir_text, load_target("cortex-m4"))], ["k"], None, "thumb kernel")
    assert image.entry_offsets == (1,)
    # movs r0, #7 ; bx lr  (Thumb: 0x2007, 0x4770)
    assert struct.unpack_from("<2H", image.code, 0) == (0x2007, 0x4770)

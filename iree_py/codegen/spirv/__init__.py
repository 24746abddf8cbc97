"""The SPIR-V backend (Vulkan): each KernelSpec becomes one compute shader written by our own
SPIR-V writer (writer.py, builder.py; no LLVM, no glslang), validated with spirv-val when it is
installed; the executable's code is the shaders one after another, each entry point's code_offset
saying where its shader starts (docs/vulkan.md)."""
from __future__ import annotations

from iree_py.codegen.backend import Backend
from iree_py.codegen.kernel_spec import ExecutableBlob, KernelSpec
from iree_py.codegen.spirv.kernels import KERNEL_BUILDERS, build_kernel
from iree_py.codegen.spirv.plan import plan
from iree_py.codegen.spirv.validate import validate_shader
from iree_py.targets import Target

__all__ = ["BACKEND", "KERNEL_BUILDERS", "build_executable"]


def build_executable(specs: list[KernelSpec], target: Target, jobs: int | None = None) -> ExecutableBlob:
    code = b""
    offsets, kernels = [], []
    for spec in specs:
        shader, info = build_kernel(spec, target)
        validate_shader(shader, spec.name, target)
        offsets.append(len(code))
        kernels.append(info)
        code += shader
    return ExecutableBlob(arch=target.arch, code=code, kernels=tuple(kernels), format="spirv",
                          entry_offsets=tuple(offsets))


BACKEND = Backend(name="spirv", kernel_kinds=frozenset(KERNEL_BUILDERS), plan=plan, build_executable=build_executable)

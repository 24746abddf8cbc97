"""spirv-val on every shader the backend writes, when spirv-tools is installed (target data says
which Vulkan environment: `spirv_env`). A shader it rejects is an internal compiler error: the
writer made it."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from iree_py.errors import InternalCompilerError
from iree_py.targets import Target


def spirv_val() -> str | None:
    return shutil.which("spirv-val")


def validate_shader(shader: bytes, name: str, target: Target) -> None:
    tool = spirv_val()
    if tool is None:
        return
    with tempfile.TemporaryDirectory(prefix="iree-py-spirv-") as tmp:
        path = Path(tmp) / f"{name}.spv"
        path.write_bytes(shader)
        result = subprocess.run([tool, "--target-env", target.spirv_env, str(path)], capture_output=True, text=True)
    if result.returncode != 0:
        raise InternalCompilerError(f"kernel {name}: spirv-val --target-env {target.spirv_env} rejects its shader: "
                                    f"{(result.stderr or result.stdout).strip()}")

"""Read a .tflite file into the generated object API (iree_py/frontends/tflite/schema/).

`read_model(source)` checks the "TFL3" identifier and the schema version, then unpacks the whole
flatbuffer into Python objects (`ModelT`); buffers come back as numpy uint8 arrays.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from iree_py.errors import CompileError
from iree_py.frontends.tflite.schema.BuiltinOperator import BuiltinOperator
from iree_py.frontends.tflite.schema.Model import Model, ModelT

IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3        # the newest TFLite schema version this reader knows
PLACEHOLDER_FOR_GREATER_OP_CODES = 127

OPERATOR_NAMES = {code: name for name, code in vars(BuiltinOperator).items() if not name.startswith("_")}


def is_tflite(model: object) -> bool:
    """True for bytes with the TFLite file identifier, or a path ending in .tflite."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model[4:8]) == IDENTIFIER
    if isinstance(model, (str, Path)):
        return Path(model).suffix.lower() == ".tflite"
    return False


def _load_bytes(model: str | Path | bytes) -> tuple[bytes, str]:
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), "<bytes>"
    path = Path(model)
    if not path.is_file():
        raise CompileError(f"{model} is not a valid TFLite model: no such file")
    return path.read_bytes(), str(model)


def read_model(model: str | Path | bytes) -> tuple[ModelT, str]:
    """The unpacked model and a name for messages; CompileError if it is not a TFLite v3 file."""
    data, source = _load_bytes(model)
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        found = data[4:8] if len(data) >= 8 else b""
        raise CompileError(f"{source} is not a TFLite model: file identifier {found!r}, expected {IDENTIFIER!r}")
    try:
        version = Model.GetRootAs(data, 0).Version()
    except Exception as e:  # flatbuffers raises struct errors / IndexError on truncated data
        raise CompileError(f"{source} is not a valid TFLite model: {e}") from None
    if version > SCHEMA_VERSION:
        raise CompileError(f"{source}: TFLite schema version {version} is newer than the newest iree-py "
                           f"reads ({SCHEMA_VERSION})")
    try:
        model_t = ModelT.InitFromObj(Model.GetRootAs(data, 0))
    except Exception as e:
        raise CompileError(f"{source} is not a valid TFLite model: {e}") from None
    for i, buf in enumerate(model_t.buffers or []):
        if buf.offset and buf.offset > 1:
            raise CompileError(f"{source}: buffer {i} is stored outside the flatbuffer (offset {buf.offset}); "
                               "models over 2 GB are not supported")
    check_tensor_indices(model_t, source)
    return model_t, source


def check_tensor_indices(model: ModelT, source: str) -> None:
    """Every tensor index a subgraph or operator holds names one of its subgraph's tensors (-1, an
    absent optional, only where TFLite allows it), so the converters can index without checking."""
    for s, subgraph in enumerate(model.subgraphs or []):
        count = len(subgraph.tensors or [])

        def check(indices, what: str, optional: bool) -> None:
            for i, index in enumerate(indices if indices is not None else []):
                if not (-1 if optional else 0) <= int(index) < count:
                    raise CompileError(f"{source}: subgraph {s}: {what} {i} is tensor {int(index)}, but the subgraph "
                                       f"has {count} tensors")

        check(subgraph.inputs, "input", optional=False)
        check(subgraph.outputs, "output", optional=False)
        for o, op in enumerate(subgraph.operators or []):
            check(op.inputs, f"operator {o}'s input", optional=True)
            check(op.outputs, f"operator {o}'s output", optional=True)


def operator_code(model: ModelT, index: int) -> int:
    """The builtin operator code of operator_codes[index] (the larger of the two code fields)."""
    codes = model.operatorCodes or []
    if not 0 <= index < len(codes):
        raise CompileError(f"opcode index {index} out of range ({len(codes)} operator codes)")
    code = codes[index]
    return max(int(code.builtinCode), int(code.deprecatedBuiltinCode))


def custom_code(model: ModelT, index: int) -> str:
    """The custom_code of operator_codes[index] (a CUSTOM operator's name), "" when absent."""
    operator_code(model, index)   # checks the index
    custom = (model.operatorCodes or [])[index].customCode
    if custom is None:
        return ""
    return custom.decode("utf-8", "replace") if isinstance(custom, bytes) else str(custom)


def operator_name(model: ModelT, index: int) -> str:
    code = operator_code(model, index)
    if code == BuiltinOperator.CUSTOM:
        return f"CUSTOM '{custom_code(model, index)}'"
    return OPERATOR_NAMES.get(code, f"builtin operator {code}")


def buffer_bytes(model: ModelT, index: int) -> np.ndarray | None:
    """A buffer's data as uint8, or None when the buffer is empty."""
    buffers = model.buffers or []
    if not 0 <= index < len(buffers):
        raise CompileError(f"buffer index {index} out of range ({len(buffers)} buffers)")
    data = buffers[index].data
    if data is None or len(data) == 0:
        return None
    return np.asarray(data, dtype=np.uint8)

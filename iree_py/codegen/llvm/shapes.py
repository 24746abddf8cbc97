"""Static shape helpers for kernel builders: numpy broadcasting as strides, and merging of
adjacent dims that every operand walks contiguously."""
from __future__ import annotations

from iree_py.codegen.llvm.common import strides_of


def broadcast_strides(in_shape: tuple[int, ...], out_shape: tuple[int, ...], what: str) -> tuple[int, ...]:
    """Element strides of an input broadcast numpy-style to `out_shape` (0 on broadcast dims)."""
    if len(in_shape) > len(out_shape):
        raise ValueError(f"{what}: input shape {in_shape} has higher rank than output {out_shape}")
    padded = (1,) * (len(out_shape) - len(in_shape)) + tuple(in_shape)
    own = strides_of(padded)
    strides = []
    for axis, (i, o) in enumerate(zip(padded, out_shape)):
        if i == o:
            strides.append(own[axis] if o != 1 else 0)
        elif i == 1:
            strides.append(0)
        else:
            raise ValueError(f"{what}: input shape {in_shape} does not broadcast to output shape {out_shape}")
    return tuple(strides)


def collapse_dims(shape: tuple[int, ...], operand_strides: list[tuple[int, ...]]
                  ) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Merge adjacent dims wherever every operand's strides allow it; drop size-1 dims.

    Returns (shape, strides per operand) with at least one dim."""
    dims = [(n, [s[axis] for s in operand_strides]) for axis, n in enumerate(shape) if n != 1]
    if not dims:
        return (1,), [(0,) for _ in operand_strides]
    merged = [dims[0]]
    for n, strides in dims[1:]:
        prev_n, prev_strides = merged[-1]
        if all(ps == s * n for ps, s in zip(prev_strides, strides)):
            merged[-1] = (prev_n * n, strides)
        else:
            merged.append((n, strides))
    out_shape = tuple(n for n, _ in merged)
    out_strides = [tuple(strides[k] for _, strides in merged) for k in range(len(operand_strides))]
    return out_shape, out_strides

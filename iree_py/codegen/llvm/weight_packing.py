"""Conv weights re-laid out at compile time for the kernels that read them.

"m_blocked" (the conv2d channel-vector path, llvm/conv_channels.py): output channels innermost in
blocks of V lanes, so one vector load gives one weight tap for V consecutive output channels:

    W[M, C/g, KH, KW]  ->  W'[g * MB, KH, KW, C/g, V]      MB = ceil((M/g) / V) blocks per group

W'[g * MB + j, ky, kx, c, v] = W[g * M/g + j * V + v, c, ky, kx], zero where j * V + v >= M/g
(each group's output channels are padded to a multiple of V on their own, so a block never mixes
groups). The input channel c is the second-innermost axis because the kernel's innermost loop runs
over c: its weight vectors are then consecutive in memory.
"""
from __future__ import annotations

import numpy as np

M_BLOCKED = "m_blocked"


def m_blocked_shape(weight_shape: tuple[int, ...], group: int, lanes: int) -> tuple[int, int, int, int, int]:
    """The packed shape of a [M, C/g, KH, KW] weight: (g * MB, KH, KW, C/g, V)."""
    if len(weight_shape) != 4:
        raise ValueError(f"conv weight must be 4-D [M, C/group, KH, KW], got shape {tuple(weight_shape)}")
    m, cg, kh, kw = (int(d) for d in weight_shape)
    if group < 1 or m % group:
        raise ValueError(f"conv weight {tuple(weight_shape)}: M = {m} is not divisible by group {group}")
    if lanes < 1:
        raise ValueError(f"m_blocked packing needs lanes >= 1, got {lanes}")
    blocks = -(-(m // group) // lanes)
    return (group * blocks, kh, kw, cg, lanes)


def pack_m_blocked(weight: np.ndarray, group: int, lanes: int) -> np.ndarray:
    """W[M, C/g, KH, KW] -> W'[g * MB, KH, KW, C/g, V] (see the module docstring), float32."""
    weight = np.asarray(weight)
    blocks_total, kh, kw, cg, v = m_blocked_shape(weight.shape, group, lanes)
    mg = weight.shape[0] // group
    blocks = blocks_total // group
    padded = np.zeros((group, blocks * v, cg, kh, kw), dtype=np.float32)
    padded[:, :mg] = weight.reshape(group, mg, cg, kh, kw)
    # [g, MB, V, C/g, KH, KW] -> [g, MB, KH, KW, C/g, V]
    packed = padded.reshape(group, blocks, v, cg, kh, kw).transpose(0, 1, 4, 5, 3, 2)
    return np.ascontiguousarray(packed.reshape(blocks_total, kh, kw, cg, v))


def unpack_m_blocked(packed: np.ndarray, m: int, group: int) -> np.ndarray:
    """The inverse of pack_m_blocked: W'[g * MB, KH, KW, C/g, V] -> W[M, C/g, KH, KW]."""
    blocks_total, kh, kw, cg, v = packed.shape
    if m % group or blocks_total % group:
        raise ValueError(f"packed weight {packed.shape} does not hold {m} channels in {group} groups")
    blocks = blocks_total // group
    full = packed.reshape(group, blocks, kh, kw, cg, v).transpose(0, 1, 5, 4, 2, 3)
    return np.ascontiguousarray(full.reshape(group, blocks * v, cg, kh, kw)[:, :m // group].reshape(m, cg, kh, kw))

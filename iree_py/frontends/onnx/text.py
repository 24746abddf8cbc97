"""ONNX TfIdfVectorizer on integer inputs, built from existing normalized ops.

TfIdfVectorizer (onnx's reference semantics): an n-gram of the pool counts once per start position s
and skip distance d where x[s + j*d] == gram[j] for every j and s + (n-1)*d is inside the row; unigrams
use d = 1 only, longer grams every d in 1..max_skip_count+1. Per gram length n and distance d that is
Slice windows of x compared (Equal, broadcast) with the constant grams of length n, And over j, a sum
over the start positions; a constant matrix (MatMul, exact: small integer counts) adds each gram's count
to its output index and applies IDF / TFIDF weights. String pools are refused.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from iree_py.frontends.onnx.compose import Converter
from iree_py.ir.graph import Value

if TYPE_CHECKING:
    from iree_py.frontends.onnx.importer import OnnxContext


INT_INPUTS = ("i32", "i64")


MODES = ("TF", "IDF", "TFIDF")


def _grams(ctx: "OnnxContext", pool: list[int], counts: list[int]) -> list[tuple[int, ...]]:
    """The pool split into grams in pool order: counts[i] is where the (i+1)-grams start."""
    if not counts or counts[0] != 0 or any(b < a for a, b in zip(counts, counts[1:])) or counts[-1] > len(pool):
        raise ctx.bad_attr("ngram_counts", counts, f"must be non-decreasing start offsets from 0 into the pool "
                           f"of {len(pool)} items")
    grams: list[tuple[int, ...]] = []
    for i, start in enumerate(counts):
        end = counts[i + 1] if i + 1 < len(counts) else len(pool)
        n = i + 1
        if (end - start) % n:
            raise ctx.error(f"the {n}-grams take pool items {start}..{end}, not a multiple of {n}")
        grams += [tuple(pool[p:p + n]) for p in range(start, end, n)]
    return grams


def _window_matches(ctx: "OnnxContext", x: Value, length: int, grams: list[tuple[int, ...]],
                    distance: int) -> Value:
    """[B, len(grams)] f32: for each row and gram, the start positions where it matches at `distance`."""
    n = len(grams[0])
    starts = length - (n - 1) * distance
    tokens = np.array(grams, dtype=x.type.dtype.numpy)                       # [G, n]
    matched: Value | None = None
    for j in range(n):
        offset = j * distance
        window = ctx.emit("Slice", [x], {"starts": [0, offset], "ends": [int(x.type.shape[0]), offset + starts],
                                         "steps": [1, 1]})
        window = ctx.emit("Reshape", [window], {"shape": [int(x.type.shape[0]), starts, 1]})
        eq = ctx.emit("Equal", [window, ctx.const(np.ascontiguousarray(tokens[:, j]), f"gram_{n}_{j}")])
        matched = eq if matched is None else ctx.emit("And", [matched, eq])
    assert matched is not None
    hits = ctx.emit("Cast", [matched], {"to": "f32"})
    return ctx.emit("Reduce", [hits], {"kind": "sum", "axes": [1], "keepdims": 0})


def tfidf_vectorizer(ctx: "OnnxContext") -> list[Value]:
    x = ctx.input(0)
    if ctx.attr("pool_strings") is not None:
        raise ctx.error("string pools (pool_strings) are not supported; only pool_int64s")
    if x.type.dtype.value not in INT_INPUTS:
        raise ctx.error(f"input '{x.name}' is {x.type}; only int32 and int64 inputs are supported")
    if x.type.rank not in (1, 2) or not all(isinstance(d, (int, np.integer)) for d in x.type.shape):
        raise ctx.error(f"input '{x.name}' is {x.type}; expected a static [C] or [B, C] tensor")
    mode = ctx.attr("mode", "TF")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    if mode not in MODES:
        raise ctx.bad_attr("mode", mode, f"expected one of {MODES}")
    min_n, max_n = int(ctx.attr("min_gram_length", 1)), int(ctx.attr("max_gram_length", 1))
    skips = int(ctx.attr("max_skip_count", 0))
    if min_n < 1 or max_n < min_n or skips < 0:
        raise ctx.error(f"gram lengths {min_n}..{max_n} / max_skip_count {skips} are invalid")
    pool = [int(v) for v in ctx.attr("pool_int64s", [])]
    grams = _grams(ctx, pool, [int(c) for c in ctx.attr("ngram_counts", [])])
    indexes = [int(i) for i in ctx.attr("ngram_indexes", [])]
    if len(indexes) != len(grams) or any(i < 0 for i in indexes):
        raise ctx.bad_attr("ngram_indexes", indexes, f"need {len(grams)} non-negative output indexes (one a gram)")
    if len(set(grams)) != len(grams):
        raise ctx.error("the pool holds a gram twice; not supported")
    size = max(indexes) + 1
    weights = [float(w) for w in ctx.attr("weights", [])]
    if mode != "TF" and weights and len(weights) != size:
        raise ctx.bad_attr("weights", weights, f"need {size} weights (one per output index)")

    rows = x if x.type.rank == 2 else ctx.emit("Reshape", [x], {"shape": [1, int(x.type.shape[0])]})
    batch, length = int(rows.type.shape[0]), int(rows.type.shape[1])
    parts: list[Value] = []
    order: list[int] = []
    for n in range(min_n, max_n + 1):
        info = np.iinfo(x.type.dtype.numpy)   # a gram with a token out of x's range never matches (count 0)
        chosen = [k for k, g in enumerate(grams) if len(g) == n and all(info.min <= t <= info.max for t in g)]
        distances = [d for d in ([1] if n == 1 else range(1, skips + 2)) if (n - 1) * d < length]
        if not chosen or not distances:
            continue
        total: Value | None = None
        for d in distances:
            counts = _window_matches(ctx, rows, length, [grams[k] for k in chosen], d)
            total = counts if total is None else ctx.emit("Add", [total, counts])
        assert total is not None
        parts.append(total)
        order += chosen
    if not parts:
        y = ctx.const(np.zeros((batch, size), np.float32), "tfidf_zero")
    else:
        counts = parts[0] if len(parts) == 1 else ctx.emit("Concat", parts, {"axis": 1})   # [B, G]
        scatter = np.zeros((len(order), size), np.float32)
        for row, k in enumerate(order):
            scatter[row, indexes[k]] = 1.0
        y = ctx.emit("MatMul", [counts, ctx.const(scatter, "tfidf_scatter")])   # grams sharing an index add up
        if mode == "IDF":
            y = ctx.emit("Min", [y, ctx.const(np.array(1.0, np.float32), "one")])
        if mode != "TF" and weights:
            y = ctx.emit("Mul", [y, ctx.const(np.array(weights, np.float32), "tfidf_weights")])
    shape = [batch, size] if x.type.rank == 2 else [size]
    return [ctx.emit("Reshape", [y], {"shape": shape}, out=0)]


CONVERTERS: dict[str, Converter] = {"TfIdfVectorizer": tfidf_vectorizer}

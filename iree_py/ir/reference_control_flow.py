"""Reference (numpy) semantics of If and Loop: run the bodies with `evaluate`. Both return the list
of the node's results (control-flow nodes are the IR's multi-result nodes)."""
from __future__ import annotations

from typing import Any

import numpy as np


def if_(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    from iree_py.ir.reference import evaluate
    branch = attrs["then_branch"] if int(inputs[0]) != 0 else attrs["else_branch"]
    return evaluate(branch, inputs[1:])


def loop(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    from iree_py.ir.reference import evaluate
    carried_n, scan_in_n, scan_out_n = attrs["carried"], attrs["scan_inputs"], attrs["scan_outputs"]
    trip_count, cond = int(inputs[0]), int(inputs[1])
    carried = list(inputs[2:2 + carried_n])
    scan_inputs = inputs[2 + carried_n:2 + carried_n + scan_in_n]
    captures = inputs[2 + carried_n + scan_in_n:]
    stacked: list[list[np.ndarray]] = [[] for _ in range(scan_out_n)]
    if scan_inputs:  # trips may be symbolic (a Scan over a symbolic length): the inputs bound the loop
        trip_count = min(trip_count, len(scan_inputs[0]))
    i = 0
    while i < trip_count and cond != 0:
        results = evaluate(attrs["body"], [np.array(i, np.int64), *carried, *(x[i] for x in scan_inputs), *captures])
        cond = int(results[0])
        carried = results[1:1 + carried_n]
        for out, value in zip(stacked, results[1 + carried_n:]):
            out.append(value)
        i += 1
    if scan_out_n and isinstance(attrs["trips"], int) and i != attrs["trips"]:
        raise ValueError(f"Loop ran {i} times but its scan outputs are sized for {attrs['trips']}")
    body_outputs = attrs["body"].outputs[1 + carried_n:]
    scans = [np.stack(out) if out else np.zeros((0, *v.type.shape), v.type.dtype.numpy)
             for out, v in zip(stacked, body_outputs)]
    return [*carried, *scans]


def fail(inputs: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    raise ValueError(f"model check failed: {attrs['message']}")


KERNELS = {"If": if_, "Loop": loop, "Fail": fail}

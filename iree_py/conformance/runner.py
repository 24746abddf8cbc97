"""Run conformance cases: one in-process (`run_case`), or many in chunks of worker subprocesses
(`run_cases`) so that a kernel that crashes or hangs costs one case, not the run.

A worker (iree_py/conformance/worker.py) writes a "start" line before each case and a result line
after it. When a worker dies or goes quiet for `case_timeout` seconds, the case it started is
recorded as a runtime error (crash / timeout) and the rest of its chunk goes to a new worker.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx

from iree_py.conformance.cases import ConformanceCase
from iree_py.conformance.compare import compare_outputs
from iree_py.conformance.status import (COMPILE_ERROR, PASSED, RUNTIME_ERROR, UNSUPPORTED, WRONG_RESULT,
                                        CaseResult, classify_compile_error)
from iree_py.errors import CompileError, IreePyError
from iree_py.frontends.onnx.symbolic import unknown_dim_key
from iree_py.resources import PACKAGE_DIR
from iree_py.runtime.strings import is_string_array

# The folder holding this iree_py package (a checkout or site-packages): workers import the same one.
PACKAGE_PARENT = PACKAGE_DIR.parent
DEFAULT_CHUNK = 64
DEFAULT_CASE_TIMEOUT = 120.0
WORKER_STARTUP_TIMEOUT = 60.0  # seconds a new worker may take to announce its first case
WORKER_COMMAND = [sys.executable, "-m", "iree_py.conformance.worker"]  # + CASES.pkl RESULTS.jsonl TARGET


# --- one case, in this process -------------------------------------------------------------------
def run_case(case: ConformanceCase, target: str = "host") -> CaseResult:
    """Compile, run and compare one case; every failure becomes a result, never an exception."""
    def result(status: str, detail: str = "") -> CaseResult:
        return CaseResult(case.name, case.op, status, detail)

    unsupported = _unsupported_value(case)
    if unsupported:
        return result(UNSUPPORTED, unsupported)
    try:
        import iree_py
        module_bytes = iree_py.compile(case.model, target=target, dims=symbolic_dims(case) or None)
    except CompileError as e:
        message = _one_line(e)
        return result(classify_compile_error(message), message)
    except IreePyError as e:
        return result(COMPILE_ERROR, _one_line(e))
    except Exception as e:  # a compiler bug: keep going, say where
        return result(COMPILE_ERROR, f"internal error: {type(e).__name__}: {_one_line(e)}")
    try:
        module = iree_py.load(module_bytes, device=device_for(target))
        outputs = module.main.call(*case.inputs)
    except IreePyError as e:
        return result(RUNTIME_ERROR, _one_line(e))
    except Exception as e:
        return result(RUNTIME_ERROR, f"internal error: {type(e).__name__}: {_one_line(e)}")
    reason = compare_outputs(outputs, case.outputs, case.rtol, case.atol)
    return result(PASSED) if reason is None else result(WRONG_RESULT, reason)


def device_for(target: str) -> str:
    from iree_py.targets import load_target
    t = load_target(target)
    if t.run != "local":
        return "qemu"
    return t.device or "local"  # a GPU target runs on its runtime device ("vulkan")


def symbolic_dims(case: ConformanceCase) -> dict[str, int]:
    """Sizes of the model's symbolic input dims, read off the case's input arrays."""
    model = onnx.load_from_string(case.model)
    initializers = {t.name for t in model.graph.initializer}
    graph_inputs = [vi for vi in model.graph.input if vi.name not in initializers]
    dims: dict[str, int] = {}
    for vi, array in zip(graph_inputs, case.inputs):
        if not isinstance(array, np.ndarray) or not vi.type.HasField("tensor_type"):
            continue
        for i, (d, size) in enumerate(zip(vi.type.tensor_type.shape.dim, array.shape)):
            key = unknown_dim_key(vi.name, i, d)
            if key is not None:
                dims[key] = int(size)
    return dims


def _unsupported_value(case: ConformanceCase) -> str:
    """Why a case's inputs or outputs cannot go through iree-py (a sequence of strings, a string
    output), or "" when they can."""
    for what, values in (("input", case.inputs), ("output", case.outputs)):
        for i, v in enumerate(values):
            if v is None:
                continue  # an absent optional (docs/sequences.md)
            if isinstance(v, list):
                if any(is_string_array(np.asarray(e)) for e in v):
                    return f"{what} {i} is a sequence of strings; iree-py handles numeric tensors only"
                continue
            if what == "output" and is_string_array(v):
                return f"{what} {i} is a string tensor; iree-py returns numeric and bool tensors only"
    return ""


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text if len(text) <= 400 else text[:397] + "..."


# --- many cases, in worker subprocesses ----------------------------------------------------------
@dataclasses.dataclass
class _Worker:
    process: subprocess.Popen
    chunk: list[ConformanceCase]
    folder: Path
    offset: int = 0             # bytes of the results file already read
    started: str | None = None  # the case running now
    done: set[str] = dataclasses.field(default_factory=set)
    last_event: float = dataclasses.field(default_factory=time.monotonic)

    @property
    def results_path(self) -> Path:
        return self.folder / "results.jsonl"


def run_cases(cases: list[ConformanceCase], target: str = "host", jobs: int = 1,
              chunk_size: int = DEFAULT_CHUNK, case_timeout: float = DEFAULT_CASE_TIMEOUT,
              progress: Callable[[CaseResult, int, int], None] | None = None,
              worker_command: list[str] | None = None) -> list[CaseResult]:
    """Results in the order of `cases`. `progress(result, done, total)` is called after each case;
    `worker_command` replaces the worker (tests use one that crashes on purpose)."""
    command = worker_command or WORKER_COMMAND
    queue = [cases[i:i + chunk_size] for i in range(0, len(cases), chunk_size)]
    results: dict[str, CaseResult] = {}
    workers: list[_Worker] = []

    def record(r: CaseResult) -> None:
        results[r.name] = r
        if progress:
            progress(r, len(results), len(cases))

    with tempfile.TemporaryDirectory(prefix="iree_py_conformance_") as tmp:
        serial = 0
        while queue or workers:
            while queue and len(workers) < max(1, jobs):
                serial += 1
                workers.append(_start_worker(command, queue.pop(0), target, Path(tmp) / f"chunk{serial}"))
            time.sleep(0.02)
            for w in list(workers):
                exited = w.process.poll() is not None
                for r in _read_new_results(w):
                    record(r)
                quiet = time.monotonic() - w.last_event
                # Until its first case starts, a worker is importing (seconds on a loaded machine):
                # that start-up is not a case's time.
                limit = case_timeout if w.started is not None else max(case_timeout, WORKER_STARTUP_TIMEOUT)
                if not exited and quiet < limit:
                    continue
                if not exited:
                    w.process.kill()
                    w.process.wait()
                    for r in _read_new_results(w):
                        record(r)
                workers.remove(w)
                failure = _why_stopped(w, timed_out=not exited, quiet=quiet)
                if w.started is not None and w.started not in w.done:
                    case = next(c for c in w.chunk if c.name == w.started)
                    record(CaseResult(case.name, case.op, RUNTIME_ERROR, failure))
                rest = [c for c in w.chunk if c.name not in results]
                if rest and w.started is None:  # died before any case: do not loop forever
                    for c in rest:
                        record(CaseResult(c.name, c.op, RUNTIME_ERROR, f"worker failed to start: {failure}"))
                    rest = []
                if rest:
                    queue.insert(0, rest)
    return [results[c.name] for c in cases]


def _start_worker(command: list[str], chunk: list[ConformanceCase], target: str, folder: Path) -> _Worker:
    folder.mkdir(parents=True)
    (folder / "cases.pkl").write_bytes(pickle.dumps(chunk))
    (folder / "results.jsonl").touch()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))}
    with open(folder / "stderr.txt", "wb") as err:
        process = subprocess.Popen(
            [*command, str(folder / "cases.pkl"), str(folder / "results.jsonl"), target],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=PACKAGE_PARENT)
    return _Worker(process, chunk, folder)


def _read_new_results(w: _Worker) -> list[CaseResult]:
    with open(w.results_path, "rb") as f:
        f.seek(w.offset)
        data = f.read()
    complete = data[:data.rfind(b"\n") + 1]  # a half-written last line waits for the next read
    w.offset += len(complete)
    out = []
    for line in complete.decode().splitlines():
        event: dict[str, Any] = json.loads(line)
        w.last_event = time.monotonic()
        if "start" in event:
            w.started = event["start"]
            continue
        r = CaseResult(**event)
        w.done.add(r.name)
        out.append(r)
    return out


def _why_stopped(w: _Worker, timed_out: bool, quiet: float) -> str:
    if timed_out:
        return f"timed out: no result after {quiet:.0f} s (worker killed)"
    code = w.process.returncode
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    tail = " ".join((w.folder / "stderr.txt").read_text(errors="replace").split())[-300:]
    return f"worker process crashed ({how})" + (f": {tail}" if tail else "")

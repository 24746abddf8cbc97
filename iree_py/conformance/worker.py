"""A conformance worker: `python -m iree_py.conformance.worker CASES.pkl RESULTS.jsonl TARGET`.

Runs the pickled cases (written by runner.run_cases) one by one; before each it appends
{"start": name} to RESULTS.jsonl, after it the result record, flushing both, so that the parent
knows which case was running if this process crashes or hangs.
"""
from __future__ import annotations

import dataclasses
import json
import pickle
import sys
import warnings
from pathlib import Path

from iree_py.conformance.runner import run_case


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m iree_py.conformance.worker CASES.pkl RESULTS.jsonl TARGET", file=sys.stderr)
        return 2
    cases_path, results_path, target = argv
    cases = pickle.loads(Path(cases_path).read_bytes())
    warnings.simplefilter("ignore")
    with open(results_path, "a") as out:
        for case in cases:
            out.write(json.dumps({"start": case.name}) + "\n")
            out.flush()
            out.write(json.dumps(dataclasses.asdict(run_case(case, target))) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

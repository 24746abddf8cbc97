"""A stand-in conformance worker for the runner's crash tests: `python fake_worker.py CASES RESULTS TARGET`.

A case named *_crash aborts the process (as a crashing kernel would), *_hang sleeps forever,
any other case "passes". Same line protocol as iree_py/conformance/worker.py.
"""
import json
import os
import pickle
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # unpickling needs iree_py.conformance.cases

cases = pickle.loads(Path(sys.argv[1]).read_bytes())
with open(sys.argv[2], "a") as out:
    for case in cases:
        out.write(json.dumps({"start": case.name}) + "\n")
        out.flush()
        if case.name.endswith("_crash"):
            os.abort()
        if case.name.endswith("_hang"):
            time.sleep(3600)
        out.write(json.dumps({"name": case.name, "op": case.op, "status": "passed", "detail": ""}) + "\n")
        out.flush()

"""What fails on the real models, and where: compile each catalog model, run its cases against the
reference, and print one block per model and target: compile time and module size, or the error (its
first line; for an internal crash, which is anything but a CompileError, the last frames of the
traceback), then each case's result and run time. The issue-14 work list is made from this output.

    python tests/real_models/survey.py [--targets host,arm64] [--models NAME,...] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from model_runs import compare_runs, compiled, iree_call, output_steps, reference_call, run_case  # noqa: E402
from wheel_models import MODELS  # noqa: E402

from iree_py.errors import CompileError  # noqa: E402


def describe_error(error: BaseException) -> dict:
    text = str(error).strip()
    info = {"class": type(error).__name__, "first_line": text.splitlines()[0] if text else ""}
    if not isinstance(error, CompileError):  # an internal crash: where it happened matters
        frames = traceback.extract_tb(error.__traceback__)[-4:]
        info["frames"] = [f"{Path(f.filename).name}:{f.lineno} {f.name}: {f.line}" for f in frames]
    return info


def survey_one(model, target: str) -> dict:
    module = compiled(model, target)
    row: dict = {"model": model.name, "target": target, "compile_s": round(module.seconds, 2)}
    if module.error is not None:
        row["error"] = describe_error(module.error)
        return row
    row["module_bytes"] = len(module.data)
    steps = output_steps(model)
    row["cases"] = []
    for case in model.cases:
        entry: dict = {"case": case.name}
        try:
            expected = run_case(reference_call(model), case)
            start = time.perf_counter()
            actual = run_case(iree_call(module.data, target), case)
            entry["run_s"] = round(time.perf_counter() - start, 2)
            entry["problems"] = compare_runs(actual, expected, steps, model.loose)
        except Exception as e:  # noqa: BLE001 - a run-time failure is a result here
            entry["error"] = describe_error(e)
        row["cases"].append(entry)
    return row


def print_row(row: dict) -> None:
    head = f"## {row['model']} [{row['target']}] compile {row['compile_s']} s"
    if "error" in row:
        err = row["error"]
        print(f"{head}: FAILS TO COMPILE\n   {err['class']}: {err['first_line']}")
        for frame in err.get("frames", []):
            print(f"     {frame}")
        return
    print(f"{head}, module {row['module_bytes'] / 1e6:.2f} MB")
    for entry in row["cases"]:
        if "error" in entry:
            print(f"   {entry['case']}: RUN ERROR {entry['error']['class']}: {entry['error']['first_line']}")
            for frame in entry["error"].get("frames", []):
                print(f"     {frame}")
        elif entry["problems"]:
            print(f"   {entry['case']}: MISMATCH ({entry['run_s']} s): " + "; ".join(entry["problems"][:4]))
        else:
            print(f"   {entry['case']}: ok ({entry['run_s']} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="host")
    parser.add_argument("--models", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    wanted = set(filter(None, args.models.split(",")))
    rows = []
    for model in MODELS:
        if wanted and model.name not in wanted:
            continue
        for target in args.targets.split(","):
            row = survey_one(model, target)
            print_row(row)
            sys.stdout.flush()
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

"""`python -m iree_py.conformance` / `iree-py conformance`: run the ONNX backend node tests.

    python -m iree_py.conformance --target host --out report.md --expected tests/conformance/expected_pass_host.txt

Exit status: 0, or 1 when --expected is given and a case in that list no longer passes.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from iree_py.conformance.runner import DEFAULT_CASE_TIMEOUT, DEFAULT_CHUNK, run_case, run_cases
from iree_py.conformance.status import PASSED, CaseResult
from iree_py.resources import checkout_root


def default_expected(target: str) -> Path:
    """A checkout's tests/conformance/expected_pass_TARGET.txt; for an installed package, which has
    no tests, that file name in the current directory."""
    checkout = checkout_root()
    folder = checkout / "tests" / "conformance" if checkout is not None else Path.cwd()
    return folder / f"expected_pass_{target}.txt"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from iree_py.targets import available_targets
    parser.add_argument("--target", default="host", choices=available_targets())
    parser.add_argument("--filter", default="", metavar="SUBSTRING", help="only the cases whose name contains this")
    parser.add_argument("--out", metavar="FILE", help="write the markdown table of every case here")
    parser.add_argument("--expected", metavar="FILE", nargs="?", const="",
                        help="the expected-pass list (default tests/conformance/expected_pass_TARGET.txt in a "
                             "checkout, ./expected_pass_TARGET.txt for an installed iree-py); "
                             "exit 1 when one of its cases no longer passes")
    parser.add_argument("--only-expected", action="store_true", help="run only the cases in the expected-pass list")
    parser.add_argument("--update-expected", action="store_true",
                        help="rewrite the expected-pass list with the cases that pass now")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once (default 1)")
    parser.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, help="cases per worker process")
    parser.add_argument("--case-timeout", type=float, default=DEFAULT_CASE_TIMEOUT,
                        help="seconds one case may take before its worker is killed")
    parser.add_argument("--in-process", action="store_true",
                        help="run the cases in this process (no protection from a crashing kernel; for debugging)")


def run(args: argparse.Namespace) -> int:
    from iree_py.conformance.cases import collect_cases
    from iree_py.conformance.expected import read_expected, regressions, updated_expected, write_expected
    from iree_py.conformance.report import markdown_report, summary_text

    wants_list = args.expected is not None or args.only_expected or args.update_expected
    expected_path = Path(args.expected) if args.expected else default_expected(args.target)
    expected = read_expected(expected_path) if wants_list and expected_path.exists() else []
    if (args.only_expected or args.expected is not None) and not expected_path.exists():
        print(f"conformance: expected-pass list {expected_path} does not exist "
              f"(create it with --update-expected)", file=sys.stderr)
        return 2

    begin = time.monotonic()
    cases = collect_cases(args.filter)
    known = {c.name for c in cases}
    if args.only_expected:
        wanted = set(expected)
        cases = [c for c in cases if c.name in wanted]
    print(f"conformance: {len(cases)} cases on target {args.target}", file=sys.stderr)
    progress = _Progress(sys.stderr)
    if args.in_process:
        results = []
        for i, case in enumerate(cases):
            results.append(run_case(case, args.target))
            progress(results[-1], i + 1, len(cases))
    else:
        results = run_cases(cases, args.target, jobs=args.jobs, chunk_size=args.chunk_size,
                            case_timeout=args.case_timeout, progress=progress)
    progress.finish()
    seconds = time.monotonic() - begin
    print(f"conformance ({args.target}): {summary_text(results)}; {seconds:.0f} s")

    if args.out:
        import onnx
        header = f"onnx {onnx.__version__}; filter {args.filter!r}; {len(results)} cases; {seconds:.0f} s"
        Path(args.out).write_text(markdown_report(results, args.target, header))
        print(f"conformance: table written to {args.out}")
    if args.update_expected:
        names = updated_expected(expected, results)
        write_expected(expected_path, names)
        print(f"conformance: {expected_path} now lists {len(names)} cases")
        return 0
    if args.expected is None:
        return 0
    failed = regressions(expected, results, known, args.filter)
    newly = sorted(r.name for r in results if r.status == PASSED and r.name not in set(expected))
    if newly:
        print(f"conformance: {len(newly)} cases pass that {expected_path.name} does not list "
              f"(add them with --update-expected): {', '.join(newly[:20])}{' ...' if len(newly) > 20 else ''}")
    if failed:
        print(f"conformance: {len(failed)} regressions against {expected_path}:", file=sys.stderr)
        for line in failed:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"conformance: no regressions against {expected_path.name}")
    return 0


class _Progress:
    """One progress line, rewritten in place on a terminal; a line per 100 cases otherwise."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.passed = 0
        self.tty = stream.isatty()

    def __call__(self, result: CaseResult, done: int, total: int) -> None:
        self.passed += result.status == PASSED
        text = f"[{done}/{total}] passed {self.passed}  {result.name}: {result.status}"
        if self.tty:
            self.stream.write("\r\033[K" + text[:120])
            self.stream.flush()
        elif done % 100 == 0 or done == total:
            self.stream.write(text + "\n")

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m iree_py.conformance",
                                     description="Run the ONNX backend node tests through iree-py.")
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

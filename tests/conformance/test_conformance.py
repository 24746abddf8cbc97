"""The ONNX backend node tests through iree-py (iree_py/conformance): no regression against
expected_pass_host.txt and expected_pass_arm64.txt (under qemu-aarch64), plus the comparison, the
classification and the crash-safe runner."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from iree_py.conformance.cases import ConformanceCase, to_value
from iree_py.conformance.compare import compare_outputs
from iree_py.conformance.expected import read_expected, regressions, updated_expected
from iree_py.conformance.runner import run_case, run_cases
from iree_py.conformance.status import (COMPILE_ERROR, PASSED, RUNTIME_ERROR, UNSUPPORTED, WRONG_RESULT,
                                        CaseResult, classify_compile_error)

HERE = Path(__file__).resolve().parent
EXPECTED_HOST = HERE / "expected_pass_host.txt"
EXPECTED = {"host": EXPECTED_HOST, "arm64": HERE / "expected_pass_arm64.txt",
            "vulkan": HERE / "expected_pass_vulkan.txt"}
# The CPU targets run every edge op; the Vulkan backend builds a subset of kernel kinds and dtypes
# (docs/vulkan.md), so its list is held to no regression only.
CPU_TARGETS = ("arm64", "host")
FAKE_WORKER = [sys.executable, str(HERE / "fake_worker.py")]

F32 = np.float32


# --- the suite itself: every case on a target's expected list still passes there ------------------
def expected_cases(target: str) -> list[ConformanceCase]:
    from iree_py.conformance.cases import collect_cases
    names = set(read_expected(EXPECTED[target]))
    cases = [c for c in collect_cases() if c.name in names]
    missing = sorted(names - {c.name for c in cases})
    assert not missing, f"{EXPECTED[target].name} names cases the installed onnx does not have: {missing}"
    return cases


@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_expected_list_is_sorted_and_unique(target: str):
    names = read_expected(EXPECTED[target])
    assert names, f"{EXPECTED[target].name} is empty"
    assert names == sorted(set(names))


@pytest.mark.parametrize("target", CPU_TARGETS)
def test_every_edge_op_case_is_expected_to_pass(target: str):
    from iree_py.conformance.cases import collect_cases
    from iree_py.conformance.edge_ops import is_edge_case
    edge = [c for c in collect_cases() if is_edge_case(c.name, c.op)]
    assert len({c.op for c in edge}) > 100, "the edge-op list matched too few of the installed onnx's ops"
    missing = sorted(c.name for c in edge if c.name not in set(read_expected(EXPECTED[target])))
    assert not missing, f"{len(missing)} of {len(edge)} edge-op cases are not on {EXPECTED[target].name}: {missing}"


# Under qemu-aarch64 every case costs a cross compile and an emulated run: the default run takes
# every ARM64_SAMPLE-th expected case (the op cases of tests/e2e/test_ops.py run on arm64 besides),
# and --heavy the rest. Vulkan (lavapipe: Vulkan emulated on the CPU, ~100 s for its whole list on 2
# busy cores) the same way: every SAMPLE-th case by default, the rest with --heavy.
ARM64_SAMPLE = 3
PARTS = [pytest.param("host", "all", id="host"), pytest.param("arm64", "sample", id="arm64-sample"),
         pytest.param("arm64", "rest", id="arm64-rest", marks=pytest.mark.heavy),
         pytest.param("vulkan", "sample", id="vulkan-sample"),
         pytest.param("vulkan", "rest", id="vulkan-rest", marks=pytest.mark.heavy)]


def part_of(cases: list[ConformanceCase], part: str) -> list[ConformanceCase]:
    if part == "all":
        return cases
    return [c for i, c in enumerate(cases) if (i % ARM64_SAMPLE == 0) == (part == "sample")]


@pytest.mark.parametrize("target,part", PARTS)
def test_no_regression(target: str, part: str):
    results = run_cases(part_of(expected_cases(target), part), target, jobs=2)
    failed = [f"{r.name}: {r.status}: {r.detail}" for r in results if r.status != PASSED]
    assert not failed, f"{len(failed)} of {len(results)} expected cases no longer pass:\n" + "\n".join(failed)


# --- compare: onnx's assert_similar_outputs rules ---------------------------------------------------
def test_compare_within_tolerances_passes():
    e = np.array([1.0, 100.0, 0.0], F32)
    a = e + np.array([1e-3 - 1e-6, 0.09, 5e-8], F32)  # atol 1e-7 + rtol 1e-3 * |e|
    assert compare_outputs([a], [e], rtol=1e-3, atol=1e-7) is None


def test_compare_outside_tolerance_fails_and_names_the_element():
    e = np.array([[1.0, 2.0], [3.0, 4.0]], F32)
    a = e.copy()
    a[1, 0] = 3.01
    reason = compare_outputs([a], [e], rtol=1e-3, atol=1e-7)
    assert reason is not None and "output 0" in reason and "1 of 4" in reason and "(1, 0)" in reason


def test_compare_atol_alone_covers_values_near_zero():
    e = np.zeros(3, F32)
    assert compare_outputs([e + F32(1e-6)], [e], rtol=1e-3, atol=1e-5) is None
    assert compare_outputs([e + F32(1e-4)], [e], rtol=1e-3, atol=1e-5) is not None


def test_compare_nan_matches_only_nan():
    e = np.array([np.nan, 1.0], F32)
    assert compare_outputs([e.copy()], [e], 1e-3, 1e-7) is None
    assert compare_outputs([np.array([0.0, 1.0], F32)], [e], 1e-3, 1e-7) is not None
    assert compare_outputs([np.array([np.nan, np.nan], F32)], [e], 1e-3, 1e-7) is not None


def test_compare_infinity_matches_only_the_same_infinity():
    e = np.array([np.inf, -np.inf], F32)
    assert compare_outputs([e.copy()], [e], 1e-3, 1e-7) is None
    assert compare_outputs([-e], [e], 1e-3, 1e-7) is not None
    assert compare_outputs([np.array([3e38, -np.inf], F32)], [e], 1e-3, math.inf) is not None


def test_compare_shape_dtype_and_count_mismatches_fail():
    e = np.ones((2, 3), F32)
    assert "shape" in compare_outputs([np.ones((3, 2), F32)], [e], 1e-3, 1e-7)
    assert "shape" in compare_outputs([np.ones((1, 2, 3), F32)], [e], 1e-3, 1e-7)
    assert "dtype float64, expected float32" in compare_outputs([np.ones((2, 3))], [e], 1e-3, 1e-7)
    assert "1 outputs, expected 2" in compare_outputs([e], [e, e], 1e-3, 1e-7)
    assert compare_outputs([e], [[e]], 1e-3, 1e-7) is not None  # tensor where a sequence is expected


def test_compare_integers_and_booleans_exactly_at_zero_tolerance():
    assert compare_outputs([np.array([1, 2], np.int64)], [np.array([1, 2], np.int64)], 0, 0) is None
    assert compare_outputs([np.array([1, 3], np.int64)], [np.array([1, 2], np.int64)], 0, 0) is not None
    assert compare_outputs([np.array([True])], [np.array([False])], 0, 0) is not None


def test_compare_strings_exactly():
    e = np.array(["a", "b"], dtype=object)
    assert compare_outputs([e.copy()], [e], 0, 0) is None
    assert compare_outputs([np.array(["a", "c"], dtype=object)], [e], 0, 0) is not None


def test_data_sets_are_normalized_to_numpy():
    proto = onnx.numpy_helper.from_array(np.arange(3, dtype=F32))
    assert np.array_equal(to_value(proto), np.arange(3, dtype=F32))
    assert to_value(F32(2.5)).shape == ()
    assert isinstance(to_value([proto]), list) and to_value(None) is None


# --- classification of one case ------------------------------------------------------------------
def _case(name: str, nodes, inputs, outputs, elem_in=TensorProto.FLOAT, opset: int = 13,
          in_shape=(2, 3), out_names=("y",)) -> ConformanceCase:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info(f"x{i}", elem_in, list(in_shape)) for i in range(len(inputs))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in out_names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return ConformanceCase(name, nodes[0].op_type, model.SerializeToString(), inputs, outputs, 1e-3, 1e-7)


X = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], F32)


def test_case_passes():
    r = run_case(_case("relu", [helper.make_node("Relu", ["x0"], ["y"])], [X], [np.maximum(X, 0)]))
    assert (r.status, r.detail) == (PASSED, "")


def test_case_with_a_wrong_expected_output_is_a_wrong_result():
    r = run_case(_case("relu", [helper.make_node("Relu", ["x0"], ["y"])], [X], [X]))
    assert r.status == WRONG_RESULT and "elements differ" in r.detail


def test_unknown_op_is_unsupported_and_names_the_op():
    r = run_case(_case("nope", [helper.make_node("NoSuchOpAnywhere", ["x0"], ["y"])], [X], [X]))
    assert r.status == UNSUPPORTED and "NoSuchOpAnywhere" in r.detail
    assert r.blocking_op == "NoSuchOpAnywhere"


def test_unsupported_element_type_is_unsupported():
    r = run_case(_case("f8", [helper.make_node("Relu", ["x0"], ["y"])], [X], [X], elem_in=TensorProto.COMPLEX64))
    assert r.status == UNSUPPORTED and "COMPLEX64" in r.detail


def test_sequence_of_strings_is_unsupported_without_compiling():  # numeric sequences run (docs/sequences.md)
    r = run_case(_case("seq", [helper.make_node("Relu", ["x0"], ["y"])], [[np.array(["a", "b"])]], [X]))
    assert r.status == UNSUPPORTED and "sequence of strings" in r.detail


def test_malformed_model_is_a_compile_error_with_the_reason():
    r = run_case(_case("orphan", [helper.make_node("Relu", ["x0"], ["y"])], [X], [X], out_names=("z",)))
    assert r.status == COMPILE_ERROR and "'z' is not computed by any node" in r.detail


def test_bad_call_is_a_runtime_error():
    r = run_case(_case("shape", [helper.make_node("Relu", ["x0"], ["y"])], [X.T.copy()], [X]))
    assert r.status == RUNTIME_ERROR and "shape" in r.detail


def test_compile_error_messages_are_classified():
    assert classify_compile_error("node 'a' (op Foo, opset 13): op not supported by iree-py") == UNSUPPORTED
    assert classify_compile_error("node 'a' (Add): unsupported dtype i8 of %x (iree-py computes in f32 only)") == UNSUPPORTED
    assert classify_compile_error("node 'r' (op Reshape, opset 13): shape (input 1, 's') must be a constant; "
                                  "iree-py needs static shapes") == UNSUPPORTED
    assert classify_compile_error("<bytes>: graph output 'z' is not computed by any node") == COMPILE_ERROR
    assert classify_compile_error("internal error: KeyError: 'x'") == COMPILE_ERROR


def test_blocking_op_comes_from_the_message_else_the_tested_op():
    assert CaseResult("t", "Softmax", UNSUPPORTED, "node 'n' (op Exp, opset 13): op not supported").blocking_op == "Exp"
    assert CaseResult("t", "Add", UNSUPPORTED, "node 'Add_0' (Add): unsupported dtype i8").blocking_op == "Add"
    assert CaseResult("t", "Relu", WRONG_RESULT, "output 0: 1 of 6 elements differ").blocking_op == "Relu"


# --- the runner survives crashing and hanging workers ----------------------------------------------
def _named(name: str) -> ConformanceCase:
    return ConformanceCase(name, "Fake", b"", [], [], 0.0, 0.0)


def test_a_crashing_case_is_recorded_and_the_rest_of_its_chunk_still_runs():
    cases = [_named(n) for n in ("test_a", "test_b_crash", "test_c", "test_d", "test_e_crash", "test_f")]
    results = run_cases(cases, chunk_size=4, worker_command=FAKE_WORKER)
    assert [r.name for r in results] == [c.name for c in cases]
    status = {r.name: r.status for r in results}
    assert status == {"test_a": PASSED, "test_b_crash": RUNTIME_ERROR, "test_c": PASSED, "test_d": PASSED,
                      "test_e_crash": RUNTIME_ERROR, "test_f": PASSED}
    assert "crashed (killed by signal 6)" in results[1].detail


def test_a_hanging_case_times_out():
    results = run_cases([_named("test_a_hang"), _named("test_b")], case_timeout=1.0, worker_command=FAKE_WORKER)
    assert [(r.name, r.status) for r in results] == [("test_a_hang", RUNTIME_ERROR), ("test_b", PASSED)]
    assert "timed out" in results[0].detail


def test_a_worker_that_cannot_start_fails_its_cases_without_looping():
    results = run_cases([_named("test_a")], worker_command=[sys.executable, "-c", "raise SystemExit(3)"])
    assert results[0].status == RUNTIME_ERROR and "exited with code 3" in results[0].detail


# --- the expected-pass list ----------------------------------------------------------------------
def test_regressions_name_failed_and_vanished_cases():
    results = [CaseResult("test_a", "A", PASSED), CaseResult("test_b", "B", WRONG_RESULT, "output 0: differ")]
    found = regressions(["test_a", "test_b", "test_gone"], results, known={"test_a", "test_b"})
    assert found == ["test_b: wrong result: output 0: differ", "test_gone: no such case in the installed onnx"]
    assert regressions(["test_gone"], [], known=set(), name_filter="test_a") == []  # filtered out, not gone


def test_update_keeps_cases_that_did_not_run():
    results = [CaseResult("test_b", "B", PASSED), CaseResult("test_c", "C", UNSUPPORTED)]
    assert updated_expected(["test_a", "test_c"], results) == ["test_a", "test_b"]


def test_cli_exits_1_on_a_regression(tmp_path, capsys):
    from iree_py.cli.main import main
    expected = tmp_path / "expected.txt"
    expected.write_text("test_relu\ntest_relu_no_such_case\n")
    rc = main(["conformance", "--filter", "test_relu", "--expected", str(expected), "--only-expected",
               "--out", str(tmp_path / "table.md")])
    captured = capsys.readouterr()
    assert rc == 1
    assert "test_relu_no_such_case: no such case" in captured.err
    assert "1 / 1 passed (100.0%)" in captured.out
    assert "| test_relu | Relu | passed |  |" in (tmp_path / "table.md").read_text()


# --- the report -------------------------------------------------------------------------------------
def test_report_counts_statuses_ops_and_reasons():
    from iree_py.conformance.report import markdown_report, pass_rate
    results = [CaseResult("test_a", "Relu", PASSED),
               CaseResult("test_b", "Exp", UNSUPPORTED, "node 'e' (op Exp, opset 13): op not supported by iree-py"),
               CaseResult("test_c", "Exp", UNSUPPORTED, "<bytes>: input 'x': unsupported element type UINT64"),
               CaseResult("test_d", "Add", WRONG_RESULT, "a | b")]
    text = markdown_report(results, "host")
    assert pass_rate(results) == "1 / 4 passed (25.0%)"
    assert "| unsupported | 2 |" in text and "| wrong result | 1 |" in text
    assert "| Exp | 2 | 0 | 2 | 0 | 0 |" in text
    assert "| op not supported | 1 |" in text and "| element type / dtype | 1 |" in text
    assert "| test_d | Add | wrong result | a \\| b |" in text

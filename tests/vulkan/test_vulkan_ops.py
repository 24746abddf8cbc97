"""The op cases of tests/e2e/test_ops.py on the Vulkan target: each either matches the reference
within the same tolerance, or is refused at compile time with an error naming the node and the
kernel kind (never a wrong answer, never a CPU fallback). REFUSED lists the cases of the second
kind; building a kernel for one makes its test fail until it leaves the list."""
import pytest

from harness import check_against_reference
from iree_py.errors import CompileError
from test_ops import CASES

REFUSED = {
    "gru_reverse_linear_before_reset",
    "lstm_bidirectional_seq_lens",
    "qlinearconv_u8_chain", "qlinearmatmul_i8_chain", "resize_linear_half_pixel",
}


def test_refused_cases_exist():
    assert REFUSED <= set(CASES)


@pytest.mark.parametrize("case", sorted(set(CASES) - REFUSED))
def test_op_matches_reference_on_vulkan(case: str):
    check_against_reference(CASES[case], "vulkan")


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_op_is_refused_naming_node_and_kind(case: str):
    with pytest.raises(CompileError, match=r"node '.*' \(op \w+\): target vulkan \(backend spirv\) cannot build "
                                           r"kernel kind '\w+': "):
        check_against_reference(CASES[case], "vulkan")

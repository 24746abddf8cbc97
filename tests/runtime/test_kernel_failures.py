"""KernelSources turns the C runtime's report of a failed kernel into the model's terms, and leaves
every other error as the runtime wrote it (the end-to-end runs: tests/e2e/test_index_errors.py)."""
from __future__ import annotations

from iree_py.codegen.kernel_abi import KERNEL_STATUSES
from iree_py.module import model as m
from iree_py.runtime.kernel_failures import KernelSources

REPORT = "main: kernel '{entry}' failed with code {code} (what C says) at workgroup (1, 0, 0)"


def _module(debug: list[m.EntryPointDebug] | None) -> m.Module:
    points = [m.EntryPoint(name, 2, 0, [4, 4]) for name in ("k0_gather", "k1_conv", "k2_relu")]
    return m.Module("model", [], executables=[m.Executable("x86_64", points, b"")], debug_info=debug)


SOURCES = KernelSources.of(_module([m.EntryPointDebug(0, 0, ["Gather_3", "other_gather"], ["Gather", "Gather"]),
                                    m.EntryPointDebug(0, 1, ["conv", "relu"], ["Conv", "Relu"]),
                                    m.EntryPointDebug(0, 2, ["old_node"])]))  # written before source_ops


def test_every_status_of_the_table_names_the_node_and_what_it_means() -> None:
    for status in KERNEL_STATUSES[1:]:
        report = REPORT.format(entry="k1_conv", code=status.code)
        assert SOURCES.explain(report) == (f"nodes 'conv' (op Conv), 'relu' (op Relu): {status.meaning} "
                                           f"(kernel k1_conv, code {status.code})")


def test_one_node_and_a_node_without_its_op() -> None:
    report = REPORT.format(entry="k2_relu", code=3)
    assert SOURCES.explain(report) == "node 'old_node': an index is outside the range of its axis (kernel k2_relu, code 3)"
    shared = SOURCES.explain(REPORT.format(entry="k0_gather", code=3))
    assert shared is not None and shared.startswith("nodes 'Gather_3' (op Gather), 'other_gather' (op Gather): ")


def test_what_it_cannot_name_is_left_alone() -> None:
    assert SOURCES.explain(REPORT.format(entry="k0_gather", code=77)) is None  # not in the table
    assert SOURCES.explain(REPORT.format(entry="k0_gather", code=0)) is None
    assert SOURCES.explain(REPORT.format(entry="k9_pad", code=3)) is None  # no debug info for it
    assert SOURCES.explain("main: input 0 'x' has dtype i32") is None
    stripped = KernelSources.of(_module(None))
    assert stripped.explain(REPORT.format(entry="k0_gather", code=3)) is None
    broken = KernelSources.of(_module([m.EntryPointDebug(3, 0, ["x"]), m.EntryPointDebug(0, 7, ["y"])]))
    assert broken.entries == {}  # debug info pointing past the executables is ignored, not trusted

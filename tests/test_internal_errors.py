"""No internal exception reaches the user as a traceback: a bug anywhere in compile becomes an
InternalCompilerError naming where it happened (the node and its op and opset, the pass, the
kernel and its source nodes); the CLI prints that one line, exits with INTERNAL_ERROR_EXIT_CODE, and
shows the traceback only with --verbose. run, dump and benchmark do the same."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import iree_py
from iree_py.frontends.onnx import registry
from iree_py.cli.main import main
from iree_py.errors import INTERNAL_ERROR_EXIT_CODE, CompileError, InternalCompilerError


def relu_model(path: Path) -> Path:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="my_relu")], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def broken(*args, **kwargs):
    raise KeyError("a bug")


def test_a_converter_bug_names_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(registry.CONVERTERS, "Relu", broken)
    with pytest.raises(InternalCompilerError, match=r"^internal compiler error at node 'my_relu' \(op Relu, opset 13\): "
                                                    r"KeyError: 'a bug'$"):
        iree_py.compile(relu_model(tmp_path / "m.onnx"))


def test_a_pass_bug_names_the_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from iree_py.passes.fold_constants import FoldConstants
    monkeypatch.setattr(FoldConstants, "run", broken)
    with pytest.raises(InternalCompilerError, match=r"internal compiler error in pass fold-constants: KeyError"):
        iree_py.compile(relu_model(tmp_path / "m.onnx"))


def test_a_kernel_builder_bug_names_the_kernel_and_its_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import iree_py.codegen.llvm.module_builder as module_builder
    monkeypatch.setattr(module_builder, "kernel_builder", lambda spec: broken)
    with pytest.raises(InternalCompilerError, match=r"while generating kernel k0_\w+, elementwise \(nodes 'my_relu'\), "
                                                    r"for host: KeyError"):
        iree_py.compile(relu_model(tmp_path / "m.onnx"))


def test_the_cli_prints_one_line_and_exits_with_its_own_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture):
    monkeypatch.setitem(registry.CONVERTERS, "Relu", broken)
    model = relu_model(tmp_path / "m.onnx")
    assert main(["compile", str(model), "-o", str(tmp_path / "m.vmfb")]) == INTERNAL_ERROR_EXIT_CODE
    err = capsys.readouterr().err
    assert "internal compiler error at node 'my_relu'" in err and "--verbose" in err and "Traceback" not in err
    assert main(["compile", str(model), "-o", str(tmp_path / "m.vmfb"), "--verbose"]) == INTERNAL_ERROR_EXIT_CODE
    assert "Traceback" in capsys.readouterr().err


def test_run_reports_a_bug_outside_the_compiler_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture):
    module = tmp_path / "m.vmfb"
    module.write_bytes(iree_py.compile(relu_model(tmp_path / "m.onnx")))
    np.save(tmp_path / "x.npy", np.ones((2, 3), np.float32))
    import iree_py.runtime.module as runtime_module
    monkeypatch.setattr(runtime_module, "load", broken)
    code = main(["run", str(module), f"--input=@{tmp_path / 'x.npy'}"])
    assert code == INTERNAL_ERROR_EXIT_CODE
    assert "internal compiler error in iree-py run: KeyError" in capsys.readouterr().err


def test_an_unknown_target_is_an_error_of_ours():
    with pytest.raises(CompileError, match=r"unknown target 'no-such-board'; known targets: .*host"):
        iree_py.compile(b"", target="no-such-board")

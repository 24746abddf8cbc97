"""The onnx package's light zoo architectures (tests/e2e/real_models.py) on lavapipe against
onnxruntime. lavapipe runs the shaders on the CPU: squeezenet and shufflenet take seconds and run
by default; resnet50, densenet121 and inception_v2 take 15-20 s each and run with --heavy.
The rest are refused at compile time (LRN: alexnet, zfnet512, inception_v1) or at run time (vgg19:
a 411 MB fully-connected weight over the target's 128 MiB storage-buffer range), each checked to
fail saying so."""
import pytest

from harness import assert_close, run_iree, run_onnxruntime
from iree_py.errors import CompileError, IreePyError
from real_models import data_input, light_model, with_logits

MATCH = {"squeezenet": [], "shufflenet": [], "resnet50": [pytest.mark.heavy],
         "densenet121": [pytest.mark.heavy], "inception_v2": [pytest.mark.heavy]}
NEEDS_LRN = ["bvlc_alexnet", "inception_v1", "zfnet512"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=m, id=n) for n, m in MATCH.items()])
def test_zoo_model_matches_onnxruntime_on_vulkan(name: str):
    m = with_logits(light_model(name))
    x = data_input(m)
    assert_close(run_iree(m, [x], "vulkan"), run_onnxruntime(m, [x]))


@pytest.mark.parametrize("name", NEEDS_LRN)
def test_zoo_model_needing_lrn_is_refused_naming_it(name: str):
    with pytest.raises(CompileError, match=r"\(op LRN\): target vulkan \(backend spirv\) cannot build kernel kind 'lrn'"):
        run_iree(with_logits(light_model(name)), [data_input(light_model(name))], "vulkan")


@pytest.mark.heavy
def test_vgg19_weight_over_the_storage_buffer_range_fails_saying_so():
    m = with_logits(light_model("vgg19"))
    with pytest.raises(IreePyError, match="more than the device's maxStorageBufferRange"):
        run_iree(m, [data_input(m)], "vulkan")

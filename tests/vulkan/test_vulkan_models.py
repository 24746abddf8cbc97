"""The onnx package's light zoo architectures (tests/e2e/real_models.py) on lavapipe against
onnxruntime. lavapipe runs the shaders on the CPU: squeezenet and shufflenet take seconds and run
by default, inception_v1 (LRN) ~6 s; resnet50, densenet121 and inception_v2 take 15-20 s each and
run with --heavy. alexnet, zfnet512 and vgg19 fail at run time: a fully-connected weight (151 MB,
411 MB) over the target's 128 MiB storage-buffer range (heavy: checked to fail saying so)."""
import pytest

from harness import assert_close, run_iree, run_onnxruntime
from iree_py.errors import IreePyError
from real_models import data_input, light_model, with_logits

MATCH = {"squeezenet": [], "shufflenet": [], "inception_v1": [], "resnet50": [pytest.mark.heavy],
         "densenet121": [pytest.mark.heavy], "inception_v2": [pytest.mark.heavy]}
TOO_BIG = ["bvlc_alexnet", "vgg19", "zfnet512"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=m, id=n) for n, m in MATCH.items()])
def test_zoo_model_matches_onnxruntime_on_vulkan(name: str):
    m = with_logits(light_model(name))
    x = data_input(m)
    assert_close(run_iree(m, [x], "vulkan"), run_onnxruntime(m, [x]))


@pytest.mark.heavy
@pytest.mark.parametrize("name", TOO_BIG)
def test_zoo_model_over_the_storage_buffer_range_fails_saying_so(name: str):
    m = with_logits(light_model(name))
    with pytest.raises(IreePyError, match="more than the device's maxStorageBufferRange"):
        run_iree(m, [data_input(m)], "vulkan")

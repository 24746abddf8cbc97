"""The engines `iree-py benchmark --compare` runs beside a module: onnxruntime for an ONNX model,
LiteRT (the TFLite interpreter) for a .tflite one, on the same inputs and thread count."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from iree_py.errors import IreePyError

ENGINES = {"onnxruntime": ".onnx", "litert": ".tflite"}


def parse_compare(text: str) -> tuple[str, Path]:
    """`onnxruntime:model.onnx`, `litert:model.tflite`, or just the model (the engine from its suffix)."""
    engine, sep, path = text.partition(":")
    if not sep or engine not in ENGINES:
        engine, path = "", text
    model = Path(path)
    if not engine:
        engine = next((e for e, suffix in ENGINES.items() if model.suffix == suffix), "")
        if not engine:
            raise IreePyError(f"--compare={text}: expected onnxruntime:MODEL.onnx, litert:MODEL.tflite, or a model "
                              f"whose suffix says which (.onnx, .tflite)")
    if not model.exists():
        raise IreePyError(f"--compare={text}: {model} does not exist (the peer runs the source model)")
    return engine, model


def peer_runner(engine: str, model: Path, inputs: list[np.ndarray], threads: int = 1) -> Callable[[], object]:
    """A function that runs `model` once on `inputs` in `engine`."""
    try:
        if engine == "onnxruntime":
            import onnxruntime as ort
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
            names = [i.name for i in session.get_inputs()]
            if len(names) != len(inputs):
                raise IreePyError(f"{model} takes {len(names)} inputs ({', '.join(names)}); got {len(inputs)}")
            feed = dict(zip(names, inputs))
            return lambda: session.run(None, feed)
        from ai_edge_litert.interpreter import Interpreter
        interpreter = Interpreter(model_path=str(model), num_threads=threads)
        interpreter.allocate_tensors()
        details = interpreter.get_input_details()
        if len(details) != len(inputs):
            raise IreePyError(f"{model} takes {len(details)} inputs; got {len(inputs)}")

        def run() -> None:
            for d, x in zip(details, inputs):
                interpreter.set_tensor(d["index"], x)
            interpreter.invoke()
        return run
    except ImportError as e:
        package = "onnxruntime" if engine == "onnxruntime" else "ai-edge-litert"
        raise IreePyError(f"--compare needs {engine}: pip install {package} ({e})") from None
    except IreePyError:
        raise
    except Exception as e:  # the peer's own refusal of the model or the inputs
        raise IreePyError(f"{engine} cannot run {model}: {e}") from None

"""TFLite frontend: .tflite flatbuffers (schema version 3) -> graph IR (float models)."""
from iree_py.frontends.tflite.importer import import_tflite
from iree_py.frontends.tflite.reader import is_tflite

__all__ = ["import_tflite", "is_tflite"]

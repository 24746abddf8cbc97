"""The ONNX backend node tests, run through iree-py: `python -m iree_py.conformance` (docs/conformance.md)."""

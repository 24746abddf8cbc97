"""`iree_py.load`: a compiled module whose functions take and return numpy arrays."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from iree_py.module import sequence_layout
from iree_py.module.model import Function, Module, TensorSig
from iree_py.module.reader import read_module
from iree_py.errors import IreePyError
from iree_py.runtime.devices import module_image, open_device
from iree_py.runtime.signature import check_inputs, plain_inputs, type_text


def _passes_as_is(args: tuple, plain: list[tuple[np.dtype, tuple[int, ...], tuple[int, ...] | None]] | None) -> bool:
    """Whether every argument is a C-contiguous array of exactly its input's dtype and a shape
    that matches (every dim of a static input; the rank and the fixed axes of a dynamic one)."""
    if plain is None or len(args) != len(plain):
        return False
    for a, (dtype, shape, fixed_axes) in zip(args, plain):
        if type(a) is not np.ndarray or a.dtype != dtype or not a.flags.c_contiguous:
            return False
        if fixed_axes is None:
            if a.shape != shape:
                return False
        else:
            given = a.shape
            if len(given) != len(shape):
                return False
            for i in fixed_axes:
                if given[i] != shape[i]:
                    return False
    return True


class LoadedFunction:
    def __init__(self, loaded: "LoadedModule", fn: Function) -> None:
        self._loaded = loaded
        self.signature = fn
        self.__name__ = fn.name
        # Inputs a plain C-contiguous array of this exact dtype and a matching shape passes as it
        # is, without check_inputs (which says what is wrong with anything else); None where one
        # is a string tensor or a sequence.
        self._plain_inputs = plain_inputs(fn)
        self._unpacks_outputs = any(sequence_layout.is_packed(sig) for sig in fn.outputs)
        # The device's fast path for plain arguments (LocalDevice.fast_caller), if it has one.
        fast_caller = getattr(loaded.device, "fast_caller", None)
        self._fast = fast_caller(fn) if fast_caller is not None and not self._unpacks_outputs else None

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.signature.inputs]

    @property
    def inputs(self) -> list[TensorSig]:
        """Each input's name, dtype, shape and `quantization` ((scale, zero_point) or None)."""
        return list(self.signature.inputs)

    @property
    def outputs(self) -> list[TensorSig]:
        return list(self.signature.outputs)

    @property
    def output_names(self) -> list[str]:
        return [s.name for s in self.signature.outputs]

    def __call__(self, *args: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
        outputs = self.call(*args)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def call(self, *args: Any) -> list[Any]:
        """Always a list, whatever the number of outputs. A sequence input takes a list of arrays,
        an optional one also None; such outputs come back as lists / None (docs/sequences.md)."""
        if self._fast is not None:
            outputs = self._fast(args)
            if outputs is not None:
                return outputs
        fn = self.signature
        exact = _passes_as_is(args, self._plain_inputs)
        outputs = self._loaded.device.call(fn, list(args) if exact else check_inputs(fn, args))
        if not self._unpacks_outputs:
            return outputs
        return [sequence_layout.unpack(sig, o, f"{fn.name}: output '{sig.name}'") if sequence_layout.is_packed(sig)
                else o for o, sig in zip(outputs, fn.outputs)]

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {type_text(s)}" for s in self.signature.inputs)
        outs = ", ".join(f"{s.name}: {type_text(s)}" for s in self.signature.outputs)
        return f"{self.signature.name}({ins}) -> ({outs})"


class LoadedModule:
    def __init__(self, source: bytes | Path, device: str = "local", threads: int | None = None) -> None:
        image = module_image(source)
        self.module: Module = read_module(image.data, payloads=False)  # signatures only, no weight copies
        self.device = open_device(device, image, self.module, threads)
        self.functions = {f.name: LoadedFunction(self, f) for f in self.module.functions if f.exported}
        # module.main is an attribute lookup, not a __getattr__ call (a microsecond a call).
        for name, function in self.functions.items():
            if name.isidentifier() and name not in self.__dict__ and not hasattr(type(self), name):
                self.__dict__[name] = function

    @property
    def peak_bytes(self) -> int:
        """Peak memory of the latest call: the arena plus the most of the pool it used (bytes)."""
        peak = getattr(self.device, "peak_bytes", None)
        if peak is None:
            raise IreePyError(f"device {type(self.device).__name__} does not report peak memory")
        return peak()

    def reset_state(self) -> None:
        """Forget the module state of a stateful model (docs/state.md): the next call runs as the first
        call after load did. Each load has its own state; loading again also starts afresh."""
        reset = getattr(self.device, "reset_state", None)
        if reset is None:
            raise IreePyError(f"device {type(self.device).__name__} cannot reset module state; load the module again")
        reset()

    def __getattr__(self, name: str) -> LoadedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"module has no function {name!r}; it has {sorted(functions)}")


def load(module: bytes | str | Path, device: str = "local", threads: int | None = None) -> LoadedModule:
    """`threads`: threads for each dispatch on this host or under qemu-user (0: one per physical core;
    None: $IREE_PY_THREADS, else 0). Results are the same bits for any count."""
    source = bytes(module) if isinstance(module, (bytes, bytearray, memoryview)) else Path(module)
    if isinstance(source, Path) and not source.exists():
        raise IreePyError(f"module file {source} does not exist")
    return LoadedModule(source, device, threads)

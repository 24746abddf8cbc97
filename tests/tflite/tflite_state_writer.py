"""Stateful TFLite test models: resource tensors, VAR_HANDLE, CALL_ONCE and an init subgraph, on top
of tflite_writer.TfliteModel (tests only).

    m = StatefulModel()
    acc = m.variable(m.main, "acc")                  # VAR_HANDLE in the main subgraph
    m.initialize("acc", np.zeros((1, 4), np.float32))    # the init subgraph ASSIGNs it
    r = m.read(acc, (1, 4))                          # READ_VARIABLE
    ... m.main.op("ADD", [r, x], [y], ...)
    m.assign(acc, y)                                 # ASSIGN_VARIABLE
    data = m.build()                                 # subgraph 0: main (CALL_ONCE first), 1: init
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from tflite_writer import TfliteModel, build_subgraphs

from iree_py.frontends.tflite.schema.CallOnceOptions import CallOnceOptionsT
from iree_py.frontends.tflite.schema.Tensor import TensorT
from iree_py.frontends.tflite.schema.TensorType import TensorType
from iree_py.frontends.tflite.schema.VarHandleOptions import VarHandleOptionsT


@dataclass
class StatefulModel:
    main: TfliteModel = field(default_factory=TfliteModel)
    init: TfliteModel | None = None      # made by the first `initialize`; shares main's buffers

    def variable(self, sub: TfliteModel, shared_name: str, container: str = "") -> int:
        """A resource tensor made by VAR_HANDLE in subgraph `sub`."""
        t = TensorT()
        t.name, t.shape, t.type = f"{shared_name}_handle", [], TensorType.RESOURCE
        sub.tensors.append(t)
        opts = VarHandleOptionsT()
        opts.container, opts.sharedName = container, shared_name
        sub.op("VAR_HANDLE", [], [len(sub.tensors) - 1], opts)
        return len(sub.tensors) - 1

    def initialize(self, shared_name: str, value: np.ndarray) -> None:
        if self.init is None:
            self.init = TfliteModel(buffers=self.main.buffers)
        handle = self.variable(self.init, shared_name)
        self.init.op("ASSIGN_VARIABLE", [handle, self.init.const(f"{shared_name}_initial", value)], [])

    def read(self, handle: int, shape: tuple[int, ...], dtype: type = np.float32, name: str = "") -> int:
        out = self.main.tensor(name or f"{self.main.tensors[handle].name}_read{len(self.main.ops)}", shape, dtype)
        self.main.op("READ_VARIABLE", [handle], [out])
        return out

    def assign(self, handle: int, value: int) -> None:
        self.main.op("ASSIGN_VARIABLE", [handle, value], [])

    def build(self) -> bytes:
        subs = [self.main] + ([self.init] if self.init is not None else [])
        main_ops = list(self.main.ops)
        if self.init is not None:  # CALL_ONCE first, as TF's exporter writes it
            opts = CallOnceOptionsT()
            opts.initSubgraphIndex = 1
            self.main.op("CALL_ONCE", [], [], opts)
            self.main.ops.insert(0, self.main.ops.pop())
        try:
            return build_subgraphs(subs)
        finally:
            self.main.ops = main_ops


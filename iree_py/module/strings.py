"""Packed string tensors for the module writer and the bindings (runtime imports only module):
the format and the code live in iree_py/ir/strings.py, which the text form uses too."""
from __future__ import annotations

from iree_py.ir.strings import pack_strings, unpack_strings

__all__ = ["pack_strings", "unpack_strings"]

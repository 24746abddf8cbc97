"""The IR text form: `print_graph(graph) -> str` and `parse_graph(text) -> Graph`.

Round-trips exactly: print_graph(parse_graph(print_graph(g))) == print_graph(g). The grammar, one
construct per line (docs/ir.md has the details):

    // source: "model.onnx"
    graph @main(%x: tensor<1x3x8x8xf32>) -> (%y) {
      %w = const tensor<4x3x3x3xf32> dense<0x...>
      %c = Conv(%x, %w) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [1, 1]} : tensor<1x4x8x8xf32>  // name: "conv_0"
      fused {
        %y = Relu(%c) : tensor<1x4x8x8xf32>  // name: "relu_1"
      }
      return %y
    }

Symbolic dims print in braces, in types and attributes alike: `tensor<{batch}x{seq + 1}xf32>`,
`shape = [{batch}, 4]`. A data-dependent symbol (graph.symbol_sources) is one line after the
header: `symbol n = %shape[1]` (n is element 1 of %shape, read at run time).

Names that are not plain (letters, digits, `_ . / $ -`) are written as JSON strings: `%"a:0"`.
Constants with at most SMALL_CONSTANT elements print their values (shortest text that parses back
to the same bits); larger ones print their raw little-endian bytes as hex.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from iree_py.errors import CompileError
from iree_py.ir.fused import root_result
from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.strings import pack_strings, unpack_strings
from iree_py.ir.symbols import Expr, dim_text, parse_dim
from iree_py.ir.types import DType, TensorType

SMALL_CONSTANT = 16
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_./$-]+")

# ---------------------------------------------------------------------------------------- printing


def _name(sigil: str, name: str) -> str:
    return sigil + (name if _PLAIN_NAME.fullmatch(name) else json.dumps(name))


def _ref(v: Value | None) -> str:
    return "none" if v is None else _name("%", v.name)


def _scalar(x: Any) -> str:
    if isinstance(x, bool) or isinstance(x, np.bool_):
        return "true" if x else "false"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, str):
        return json.dumps(x)
    if isinstance(x, Expr):
        return dim_text(x)
    raise TypeError(f"attribute value {x!r} of type {type(x).__name__} has no text form")


def _attr_value(x: Any) -> str:
    if isinstance(x, Graph):
        return "region"  # printed below the node (print_graph); the parser does not read regions
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_attr_value(e) for e in x) + "]"
    return _scalar(x)


def _attrs(attrs: dict[str, Any]) -> str:
    if not attrs:
        return ""
    return " {" + ", ".join(f"{k} = {_attr_value(attrs[k])}" for k in sorted(attrs)) + "}"


def _dense(array: np.ndarray, elide_over: int | None) -> str:
    flat = np.ascontiguousarray(array).reshape(-1)
    if elide_over is not None and flat.size > elide_over:
        return "dense<elided>"
    if flat.dtype.kind in "OUS":  # strings: the packed buffer (docs/strings.md), any bytes survive
        return "dense<0x" + pack_strings(flat).tobytes().hex().upper() + ">"
    has_nan = flat.dtype.kind == "f" and bool(np.isnan(flat).any())
    if flat.size <= SMALL_CONSTANT and not has_nan:
        if flat.dtype == np.bool_:
            items = ["true" if x else "false" for x in flat]
        else:
            items = [str(x) for x in flat]  # numpy scalars print their shortest round-trip form
        return "dense<[" + ", ".join(items) + "]>"
    data = flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
    return "dense<0x" + data.hex().upper() + ">"


def _node_line(node: Node, outputs: list[Value], indent: str) -> str:
    results = ", ".join(_ref(v) for v in outputs)
    args = ", ".join(_ref(v) for v in node.inputs)
    types = ", ".join(str(v.type) for v in outputs)
    line = f"{indent}{results} = {node.op}({args}){_attrs(node.attrs)} : {types}"
    if node.name:
        line += f"  // name: {json.dumps(node.name)}"
    return line


def _constants_in_order(graph: Graph) -> list[Value]:
    seen: set[int] = set()
    result: list[Value] = []
    users = [v for node in graph.nodes for step in [node, *node.fused] for v in step.inputs]
    for v in [*users, *graph.outputs]:
        if v is not None and v.is_const and id(v) not in seen:
            seen.add(id(v))
            result.append(v)
    return result


def print_graph(graph: Graph, elide_over: int | None = None) -> str:
    """The text form. `elide_over`: print constants larger than this many elements as
    `dense<elided>` (readable, but then the text does not parse back)."""
    lines: list[str] = []
    if graph.source:
        lines.append(f"// source: {json.dumps(graph.source)}")
    params = ", ".join(f"{_ref(v)}: {v.type}" for v in graph.inputs)
    outs = ", ".join(_name("%", n) for n in graph.output_names)
    lines.append(f"graph {_name('@', graph.name)}({params}) -> ({outs}) {{")
    for symbol in sorted(graph.symbol_sources):
        v, index = graph.symbol_sources[symbol]
        lines.append(f"  symbol {symbol} = {_ref(v)}[{index}]")
    for v in _constants_in_order(graph):
        lines.append(f"  {_ref(v)} = const {v.type} {_dense(v.const, elide_over)}")
    for node in graph.nodes:
        if not node.fused:
            lines.append(_node_line(node, node.outputs, "  "))
            for key in sorted(k for k, v in node.attrs.items() if isinstance(v, Graph)):
                region = print_graph(node.attrs[key], elide_over).rstrip("\n").split("\n")
                lines.append(f"  {key} " + region[0].lstrip())
                lines.extend("  " + line for line in region[1:])
            continue
        lines.append(_node_line(node, [root_result(node)], "  "))
        lines.append("  fused {")
        for step in node.fused:
            lines.append(_node_line(step, step.outputs, "    "))
        lines.append("  }")
    lines.append("  return " + ", ".join(_ref(v) for v in graph.outputs))
    lines.append("}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------- parsing

_STRING = r'"(?:[^"\\]|\\.)*"'
_TOKEN = re.compile(rf"""
    (?P<ws>\s+)
  | (?P<comment>//.*)
  | (?P<str>{_STRING})
  | (?P<type>tensor<[^>]*>)
  | (?P<dense>dense<[^>]*>)
  | (?P<value>%(?:[A-Za-z0-9_./$-]+|{_STRING}))
  | (?P<symbol>@(?:[A-Za-z0-9_./$-]+|{_STRING}))
  | (?P<num>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf\b|nan\b))
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<dim>\{{(?![A-Za-z_][A-Za-z0-9_]*\s*=)[^{{}}\n]*\}})
  | (?P<arrow>->)
  | (?P<punct>[(){{}}\[\],=:])
""", re.VERBOSE)


class _Line:
    """The tokens of one line, consumed left to right."""

    def __init__(self, text: str, number: int) -> None:
        self.number = number
        self.tokens: list[tuple[str, str]] = []
        self.comment = ""
        pos = 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if m is None:
                raise self.error(f"cannot read {text[pos:pos + 20]!r}")
            pos = m.end()
            if m.lastgroup == "ws":
                continue
            if m.lastgroup == "comment":
                self.comment = m.group()
                continue
            self.tokens.append((m.lastgroup, m.group()))
        self.pos = 0

    def error(self, message: str) -> CompileError:
        return CompileError(f"IR text line {self.number}: {message}")

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def next(self, kind: str | None = None, text: str | None = None) -> str:
        got_kind, got = self.peek()
        if (kind and got_kind != kind) or (text and got != text):
            raise self.error(f"expected {text or kind}, got {got or 'end of line'!r}")
        self.pos += 1
        return got

    def accept(self, text: str) -> bool:
        if self.peek()[1] == text:
            self.pos += 1
            return True
        return False

    def done(self) -> None:
        if self.pos != len(self.tokens):
            raise self.error(f"unexpected {self.peek()[1]!r}")


def _unname(token: str) -> str:
    body = token[1:]
    return json.loads(body) if body.startswith('"') else body


def _parse_scalar(line: _Line) -> Any:
    kind, text = line.peek()
    line.pos += 1
    if kind == "num":
        return float(text) if any(c in text for c in ".eE") or "inf" in text or "nan" in text else int(text)
    if kind == "str":
        return json.loads(text)
    if kind == "dim":
        return parse_dim(text)
    if text in ("true", "false"):
        return text == "true"
    raise line.error(f"expected an attribute value, got {text!r}")


def _parse_attr_value(line: _Line) -> Any:
    if not line.accept("["):
        return _parse_scalar(line)
    items: list[Any] = []
    while not line.accept("]"):
        if items:
            line.next(text=",")
        items.append(_parse_attr_value(line))
    return items


def _parse_dense(line: _Line, token: str, ttype: TensorType) -> np.ndarray:
    body = token[len("dense<"):-1]
    dtype = ttype.dtype.numpy
    shape = tuple(int(d) for d in ttype.shape)
    if body == "elided":
        raise line.error("constant is elided (printed with elide_over); it cannot be parsed back")
    if ttype.dtype == DType.string:
        try:
            items = unpack_strings(bytes.fromhex(body[2:] if body.startswith("0x") else "-"), math.prod(shape))
        except ValueError as e:
            raise line.error(f"string constant of type {ttype}: {e}") from None
        return np.array(items, dtype=object).reshape(shape)
    if body.startswith("0x"):
        data = bytes.fromhex(body[2:])
        if len(data) != ttype.num_bytes:
            raise line.error(f"constant of type {ttype} needs {ttype.num_bytes} bytes, got {len(data)}")
        return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    items = [s.strip() for s in body.strip("[]").split(",") if s.strip()]
    if len(items) != math.prod(shape):
        raise line.error(f"constant of type {ttype} needs {math.prod(shape)} values, got {len(items)}")
    if dtype == np.bool_:
        return np.array([s == "true" for s in items], dtype=dtype).reshape(shape)
    return np.array([dtype.type(s) for s in items], dtype=dtype).reshape(shape)


class _Parser:
    def __init__(self, text: str) -> None:
        self.lines = [(i + 1, t) for i, t in enumerate(text.splitlines()) if t.strip()]
        self.values: dict[str, Value] = {}
        self.symbols: list[tuple[_Line, str, str, int]] = []  # symbol lines, resolved at the end

    def use(self, line: _Line) -> Value | None:
        if line.accept("none"):
            return None
        name = _unname(line.next("value"))
        if name not in self.values:
            raise line.error(f"value %{name} used before it is defined")
        return self.values[name]

    def define(self, line: _Line, value: Value) -> Value:
        if value.name in self.values:
            raise line.error(f"value %{value.name} defined twice")
        self.values[value.name] = value
        return value

    def parse(self) -> Graph:
        source = ""
        idx = 0
        if self.lines and self.lines[0][1].strip().startswith("// source:"):
            source = json.loads(self.lines[0][1].strip()[len("// source:"):].strip())
            idx = 1
        if idx >= len(self.lines):
            raise CompileError("IR text: no graph")
        graph = self.header(_Line(self.lines[idx][1], self.lines[idx][0]))
        graph.source = source
        root: Node | None = None
        in_fused = False
        for number, text in self.lines[idx + 1:]:
            line = _Line(text, number)
            first = line.peek()[1]
            if first == "symbol" and not in_fused:
                self.symbol(line)
            elif first == "return":
                line.next()
                graph.outputs = self.value_list(line)
                line.done()
            elif first == "fused":
                if root is None or in_fused:
                    raise line.error("`fused {` must follow a node line")
                line.next(), line.next(text="{"), line.done()
                in_fused = True
            elif first == "}":
                line.next(), line.done()
                if not in_fused:
                    break
                if root is None or not root.fused:
                    raise line.error("empty fused block")
                root.outputs = list(root.fused[-1].outputs)
                for v in root.outputs:
                    v.producer = root
                in_fused = False
            else:
                node = self.statement(line)
                if node is None:
                    continue
                if in_fused:
                    assert root is not None
                    root.fused.append(node)
                else:
                    root = node
                    graph.nodes.append(node)
        else:
            raise CompileError("IR text: missing closing `}` of the graph")
        for line, symbol, value_name, index in self.symbols:
            if value_name not in self.values:
                raise line.error(f"symbol {symbol} reads %{value_name}, which is never defined")
            graph.symbol_sources[symbol] = (self.values[value_name], index)
        return graph

    def symbol(self, line: _Line) -> None:
        """`symbol n = %shape[1]`"""
        line.next(text="symbol")
        symbol = line.next("ident")
        line.next(text="=")
        value_name = _unname(line.next("value"))
        line.next(text="[")
        index = int(line.next("num"))
        line.next(text="]")
        line.done()
        self.symbols.append((line, symbol, value_name, index))

    def value_list(self, line: _Line) -> list[Value]:
        result: list[Value] = []
        while line.peek()[0] != "end":
            if result:
                line.next(text=",")
            v = self.use(line)
            if v is None:
                raise line.error("`none` is not a value here")
            result.append(v)
        return result

    def header(self, line: _Line) -> Graph:
        line.next(text="graph")
        name = _unname(line.next("symbol"))
        line.next(text="(")
        inputs: list[Value] = []
        while not line.accept(")"):
            if inputs:
                line.next(text=",")
            vname = _unname(line.next("value"))
            line.next(text=":")
            inputs.append(self.define(line, Value(vname, TensorType.parse(line.next("type")))))
        line.next("arrow"), line.next(text="(")
        output_names: list[str] = []
        while not line.accept(")"):
            if output_names:
                line.next(text=",")
            output_names.append(_unname(line.next("value")))
        line.next(text="{")
        line.done()
        return Graph(name, inputs, [], [], output_names)

    def statement(self, line: _Line) -> Node | None:
        results = [_unname(line.next("value"))]
        while line.accept(","):
            results.append(_unname(line.next("value")))
        line.next(text="=")
        op = line.next("ident")
        if op == "const":
            ttype = TensorType.parse(line.next("type"))
            array = _parse_dense(line, line.next("dense"), ttype)
            line.done()
            if len(results) != 1:
                raise line.error("a const defines one value")
            self.define(line, Value(results[0], ttype, const=array))
            return None
        line.next(text="(")
        inputs: list[Value | None] = []
        while not line.accept(")"):
            if inputs:
                line.next(text=",")
            inputs.append(self.use(line))
        attrs: dict[str, Any] = {}
        if line.accept("{"):
            while not line.accept("}"):
                if attrs:
                    line.next(text=",")
                key = line.next("ident")
                line.next(text="=")
                attrs[key] = _parse_attr_value(line)
        line.next(text=":")
        types = [TensorType.parse(line.next("type"))]
        while line.accept(","):
            types.append(TensorType.parse(line.next("type")))
        line.done()
        if len(types) != len(results):
            raise line.error(f"{len(results)} results but {len(types)} types")
        name = ""
        if line.comment:
            m = re.fullmatch(r'//\s*name:\s*(".*")\s*', line.comment)
            if m is None:
                raise line.error(f"unexpected comment {line.comment!r} (only `// name: \"...\"`)")
            name = json.loads(m.group(1))
        node = Node(op, inputs, [], attrs, name)  # type: ignore[arg-type]
        node.outputs = [self.define(line, Value(r, t, producer=node)) for r, t in zip(results, types)]
        return node


def parse_graph(text: str) -> Graph:
    """Parse the text form; CompileError names the line of a problem. No type checking here:
    run iree_py.ir.verifier.verify on the result."""
    return _Parser(text).parse()

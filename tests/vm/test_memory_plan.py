"""Static memory planning: buffers share arena space only when their lifetimes don't overlap."""
import numpy as np

from iree_py.ir.graph import Graph, Node, Value
from iree_py.ir.types import DType, TensorType
from iree_py.vm.memory_plan import plan_memory


def t(*shape: int) -> TensorType:
    return TensorType(DType.f32, shape)


def chain_graph() -> Graph:
    """x -> a (Relu) -> b (Relu) -> c (Relu) -> r (Reshape of c) -> d (Add c, b) : output d."""
    x = Value("x", t(4, 16))
    a, b, c, d = (Value(n, t(4, 16)) for n in "abcd")
    r = Value("r", t(64))
    nodes = [Node("Relu", [x], [a]), Node("Relu", [a], [b]), Node("Relu", [b], [c]),
             Node("Reshape", [c], [r], {"shape": [64]}), Node("Add", [r, b], [d])]
    return Graph("g", [x], [d], nodes)


def test_lifetimes_and_reuse():
    g = chain_graph()
    plan = plan_memory(g)
    by_name = {s.name: s for s in plan.storages}
    assert set(by_name) == {"a", "b", "c", "d"}        # the Reshape result is a view, not a buffer
    assert (by_name["a"].first, by_name["a"].last) == (0, 1)
    assert by_name["c"].last == 4                         # kept alive by its view r, read at node 4
    assert by_name["d"].last == 5                         # outputs live to the end
    # a dies after node 1, so c (defined at node 2) may reuse its space; b, c, d overlap pairwise.
    assert by_name["c"].offset == by_name["a"].offset
    offsets = {by_name[n].offset for n in "bcd"}
    assert len(offsets) == 3
    assert plan.arena_size == 3 * 256
    assert plan.storage(g.nodes[3].outputs[0]) is by_name["c"]
    assert id(g.nodes[3]) in plan.elided


def test_no_two_live_buffers_overlap():
    rng = np.random.default_rng(1)
    x = Value("x", t(8))
    values = [x]
    nodes = []
    for i in range(40):
        out = Value(f"v{i}", t(int(rng.integers(1, 300))))
        ins = [values[int(j)] for j in rng.integers(0, len(values), size=2)]
        nodes.append(Node("Add", ins, [out]))
        values.append(out)
    g = Graph("random", [x], values[-3:], nodes)
    plan = plan_memory(g)
    for s in plan.storages:
        assert s.offset % 64 == 0 and s.offset + s.size <= plan.arena_size
        for o in plan.storages:
            if s is not o and s.first <= o.last and o.first <= s.last:
                assert s.offset + s.size <= o.offset or o.offset + o.size <= s.offset, (s, o)
    assert plan.arena_size < sum(s.size for s in plan.storages)  # some sharing happened


def test_operands_of_fused_ops_stay_alive():
    """conv(x) + r fused into one region: r is read by the region, so its buffer lives until then."""
    x = Value("x", t(4, 16))
    r, mid, c, y = (Value(n, t(4, 16)) for n in ("r", "mid", "c", "y"))
    make_r = Node("Relu", [x], [r])
    unrelated = Node("Sigmoid", [x], [mid])
    fused_add = Node("Add", [c, r], [y])
    conv = Node("MatMul", [mid, Value("w", t(16, 16))], [y], fused=[fused_add])
    g = Graph("g", [x], [y], [make_r, unrelated, conv])
    plan = plan_memory(g)
    by_name = {s.name: s for s in plan.storages}
    assert by_name["r"].last == 2
    assert by_name["r"].offset not in (by_name["mid"].offset, by_name["y"].offset)


def concat_graph(batch: int = 1, second_input_is_graph_input: bool = False) -> Graph:
    """a = Relu(x), b = Sigmoid(x) (or the graph input x2), c = Concat(a, b, axis=1), y = Tanh(c)."""
    x = Value("x", t(batch, 2, 3))
    a = Value("a", t(batch, 2, 3))
    b = Value("x2", t(batch, 2, 3)) if second_input_is_graph_input else Value("b", t(batch, 2, 3))
    c, y = Value("c", t(batch, 4, 3)), Value("y", t(batch, 4, 3))
    nodes = [Node("Relu", [x], [a])]
    if not second_input_is_graph_input:
        nodes.append(Node("Sigmoid", [x], [b]))
    nodes += [Node("Concat", [a, b], [c], {"axis": 1}), Node("Tanh", [c], [y])]
    return Graph("g", [x, b] if second_input_is_graph_input else [x], [y], nodes)


def test_contiguous_concat_is_done_in_place():
    g = concat_graph()
    plan = plan_memory(g)
    a, b = g.nodes[0].outputs[0], g.nodes[1].outputs[0]
    c = g.nodes[2].outputs[0]
    assert id(g.nodes[2]) in plan.elided
    assert plan.locate(a) == (c, 0) and plan.locate(b) == (c, 24)
    assert plan.storage(a) is plan.storage(c)
    assert plan.storage(c).first == 0  # lives from the first part's definition


def test_concat_stays_a_kernel_when_slices_are_not_contiguous_or_an_input_is_outside_the_arena():
    assert id(concat_graph(batch=2).nodes[2]) not in plan_memory(concat_graph(batch=2)).elided
    g = concat_graph(second_input_is_graph_input=True)
    assert id(g.nodes[1]) not in plan_memory(g).elided


def test_nested_concats_compose():
    """DenseNet-style: c1 = Concat(a, b); c2 = Concat(c1, d): a, b, d all land in c2's storage."""
    x = Value("x", t(1, 1, 4))
    a, b, d = (Value(n, t(1, 1, 4)) for n in "abd")
    c1, c2 = Value("c1", t(1, 2, 4)), Value("c2", t(1, 3, 4))
    nodes = [Node("Relu", [x], [a]), Node("Relu", [x], [b]), Node("Concat", [a, b], [c1], {"axis": 1}),
             Node("Sigmoid", [c1], [d]), Node("Concat", [c1, d], [c2], {"axis": 1})]
    plan = plan_memory(Graph("g", [x], [c2], nodes))
    assert [plan.locate(v) for v in (a, b, d)] == [(c2, 0), (c2, 16), (c2, 32)]
    assert len(plan.storages) == 1 and plan.arena_size == 64

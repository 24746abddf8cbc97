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
    assert plan.storage_of[id(g.nodes[3].outputs[0])] is by_name["c"]


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

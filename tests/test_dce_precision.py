"""``dce-sound`` precision: Thunder's scoping, alignment modulo renaming, traces that went another way.

Two halves. Unit tests on portable traces (``portable_trace.Node``) state the rules exactly: a removed
subsymbol is live only where a kept follower reads its output freely, produces its parent's output,
or is tagged to be kept; renamed proxies are no edit; an edit is. Then the precision corpus: every
false alarm fuzzdce once raised under a correct placement, as (program, path, placement) that must
show no violation, beside the planted faults that must stay caught on the same programs.
"""

import pytest
from conftest import evaluate_among, evaluate_under

from fuzzdce.core.liveness import why_live
from fuzzdce.core.model import Outcome, SplitKind, SplitRecord
from fuzzdce.core.portable_trace import Name, Node, PortableTrace
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.subsymbols import compare, compare_traces
from fuzzdce.core.vocabulary import TraceLabel
from fuzzdce.oracles import dce_sound

F = "torch.nn.functional"


def n(sym, args=(), outs=(), subs=(), keep=()):
    """A Node: names as strings starting with a letter, anything else a constant."""

    def atom(a):
        return Name(a) if isinstance(a, str) and a[:1].isalpha() else repr(a)

    return Node(sym, tuple(map(atom, args)), tuple(map(atom, outs)), frozenset(keep), tuple(subs))


def outcome(*bsyms, splits=()):
    o = Outcome("jit-symbolic", "placement", traces=[(TraceLabel("jit", "forward", 0), PortableTrace(tuple(bsyms)))])
    o.split_reasons = [SplitRecord(SplitKind(k), "", "") for k in splits]
    return o


def violations(placement, stock):
    return dce_sound.check(placement, Outcome("eager", "stock"), stock)


# The shape of the false alarm under symbolic values: every reader of ``x.shape`` re-emits the query.
SHAPE = n("shape", ["x"], ["i0", "i1"])


def layer_norm_like(*subs):
    return n("layer_norm", ["x"], ["y"], subs)


def test_a_removed_definition_that_each_reader_makes_again_inside_itself_is_dead():
    reader = n("var_mean", ["x"], ["y"], [SHAPE, n("broadcast_in_dim", ["x", "i0", "i1"], ["y"])])
    stock = outcome(layer_norm_like(SHAPE, reader))
    placement = outcome(layer_norm_like(reader))
    found = compare(placement, stock).changes
    assert [c.kind for _, c in found] == ["removed"] and why_live(found[0][1]) == []
    assert violations(placement, stock) == []


def test_a_removed_definition_a_kept_follower_reads_freely_is_live():
    reader = n("broadcast_in_dim", ["x", "i0", "i1"], ["y"])
    stock = outcome(layer_norm_like(SHAPE, reader))
    placement = outcome(layer_norm_like(reader))
    [v] = violations(placement, stock)
    assert "read by kept" in v.key and "broadcast_in_dim" in v.message


def test_a_read_the_parent_or_an_earlier_kept_sibling_or_an_earlier_symbol_provides_loses_nothing():
    reader = n("broadcast_in_dim", ["x", "i0"], ["y"])
    # i0 is the parent's argument
    assert (
        violations(
            outcome(n("p", ["x", "i0"], ["y"], [reader])),
            outcome(n("p", ["x", "i0"], ["y"], [n("shape", ["x"], ["i0"]), reader])),
        )
        == []
    )
    # i0 comes from an earlier kept sibling
    kept_shape = n("shape", ["x"], ["i0"])
    stock = outcome(n("p", ["x"], ["y"], [kept_shape, n("shape", ["x"], ["i0"]), reader]))
    assert violations(outcome(n("p", ["x"], ["y"], [kept_shape, reader])), stock) == []
    # i0 is an earlier top-level symbol's output (a symbolic-values trace reads it from there)
    top = n("shape", ["x"], ["i0"])
    stock = outcome(top, n("p", ["x"], ["y"], [n("shape", ["x"], ["i0"]), reader]))
    assert violations(outcome(top, n("p", ["x"], ["y"], [reader])), stock) == []


def test_removing_the_parent_output_or_a_tagged_subsymbol_is_flagged():
    stock = outcome(n("p", ["x"], ["y"], [n("neg", ["x"], ["y"])]))
    assert [v.key for v in violations(outcome(n("p", ["x"], ["y"], [])), stock)] == ["p lost neg: parent output"]
    stock = outcome(n("p", ["x"], ["y"], [n("sink", ["x"], [], keep=["DONT_DCE"]), n("neg", ["x"], ["y"])]))
    assert [v.key for v in violations(outcome(n("p", ["x"], ["y"], [n("neg", ["x"], ["y"])])), stock)] == [
        "p lost sink: DONT_DCE"
    ]


def test_consistently_renamed_proxies_are_no_edit_and_an_edit_is_one():
    def program(a, b):
        return outcome(
            n("hardshrink", ["x"], ["y"], [n("abs", ["x"], [a]), n("le", [a, 0.5], [b]), n("where", [b, 0, "x"], ["y"])])
        )

    assert compare(program("t5", "t6"), program("t0", "t1")).changes == []
    assert violations(program("t0", "t1"), program("t5", "t6")) == []
    swapped = outcome(
        n("hardshrink", ["x"], ["y"], [n("abs", ["x"], ["t0"]), n("le", [0.5, "t0"], ["t1"]), n("where", ["t1", 0, "x"], ["y"])])
    )
    [v] = violations(swapped, program("t5", "t6"))
    assert v.key == "hardshrink kept a changed le"


def test_a_name_renamed_two_ways_is_an_edit():
    stock = outcome(n("p", ["x"], ["y"], [n("abs", ["x"], ["a"]), n("neg", ["a"], ["b"]), n("add", ["a", "b"], ["y"])]))
    # ``b`` is read where stock reads ``a``: no one-to-one renaming makes the two the same
    placement = outcome(n("p", ["x"], ["y"], [n("abs", ["x"], ["a"]), n("neg", ["a"], ["b"]), n("add", ["b", "b"], ["y"])]))
    assert [v.key for v in violations(placement, stock)] == ["p kept a changed add"]


def test_of_two_equal_computations_the_kept_one_is_the_one_with_its_name():
    """``chunk`` under symbolic values computes ``i29 = sub(i0, i28)`` and ``i30 = sub(i0, i28)``;
    DCE keeps ``i30``, which the slice reads. Pairing the kept one with ``i29`` would read as an edit."""
    slice_ = n("slice_prim", ["x", "i30"], ["y"])
    stock = outcome(n("chunk", ["x", "i28"], ["y"], [n("sub", ["i0", "i28"], ["i29"]), n("sub", ["i0", "i28"], ["i30"]), slice_]))
    placement = outcome(n("chunk", ["x", "i28"], ["y"], [n("sub", ["i0", "i28"], ["i30"]), slice_]))
    assert [(c.kind, c.child.head) for _, c in compare(placement, stock).changes] == [("removed", "i29 = sub(i0, i28)")]
    assert violations(placement, stock) == []


def test_a_name_stock_reuses_for_another_value_may_be_renamed_otherwise():
    """Stock names the first dimension of every tensor it queries ``i0``; the placement, having
    numbered anew, calls one of them ``i5``: a definition binds a name anew, reads must follow."""

    def trace(dim, t):
        return outcome(
            n("shape", ["x"], ["i0"]),
            n("nll_loss", [t], ["y"], [n("shape", [t], [dim]), n("where", [t, dim], ["y"])]),
        )

    assert violations(trace("i5", "t227"), trace("i0", "t229")) == []
    read_wrong = outcome(
        n("shape", ["x"], ["i0"]),
        n("nll_loss", ["t227"], ["y"], [n("shape", ["t227"], ["i5"]), n("where", ["t227", "i0"], ["y"])]),
    )
    assert [v.key for v in violations(read_wrong, trace("i0", "t229"))] == ["nll_loss kept a changed where"]


def test_a_computation_stock_makes_kept_once_more_or_elsewhere_is_no_edit():
    """The merge bc399d4a3 under symbolic values keeps ``0, i1, i2 = shape(v6)`` and three copies
    with every output pruned, where stock has four copies apart: no new computation, no edit."""
    query = n("shape", ["v6"], [0, "i1", "i2"])
    stock = outcome(
        n(
            "logical_and",
            ["v5", "v6"],
            ["v7"],
            [query, n("eq", ["i1", 1], ["i3"]), query, n("ne", ["v6", 0.0], ["t7"]), n("bitwise_and", ["t7", "t7"], ["v7"])],
        )
    )
    pruned = n("shape", ["v6"], [0, 4, 1])
    placement = outcome(
        n(
            "logical_and",
            ["v5", "v6"],
            ["v7"],
            [query, pruned, pruned, n("ne", ["v6", 0.0], ["t7"]), n("bitwise_and", ["t7", "t7"], ["v7"])],
        )
    )
    assert violations(placement, stock) == []
    # a computation stock does not make at all is still an edit
    other = outcome(
        n(
            "logical_and",
            ["v5", "v6"],
            ["v7"],
            [query, n("shape", ["v5"], [0, 4, 1]), n("ne", ["v6", 0.0], ["t7"]), n("bitwise_and", ["t7", "t7"], ["v7"])],
        )
    )
    assert [v.key for v in violations(other, stock)] == ["logical_and kept a changed shape"]


def test_an_unused_output_pruned_to_a_placeholder_is_dce_and_a_read_one_is_live():
    stock = outcome(n("p", ["x"], ["y"], [n("shape", ["x"], ["i0", "i1"]), n("broadcast_in_dim", ["x", "i0"], ["y"])]))
    pruned = outcome(n("p", ["x"], ["y"], [n("shape", ["x"], ["i0", 3]), n("broadcast_in_dim", ["x", "i0"], ["y"])]))
    assert violations(pruned, stock) == []
    live = outcome(n("p", ["x"], ["y"], [n("shape", ["x"], [2, "i1"]), n("broadcast_in_dim", ["x", "i0"], ["y"])]))
    assert [v.key for v in violations(live, stock)] == ["p lost outputs of shape: read by kept"]


def test_traces_that_went_another_way_are_not_compared():
    stock = outcome(n("sub", ["x", "x"], ["y"]), n("p", ["y"], ["z"], [n("neg", ["y"], ["z"])]))
    other_graph = outcome(n("p", ["y"], ["z"], [n("abs", ["y"], ["z"])]))
    comparison = compare(other_graph, stock)
    assert comparison.changes == [] and comparison.not_compared == ["jit forward 0: top-level symbols differ"]
    split = outcome(
        n("sub", ["x", "x"], ["y"]), n("p", ["y"], ["z"], [n("abs", ["y"], ["z"])]), splits=["EXCEPTION_META_THUNDER_OP"]
    )
    assert compare(split, stock).not_compared == ["thunderfx split the program otherwise"]
    assert violations(split, stock) == [] and violations(other_graph, stock) == []
    # the same pair, not split: the edit is seen
    assert violations(outcome(n("sub", ["x", "x"], ["y"]), n("p", ["y"], ["z"], [n("abs", ["y"], ["z"])])), stock)


def test_compare_traces_reads_thunder_traces_and_portable_ones_alike():
    evaluation = evaluate_under(LAYER_NORM, "symcall-fixed", paths=["jit"])
    stock, placement = evaluation["stock"].outcomes["jit"], evaluation["symcall-fixed"].outcomes["jit"]
    from fuzzdce.core.portable_trace import portable_trace

    (_, s), (_, p) = stock.traces[0], placement.traces[0]
    assert compare_traces(s, p)[0] == compare_traces(portable_trace(s), portable_trace(p))[0]
    assert compare_traces(s, p)[0], "symcall-fixed removes subsymbols of layer_norm"


# --- the precision corpus: false alarms once raised, now none -----------------------------------------


def program(*steps, inputs=((2, 3),), outputs=None):
    made = tuple(Step(name, template, tuple(Ref(i) for i in refs)) for name, template, refs in steps)
    n_values = len(inputs) + len(steps)
    return Program(tuple(TensorInput(s) for s in inputs), made, outputs or (n_values - 1,), seed=1)


LAYER_NORM = program(("layer_norm", f"{F}.layer_norm({{0}}, (3,))", (0,)))
CORPUS = {
    "mse_loss": program(("mse_loss", f"{F}.mse_loss({{0}}, {{1}}, reduction='mean')", (0, 1)), inputs=((2, 3), (2, 3))),
    "cross_entropy": Program(
        (TensorInput((4, 3)),),
        (Step("cross_entropy", f"{F}.cross_entropy({{0}}, torch.tensor([0, 2, 1, 0]), label_smoothing=0.0)", (Ref(0),)),),
        (1,),
        seed=1,
    ),
    "layer_norm": LAYER_NORM,
    "le (shape query of a broadcast)": program(
        ("le", "torch.le({0}, {1})", (0, 1)), ("amax", "torch.amax({0}, dim=1)", (2,)), inputs=((2, 3), (3,))
    ),
    "amax (shape query at depth 1)": program(
        ("amax", "torch.amax({0}, dim=1, keepdim=True)", (0,)), ("sub", "torch.sub({0}, {1})", (0, 1))
    ),
    "addcmul (pruned shape output)": program(
        ("addcmul", "torch.addcmul({0}, {0}, {1}, value=0.5)", (0, 1)), inputs=((1, 3), (2, 3))
    ),
    "chunk (one of two equal computations kept)": Program(
        (TensorInput((1, 3)),),
        (
            Step("chunk", "torch.chunk({0}, 2, dim=0)", (Ref(0),), unpack=True),
            Step("chunk", "torch.chunk({0}, 2, dim=0)", (Ref(0),), unpack=True),
        ),
        (2,),
        seed=1,
    ),
}
THUNDERFX_CORPUS = program(
    ("sub", "torch.sub({0}, {1})", (0, 1)),
    ("hardshrink", f"{F}.hardshrink({{0}})", (2,)),
    ("logical_and", "torch.logical_and({0}, {1})", (3, 0)),
    ("any_tensor", "torch.any({0}, dim=0, keepdim=False)", (4,)),
    inputs=((2, 3), (2, 3)),
)


CORRECT = ("rdnp", "symcall", "symcall-fixed")


@pytest.mark.parametrize("placement", CORRECT)
@pytest.mark.parametrize("name", list(CORPUS))
def test_correct_placements_raise_no_dce_sound_alarm_under_symbolic_values(name, placement):
    evaluation = evaluate_among(CORPUS[name], placement, CORRECT, paths=["jit-symbolic", "jit"])[placement]
    assert [v for v in evaluation.violations if v.oracle == "dce-sound"] == []


@pytest.mark.parametrize("placement", CORRECT[1:])
def test_a_graph_split_otherwise_is_no_dce_finding(placement):
    """symcall splits this program on thunderfx (the ``splits`` oracle's finding): its subgraphs'
    traces are other programs than stock's, and their renamed proxies are no edit."""
    evaluation = evaluate_among(THUNDERFX_CORPUS, placement, CORRECT[1:], paths=["thunderfx"])[placement]
    assert [v for v in evaluation.violations if v.oracle == "dce-sound"] == []
    if placement == "symcall":
        assert any(v.oracle == "splits" for v in evaluation.violations)
        assert evaluation.outcomes["thunderfx"].dce_not_compared == ["thunderfx split the program otherwise"]


STRUCTURAL = {"planted:dce_drops_live": "read by kept", "planted:dce_edits_kept": "kept a changed"}


@pytest.mark.parametrize("name", ["layer_norm", "mse_loss"])
@pytest.mark.parametrize("fault, key_part", STRUCTURAL.items())
def test_planted_structural_faults_stay_caught_on_the_corpus(name, fault, key_part):
    evaluation = evaluate_among(CORPUS[name], fault, tuple(STRUCTURAL), paths=["jit"])[fault]
    assert any(v.oracle == "dce-sound" and key_part in v.key for v in evaluation.violations), evaluation.violations


@pytest.mark.slow  # the whole corpus under every path (benchmarks/precision.py runs it too)
def test_identity_placement_shows_nothing_on_the_corpus():
    for prog in [*CORPUS.values(), THUNDERFX_CORPUS]:
        evaluation = evaluate_under(prog, "identity", paths=["jit", "jit-symbolic", "thunderfx"])
        stock = {(v.path, v.oracle, v.key or v.message) for v in evaluation["stock"].violations}
        assert [v for v in evaluation["identity"].violations if (v.path, v.oracle, v.key or v.message) not in stock] == []


# --- two Thunders: subsymbols compared only where both decompose a symbol alike ----------------------

# ``neg`` as the reference decomposes it, and as a branch does (``mul(neg(a), 2)``: the same result
# while executors run the symbol whole).
NEG_MAIN = n("neg", ["x"], ["y"], [n("neg", ["x"], ["y"])])
NEG_BRANCH = n("neg", ["x"], ["y"], [n("neg", ["x"], ["t0"]), n("mul", ["t0", 2.0], ["y"])])


def built(o, build: str):
    """``o`` as the outcome of another Thunder build (its process ran it)."""
    o.build = build
    return o


def test_a_symbol_two_thunders_decompose_otherwise_is_activity_not_a_finding():
    # Within one Thunder (a patch placement) the branch's subsymbols are an edit of a kept one.
    assert [v.key for v in violations(outcome(NEG_BRANCH), outcome(NEG_MAIN))] == ["neg kept a changed mul"]
    # Between two, the live ``mul`` the reference lacks shows another decomposition: not compared.
    for subject, reference in ((outcome(NEG_BRANCH), built(outcome(NEG_MAIN), "main")),
                               (built(outcome(NEG_BRANCH), "branch"), outcome(NEG_MAIN))):  # fmt: skip
        assert violations(subject, reference) == []
        comparison = compare(subject, reference)
        assert comparison.decomposition_differs == ["neg"] and comparison.changes == []


def test_between_two_thunders_a_dead_subsymbol_the_reference_removed_is_activity_and_a_live_removal_a_finding():
    live = [n("abs", ["x"], ["t0"]), n("le", [0.5, "t0"], ["t1"]), n("where", ["t1", 0, "x"], ["y"])]
    dead = n("exp", ["x"], ["t9"])
    reference = built(outcome(n("hardshrink", ["x"], ["y"], live)), "main")
    # The subject keeps a dead subsymbol the reference's DCE removed: alike, no finding, one added.
    kept_more = outcome(n("hardshrink", ["x"], ["y"], [dead, *live]))
    assert violations(kept_more, reference) == []
    comparison = compare(kept_more, reference)
    assert comparison.decomposition_differs == [] and [c.kind for _, c in comparison.changes] == ["added"]
    # The subject drops ``abs``, which ``le`` still reads: unsound DCE, between two Thunders too.
    dropped = outcome(n("hardshrink", ["x"], ["y"], live[1:]))
    [v] = violations(dropped, reference)
    assert v.key == "hardshrink lost abs: read by kept", v.message

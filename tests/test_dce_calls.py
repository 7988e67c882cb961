"""Each call of Thunder's ``dce`` observed (``running.dce_calls``): what it changed in the decompositions
it kept, against the trace it was given, judged by ``dce-sound`` on every path, including calls no
trace records (the grad transform's, thunderfx's splitter's).

Planted: a DCE that edits a kept subsymbol is caught in a call whose trace nobody records, where the
splitter rejects a node for it. Precision: Thunder's own ``dce`` and the correct placements change
nothing there; copies of bound symbols, rebuilt decompositions and a dead subsymbol removed are no
finding; of two bound symbols reading the same values, the kept one is paired with itself.
"""

import pytest
from conftest import evaluate_under

from fuzzdce.core.liveness import why_live
from fuzzdce.core.model import Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.subsymbols import changes
from fuzzdce.oracles import dce_sound
from fuzzdce.running import dce_calls
from fuzzdce.running.dce_calls import decomposition_changes, observed_dce


@pytest.fixture(scope="module")
def trace():
    """A stock trace whose first bound symbol decomposes deeply (``layer_norm``)."""
    import thunder
    import torch

    def fn(x, y):
        return torch.nn.functional.layer_norm(x, (3,)) * y

    jfn = thunder.jit(fn)
    jfn(torch.randn(2, 3), torch.randn(2, 3))
    return thunder.last_traces(jfn)[0]


def with_bound_symbols(trace, bound_symbols):
    from thunder.core.trace import from_trace

    copy = from_trace(trace)
    copy.bound_symbols = list(bound_symbols)
    return copy


def decomposed(trace) -> int:
    """The index of the first bound symbol with two subsymbols or more."""
    return next(i for i, b in enumerate(trace.bound_symbols) if len(b.subsymbols) >= 2)


def replaced(trace, index, bsym):
    return with_bound_symbols(trace, [bsym if i == index else b for i, b in enumerate(trace.bound_symbols)])


def rebuilt(bsym):
    """``bsym`` with its decomposition copied at every depth (new objects, the same contents)."""
    return bsym.from_bsym(subsymbols=[rebuilt(s) for s in bsym.subsymbols])


def reads_two(bsym) -> bool:
    proxies = [a for a in bsym.args if hasattr(a, "name")]
    return len(proxies) >= 2 and proxies[0].name != proxies[1].name and proxies[0] is bsym.args[0] and proxies[1] is bsym.args[1]


def test_a_decomposition_kept_as_it_was_copied_or_rebuilt_is_no_change(trace):
    i = decomposed(trace)
    assert decomposition_changes(trace, trace) == []
    assert decomposition_changes(trace, with_bound_symbols(trace, [b.from_bsym() for b in trace.bound_symbols])) == []
    assert decomposition_changes(trace, replaced(trace, i, rebuilt(trace.bound_symbols[i]))) == []


def test_a_kept_subsymbol_edited_is_a_change_and_dce_sound_flags_it(trace):
    i = decomposed(trace)
    bsym = trace.bound_symbols[i]
    j = next(k for k, s in enumerate(bsym.subsymbols) if reads_two(s))
    sub = bsym.subsymbols[j]
    swapped = sub.from_bsym(args=(sub.args[1], sub.args[0], *sub.args[2:]))
    edited = bsym.from_bsym(subsymbols=[swapped if k == j else s for k, s in enumerate(bsym.subsymbols)])
    found = decomposition_changes(trace, replaced(trace, i, edited))
    [change] = [c for c in found if c.kind == "added"]  # beside the original it replaced, removed
    assert change.parent.sym == bsym.sym.name and change.depth == 0
    o = Outcome("jit", "placement", dce_calls=[("dce call 0", change)])
    [v] = dce_sound.check(o, Outcome("eager", "stock"), None)
    assert v.key == f"{bsym.sym.name} kept a changed {sub.sym.name}"
    assert "which the trace dce was given does not have" in v.message


def test_a_subsymbol_reading_its_parents_arguments_the_other_way_round_is_a_change():
    """``matmul(a, b)`` decomposed as ``prims.matmul(b, a)``: one call has one set of names, so
    nothing may be learnt as a renaming of ``a`` to ``b`` (the dead ``v0 @ v0.mT`` the splitter
    rejected under ``dce_edits_kept`` showed no change when it was)."""
    import thunder
    import torch

    jfn = thunder.jit(lambda x, y: x @ y)
    jfn(torch.randn(2, 3), torch.randn(3, 2))
    given = thunder.last_traces(jfn)[0]
    i = next(k for k, b in enumerate(given.bound_symbols) if b.sym.name == "matmul")
    bsym = given.bound_symbols[i]
    [sub] = bsym.subsymbols
    swapped = bsym.from_bsym(subsymbols=[sub.from_bsym(args=(sub.args[1], sub.args[0]))])
    found = decomposition_changes(given, replaced(given, i, swapped))
    assert {c.kind for c in found} == {"removed", "added"}, found
    [v] = dce_sound.check(Outcome("jit", "p", dce_calls=[("dce call 0", c) for c in found]), Outcome("eager", "stock"), None)
    assert v.key == "matmul kept a changed matmul"


def test_a_live_subsymbol_dropped_is_flagged_and_a_dead_one_is_not(trace):
    from thunder.core import prims
    from thunder.core.trace import TraceCtx, tracectx

    i = decomposed(trace)
    bsym = trace.bound_symbols[i]
    outs = {o.name for o in bsym.subsymbols[0].flat_proxy_outs}
    assert any(outs & {a.name for a in s.flat_proxy_args} for s in bsym.subsymbols[1:]), "a later subsymbol reads the first"
    [change] = decomposition_changes(trace, replaced(trace, i, bsym.from_bsym(subsymbols=bsym.subsymbols[1:])))
    assert change.kind == "removed" and "read by kept" in {kind for kind, _ in why_live(change)}

    arg = bsym.flat_proxy_args[0]
    with tracectx(TraceCtx()):
        dead = prims.neg.bind(arg, output=arg.replace_name("unread"))
    given = replaced(trace, i, bsym.from_bsym(subsymbols=[*bsym.subsymbols, dead]))
    [change] = decomposition_changes(given, trace)
    assert change.kind == "removed" and why_live(change) == []
    assert dce_sound.check(Outcome("jit", "p", dce_calls=[("dce call 0", change)]), Outcome("eager", "stock"), None) == []


def test_of_two_bound_symbols_reading_the_same_values_the_kept_one_pairs_with_itself(trace):
    """A DCE dropping the first of two ``where(p, a, b)`` with other decompositions keeps the second
    as it was: no change (pairing by symbol and reads alone would compare it with the first)."""
    from thunder.core.trace import TraceCtx, tracectx

    i = decomposed(trace)
    bsym = trace.bound_symbols[i]
    with tracectx(TraceCtx()):
        twin_out = bsym.flat_proxy_outs[0].replace_name("twin")
    twin = bsym.from_bsym(output=twin_out, subsymbols=bsym.subsymbols[:1])
    given = with_bound_symbols(trace, [*trace.bound_symbols[:i], twin, *trace.bound_symbols[i:]])
    assert decomposition_changes(given, with_bound_symbols(trace, [b.from_bsym() for b in trace.bound_symbols])) == []


def test_observed_dce_wraps_the_dce_in_effect_everywhere_and_restores_it_exactly(trace):
    import planted
    from thunder.core import transform_common, transforms

    before = transform_common.dce
    assert transforms.dce is before, "Thunder's transforms import dce by name"
    outcome = Outcome("jit", "planted:dce_edits_kept")
    with planted.dce_edits_kept(), observed_dce(outcome):
        assert transforms.dce is transform_common.dce is not before
        transform_common.dce(trace)
    assert transform_common.dce is before and transforms.dce is before
    assert outcome.dce_calls and all(label == "dce call 0" for label, _ in outcome.dce_calls)
    assert "added" in {c.kind for _, c in outcome.dce_calls}


def test_fuzzdce_failing_to_compare_a_dce_call_is_a_note_not_thunders_error(trace, monkeypatch):
    from thunder.core import transform_common

    def broken(given, result):
        raise RuntimeError("fuzzdce's own bug")

    monkeypatch.setattr(dce_calls, "decomposition_changes", broken)
    outcome = Outcome("jit", "stock")
    with observed_dce(outcome):
        result = transform_common.dce(trace)
    assert [b.sym.name for b in result.bound_symbols] == [b.sym.name for b in transform_common.dce(trace).bound_symbols]
    assert outcome.dce_calls == []
    assert outcome.notes == ["fuzzdce could not compare a dce call's trace: RuntimeError: fuzzdce's own bug"]
    assert set(outcome.not_checked) == {("dce-sound", "could not compare a dce call with the trace it was given (RuntimeError)")}


# A node thunderfx's splitter tries under Thunder although nothing reads it: with an input that
# requires grad, the splitter differentiates its symbol through its decomposition (``value_and_grad``),
# whose trace only the observed ``dce`` calls show.
DEAD_HARDSHRINK = Program(
    (TensorInput((1, 2, 1, 1)),),
    (Step("hardshrink", "torch.nn.functional.hardshrink({0})", (Ref(0),)),),
    (0,),
    seed=1,
)


def test_an_edited_subsymbol_only_the_splitters_dce_shows_is_caught_there_and_nowhere_under_stock():
    evaluations = evaluate_under(DEAD_HARDSHRINK, "planted:dce_edits_kept", paths=["thunderfx"])
    evaluation = evaluations["planted:dce_edits_kept"]
    outcome = evaluation.outcomes["thunderfx"]
    found = [v for v in evaluation.violations if v.oracle == "dce-sound"]
    assert found and all(" dce call " in f" {v.message}" for v in found), evaluation.violations
    assert any(v.oracle == "splits" for v in evaluation.violations), "the splitter rejects the node for it"
    assert changes(outcome, evaluations["stock"].outcomes["thunderfx"]) == [], "no recorded trace shows it"
    assert evaluations["stock"].violations == []


@pytest.mark.parametrize("placement", ["rdnp", "symcall-fixed"])
def test_correct_placements_change_no_decomposition_in_any_dce_call(placement):
    evaluation = evaluate_under(DEAD_HARDSHRINK, placement, paths=["thunderfx", "jit-grad"])
    assert [v for v in evaluation[placement].violations if v.oracle == "dce-sound"] == []

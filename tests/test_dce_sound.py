"""The ``dce-sound`` oracle and DCE activity: planted unsound DCEs are caught, the built-in placements are not
flagged, and activity counts what a placement changed against stock."""

import pytest
from conftest import evaluate_among, evaluate_under
from sample_programs import DEAD_CODE_PROGRAM
from test_oracles import MUTATING

from fuzzdce.core.dce_activity import activity
from fuzzdce.core.program import Program, Ref, Step, TensorInput


def oracles_hit(evaluation, path=None):
    return {v.oracle for v in evaluation.violations if path is None or v.path == path}


def test_a_dce_dropping_dont_dce_subsymbols_is_caught():
    evaluations = evaluate_under(MUTATING, "planted:dce_drops_dont_dce", paths=["jit"])
    evaluation = evaluations["planted:dce_drops_dont_dce"]
    assert any(v.oracle == "dce-sound" and "DONT_DCE" in v.key for v in evaluation.violations), evaluation.violations
    assert evaluations["stock"].violations == []


def dead_code_under_drops_live():
    """The dead-code program under stock and ``planted:dce_drops_live`` on jit, evaluated once for
    the tests that read it."""
    return evaluate_among(DEAD_CODE_PROGRAM, "planted:dce_drops_live", ["planted:dce_drops_live"], paths=["jit"])


def with_subsymbol(trace, index, extra):
    """A copy of ``trace`` whose ``index``-th bound symbol has ``extra`` appended to its decomposition."""
    from thunder.core.trace import from_trace

    copy = from_trace(trace)
    copy.bound_symbols = list(trace.bound_symbols)
    bsym = copy.bound_symbols[index]
    copy.bound_symbols[index] = bsym.from_bsym(subsymbols=[*bsym.subsymbols, extra])
    return copy


@pytest.mark.parametrize("tagged", [True, False], ids=["sink, tagged DONT_DCE", "untagged dead"])
def test_removing_a_dont_dce_subsymbol_whose_outputs_nobody_reads_is_flagged_and_a_dead_one_is_not(tagged):
    """The case the outputs never show: stock's decomposition holds a subsymbol that is dead by its
    outputs (none, or unread) but tagged DONT_DCE; a placement without it is unsound."""
    import dataclasses

    from thunder.core import prims
    from thunder.core.trace import TraceCtx, tracectx

    from fuzzdce.oracles import dce_sound

    placement = dead_code_under_drops_live()["stock"].outcomes["jit"]
    label, trace = next((lbl, t) for lbl, t in placement.traces if any(b.subsymbols for b in t.bound_symbols))
    index = next(i for i, b in enumerate(trace.bound_symbols) if b.subsymbols and b.flat_proxy_args)
    arg = trace.bound_symbols[index].flat_proxy_args[0]
    if tagged:
        extra = prims.sink.bind(arg, output=None)
    else:
        with tracectx(TraceCtx()):
            extra = prims.neg.bind(arg, output=arg.replace_name("unread"))
    stock = dataclasses.replace(placement, placement="stock", traces=[(label, with_subsymbol(trace, index, extra))])
    only_label = dataclasses.replace(placement, traces=[(label, trace)])
    violations = dce_sound.check(only_label, placement, stock)
    if tagged:
        assert [v.key for v in violations] == [f"{trace.bound_symbols[index].sym.name} lost sink: DONT_DCE"]
    else:
        assert violations == []


def test_a_dce_dropping_a_live_subsymbol_is_caught():
    evaluations = dead_code_under_drops_live()
    evaluation = evaluations["planted:dce_drops_live"]
    assert "dce-sound" in oracles_hit(evaluation), evaluation.violations
    assert any("read by kept" in v.key for v in evaluation.violations if v.oracle == "dce-sound")


BUILT_IN = ("rdnp", "symcall", "symcall-fixed", "identity")


@pytest.mark.parametrize("placement", BUILT_IN)
@pytest.mark.parametrize("program", [DEAD_CODE_PROGRAM, MUTATING], ids=["dead-code", "mutating"])
def test_the_built_in_placements_are_sound_on_sample_programs(placement, program):
    evaluation = evaluate_among(program, placement, BUILT_IN, paths=["jit", "jit-grad", "jit-symbolic"])[placement]
    assert "dce-sound" not in oracles_hit(evaluation), evaluation.violations


BROADCAST_EQ = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (Step("eq", "torch.eq({0}, {1})", (Ref(0), Ref(1))),),
    (2,),
    seed=2,
)


@pytest.mark.parametrize("placement", BUILT_IN[:2])
def test_a_duplicate_shape_query_removed_under_symbolic_values_is_not_flagged(placement):
    """Under symbolic values a decomposition may query a shape whose number proxies an earlier
    symbol already defined; removing that duplicate definition loses nothing."""
    evaluation = evaluate_among(BROADCAST_EQ, placement, BUILT_IN[:2], paths=["jit-symbolic"])[placement]
    assert "dce-sound" not in oracles_hit(evaluation), evaluation.violations


def test_activity_is_empty_against_itself_and_counts_removals_against_stock():
    evaluations = dead_code_under_drops_live()
    stock = evaluations["stock"].outcomes["jit"]
    planted = evaluations["planted:dce_drops_live"].outcomes["jit"]
    assert activity(stock, stock) == {}
    counts = activity(planted, stock)
    assert counts and all(removed >= 1 and added == 0 for removed, added in counts.values()), counts

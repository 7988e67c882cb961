"""Stock's compile serves a placement that changes nothing on a path (``running.compile_sharing``): each
mechanism proven by what it must share, what it must not, and the same verdicts either way."""

from __future__ import annotations

import contextlib
import re

import pytest
from conftest import compiled
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.patching import patch_everywhere
from fuzzdce.running.path_running import PROBE_NOTE, run_path
from fuzzdce.running.placements import PLACEMENTS, resolve

# neg decomposes into one prim: no DCE placement has anything to remove.
NEG = Program((TensorInput((3,), "float32"),), (Step("neg", "torch.neg({0})", (Ref(0),)),), (1,), seed=3)

# A bfloat16 add with alpha: its decomposition holds a check (prims.ne) that symcall's DCE removes.
ADD_BF16 = Program(
    (TensorInput((2,), "bfloat16"), TensorInput((2,), "bfloat16")),
    (Step("add", "torch.add({0}, {1}, alpha=2)", (Ref(0), Ref(1))),),
    (2,),
    seed=4,
)


def trees(outcome) -> list:
    """An outcome's traces as portable trees, names included (what a probe must leave as it was)."""
    from fuzzdce.core.portable_trace import portable_trace

    return [(label, portable_trace(t, with_text=False)) for label, t in outcome.traces]


def verdicts(evaluations) -> dict[str, list]:
    return {
        name: sorted((v.oracle, v.path, str(v.fault), v.message) for v in evaluation.violations)
        for name, evaluation in evaluations.items()
    }


def test_a_placement_that_changes_nothing_takes_stocks_compile(runs):
    """rdnp removes nothing from neg's decomposition: it is not compiled, its outcome is stock's."""
    rdnp = PLACEMENTS["rdnp"]
    evaluation = Evaluator()(NEG, [rdnp], paths=["jit", "jit-grad"])[rdnp.name]
    assert all(outcome.shared_from == "stock" for outcome in evaluation.outcomes.values()), evaluation.outcomes
    assert ("rdnp", "jit") not in compiled(runs) and ("stock", "jit") in compiled(runs), runs
    assert not evaluation.violations


def test_a_placement_whose_call_edits_is_compiled_and_its_fault_found(runs):
    """A wrong DCE (it drops the producer of its parent's output, a bfloat16 add's last
    ``convert_element_type``) edits a decomposition: compiled, and its fault shown as it is without sharing."""
    wrong = resolve("planted_dce:symcall_drops_output_producer")
    shared = Evaluator()(ADD_BF16, [wrong], paths=["jit"])
    assert not shared[wrong.name].outcomes["jit"].shared_from and (wrong.name, "jit") in compiled(runs)
    assert shared[wrong.name].violations
    assert verdicts(shared) == verdicts(Evaluator(share_compiles=False)(ADD_BF16, [wrong], paths=["jit"]))


def test_a_wrong_value_made_when_the_program_runs_is_never_shared():
    """A placement that rebinds add to sub after every DCE returns traces the probe can compare,
    and they differ; its wrong value is found with sharing as without."""
    wrong = resolve("planted:add_computes_sub")
    program = Program((TensorInput((3,)),), (Step("add", "torch.add({0}, {0})", (Ref(0),)),), (1,), seed=2)
    shared = Evaluator()(program, [wrong], paths=["jit"])
    assert not shared[wrong.name].outcomes["jit"].shared_from
    assert any(v.oracle == "outputs" for v in shared[wrong.name].violations)


def test_identity_replaces_nothing_and_is_compiled_again(runs):
    """``identity`` calibrates by compiling again: a placement that replaced nothing is never shared."""
    identity = PLACEMENTS["identity"]
    evaluation = Evaluator()(NEG, [identity], paths=["jit"])[identity.name]
    assert not evaluation.outcomes["jit"].shared_from and ("identity", "jit") in compiled(runs)


@pytest.mark.slow
@pytest.mark.parametrize("program", [NEG, ADD_BF16, DEAD_CODE_PROGRAM], ids=["neg", "add-bf16", "dead-code"])
def test_the_same_verdicts_with_and_without_sharing(program):
    """Precision and recall alike: every placement's violations on every path are what compiling
    it gives (the splitter's KeyError under symcall included)."""
    placements = [resolve(n) for n in ("rdnp", "symcall", "symcall-fixed", "planted_dce:symcall_drops_output_producer")]
    paths = ["jit", "jit-grad", "thunderfx"]
    shared = Evaluator()(program, placements, paths=paths)
    compiled = Evaluator(share_compiles=False)(program, placements, paths=paths)
    assert verdicts(shared) == verdicts(compiled)
    assert any(o.shared_from for e in shared.values() for o in e.outcomes.values())


def test_symcalls_edit_inside_the_splitter_is_seen():
    """symcall replaces ``Symbol.__call__`` only; the splitter calls it inside a function that
    symcall-fixed replaces. Probed together, symcall's call there is still probed."""
    program = Program((TensorInput((), "int32"),), (Step("mul", "torch.mul({0}, -1)", (Ref(0),)),), (1,), seed=1073)
    symcall, fixed = PLACEMENTS["symcall"], PLACEMENTS["symcall-fixed"]
    stock = run_path("thunderfx", program, PLACEMENTS["stock"], shadows=[symcall, fixed])
    assert "symcall" not in stock.unchanged_by and not stock.split_reasons
    assert run_path("thunderfx", program, symcall).split_reasons  # what compiling it shows


def test_stock_observed_alike_with_shadows():
    """The observers stand aside in a shadow: stock's DCE calls, grad rules and metadata are its own."""
    plain = run_path("jit-grad", ADD_BF16, PLACEMENTS["stock"])
    probed = run_path("jit-grad", ADD_BF16, PLACEMENTS["stock"], shadows=[PLACEMENTS["symcall"], PLACEMENTS["rdnp"]])
    for field in ("dce_calls", "grad_rules", "misstated", "error"):
        assert getattr(probed, field) == getattr(plain, field), field
    assert [label for label, _ in probed.traces] == [label for label, _ in plain.traces]


@contextlib.contextmanager
def rdnp_that_reverses_its_argument():
    """A placement whose version of ``remove_duplicate_number_proxies`` reverses the list it is given."""
    from thunder.core import transform_common

    original = transform_common.remove_duplicate_number_proxies

    def reversing(bsyms):
        bsyms.reverse()
        bsyms.reverse()
        bsyms.append(bsyms[-1]) if bsyms else None
        result = original(bsyms[:-1] if bsyms else bsyms)
        return result

    with patch_everywhere(transform_common, "remove_duplicate_number_proxies", reversing):
        yield


def untimed(trace) -> str:
    """A trace as printed, without how long its transform took."""
    return re.sub(r"\(took \d+ milliseconds\)", "", str(trace))


def test_a_shadow_that_changes_its_arguments_spoils_the_probe_once():
    """Stock's run is made again without shadows, and shares nothing; from then on that placement
    is not probed, so it spoils no later probe and the other placements share again."""
    from fuzzdce.core.model import Placement
    from fuzzdce.running.compile_sharing import changes_arguments, shares_compiles

    mutating = Placement("mutating-once", rdnp_that_reverses_its_argument)
    assert shares_compiles(mutating)
    probed = run_path("jit", NEG, PLACEMENTS["stock"], shadows=[mutating])
    plain = run_path("jit", NEG, PLACEMENTS["stock"])
    assert probed.unchanged_by == () and probed.error == plain.error
    assert any(note.startswith(PROBE_NOTE) and "changed its arguments" in note for note in probed.notes), probed.notes
    assert [untimed(t) for _, t in probed.traces] == [untimed(t) for _, t in plain.traces]
    assert "changed its arguments" in changes_arguments(mutating) and not shares_compiles(mutating)
    again = run_path("jit", NEG, PLACEMENTS["stock"], shadows=[mutating, PLACEMENTS["rdnp"]])
    assert not any(note.startswith(PROBE_NOTE) for note in again.notes), again.notes
    assert again.unchanged_by == ("rdnp",), again.unchanged_by


def test_a_gated_placement_is_never_probed():
    from fuzzdce.running.compile_sharing import shares_compiles
    from fuzzdce.running.decisions import Gating, gated

    assert shares_compiles(PLACEMENTS["rdnp"]) and not shares_compiles(gated(PLACEMENTS["rdnp"], Gating.first(0)))
    assert not shares_compiles(PLACEMENTS["stock"])


def test_the_summary_counts_and_merges_the_paths_stock_served():
    from fuzzdce.fuzzing.campaign import compiles_summary
    from fuzzdce.results.merge import merged_compiles

    one = compiles_summary({("rdnp", True): 5, ("rdnp", False): 1, ("symcall", False): 6})
    assert one == {"rdnp": {"compiled": 1, "as_stock": 5}, "symcall": {"compiled": 6, "as_stock": 0}}
    assert merged_compiles([{"compiles": one}, {"compiles": one}, {}])["rdnp"] == {"compiled": 2, "as_stock": 10}
    assert compiles_summary({}) is None


@contextlib.contextmanager
def cos_patched_in_torch():
    """A placement whose effect is outside Thunder: torch.cos itself replaced."""
    import torch

    original = torch.cos
    torch.cos = lambda x: original(x) + 1
    try:
        yield
    finally:
        torch.cos = original


@contextlib.contextmanager
def thunder_flag_set():
    """A placement whose effect is a flag of Thunder's, not a function."""
    from thunder.core import transform_common

    transform_common.FUZZDCE_TEST_FLAG = True
    try:
        yield
    finally:
        del transform_common.FUZZDCE_TEST_FLAG


@pytest.mark.parametrize("factory", [cos_patched_in_torch, thunder_flag_set])
def test_a_placement_with_effects_beyond_thunders_functions_is_never_probed(factory):
    from fuzzdce.core.model import Placement
    from fuzzdce.running.compile_sharing import other_effects, shares_compiles

    placement = Placement(f"test-{factory.__name__}", factory)
    assert other_effects(placement) and not shares_compiles(placement)
    assert not other_effects(PLACEMENTS["symcall-fixed"])


def test_another_librarys_counters_moving_do_not_stop_probing():
    """Hypothesis times its garbage collections in module globals, which move while a placement is
    entered: a placement is judged by what it replaced, not by another library's clock."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from fuzzdce.running import compile_sharing

    @settings(max_examples=5, database=None)
    @given(st.lists(st.integers()))
    def draw(values):
        pass

    draw()
    compile_sharing._OTHER_EFFECTS.clear()
    assert all(compile_sharing.shares_compiles(PLACEMENTS[name]) for name in ("rdnp", "symcall", "symcall-fixed"))


def test_a_placement_that_registers_a_grad_rule_otherwise_is_never_probed_and_stock_stays_stock():
    """``cos_grad_flipped`` changes an entry of Thunder's grad-rule table, which no call shows: it
    is compiled, and stock's probed run is stock's (each placement is left once its replacements
    are found)."""
    from fuzzdce.running.compile_sharing import other_effects

    flipped = resolve("planted:cos_grad_flipped")
    assert "entries of thunder.core.transforms._grad_fn_map" in other_effects(flipped)
    program = Program((TensorInput((3,)),), (Step("cos", "torch.cos({0})", (Ref(0),)),), (1,), seed=5)
    evaluations = Evaluator()(program, [flipped, PLACEMENTS["rdnp"]], paths=["jit-grad"])
    assert evaluations["stock"].violations == [] and evaluations[flipped.name].violations


@pytest.mark.parametrize("path", ["jit-symbolic", "thunderfx-dynamic"])
def test_a_probe_leaves_no_shape_query_in_stocks_trace_under_symbolic_shapes(path):
    """Under symbolic values reading a tensor proxy's shape records a ``prims.shape`` call. The
    probe compares what the calls made outside the trace: stock's probed trace is its unprobed one
    (before, the comparison's reads stayed in it: "i0 defined twice"), and the probe shares."""
    from fuzzdce.oracles import names

    plain = run_path(path, DEAD_CODE_PROGRAM, PLACEMENTS["stock"])
    probed = run_path(path, DEAD_CODE_PROGRAM, PLACEMENTS["stock"], shadows=[PLACEMENTS["symcall"]])
    assert names.check(probed, None) == []
    assert trees(probed) == trees(plain)
    assert run_path(path, NEG, PLACEMENTS["stock"], shadows=[PLACEMENTS["symcall"]]).unchanged_by == ("symcall",)


# Found by a seven-placement campaign: identity's compile differed from stock's probed one on
# thunderfx by its names alone (dce-sound: "logical_and has subsymbol t10 = bitwise_and(t8, t9),
# which stock does not have"), because the snapshot's restore gave the trace a new names set while
# another trace held the old one.
SPLIT_PROGRAM = """
import torch


def program(v0, v1, v2):
    v3 = v2.rot90(-5, (1, -1))
    v4 = torch.logical_and(v0, v0)
    v5 = torch.lt(v1, v1)  # dead
    v6 = v5.int()  # dead
    return (v4, v3)


def make_inputs(requires_grad=False):
    g = torch.Generator().manual_seed(0)
    return [
        torch.randint(-2, 3, (), generator=g, dtype=torch.int64),
        torch.randint(1, 6, (1, 1), generator=g, dtype=torch.int64).mT,
        torch.rand((5, 5, 5), generator=g) < 0.5,
    ]
"""


def test_a_probed_compile_is_stocks_own_names_included(tmp_path):
    """Stock's probed traces are its unprobed ones, names and all, where the splitter's shadow ran
    beside it (symcall-fixed replaces ``try_execute_thunder_symbol``): the snapshot is restored in
    place. With a new names set instead, a later trace's names shift by one."""
    from fuzzdce.running.script_program import load_script

    script = tmp_path / "repro.py"
    script.write_text(SPLIT_PROGRAM)
    program = load_script(script)

    plain = run_path("thunderfx", program, PLACEMENTS["stock"])
    probed = run_path("thunderfx", program, PLACEMENTS["stock"], shadows=[PLACEMENTS["symcall-fixed"]])
    assert probed.unchanged_by == ("symcall-fixed",)
    assert trees(probed) == trees(plain)

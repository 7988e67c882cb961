"""Decision bisection: a placement's calls gated one by one, the one that breaks a failure named, and
the bug known by it. Planted wrong placements (``planted_dce``) each name their one decision; the
correct one none; the seed's program names the raise on ``ltorch.add`` and not the ``prims.ne`` removal."""

import dataclasses
import json

import pytest
from builders import StandInCampaign, raised, split, store_of

from fuzzdce.core.decisions import Bisection, Edit, Removed, describe, summary
from fuzzdce.core.findings import program_text
from fuzzdce.core.portable_trace import Name, Node
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing import bisection
from fuzzdce.fuzzing.bisection import bisect_failure, regressions
from fuzzdce.oracles import ORACLES
from fuzzdce.running import decisions, interception
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.placements import resolve


def program_of(*steps, inputs=((3, 4),), requires_grad=True):
    """A program of ``steps`` (name, template, argument indices), returning the last's value; each
    input a shape, or (shape, dtype)."""
    made = tuple(Step(name, template, tuple(Ref(i) for i in refs)) for name, template, refs in steps)
    specs = [(i, "float32") if isinstance(i[0], int) else i for i in inputs]
    tensors = tuple(
        TensorInput(shape, dtype, requires_grad=requires_grad and dtype.startswith("float")) for shape, dtype in specs
    )
    return Program(tensors, made, (len(inputs) + len(made) - 1,), seed=3)


COS_PLUS_SIN = program_of(
    ("cos", "torch.cos({0})", (0,)), ("sin", "torch.sin({0})", (0,)), ("add", "torch.add({0}, {1})", (1, 2))
)
ADD_ALPHA = program_of(("add", "torch.add({0}, {1}, alpha=2)", (0, 1)), inputs=((3, 4), (3, 4)))
INT_PLUS_FLOAT = program_of(("add", "torch.add({0}, {1})", (0, 1)), inputs=(((3, 4), "int64"), (3, 4)))
CLONE_ADD_ = program_of(("add_", "{0}.clone().add_(1)", (0,)))
SOFTMAX = program_of(("softmax", "torch.softmax({0}, -1)", (0,)))
EXPAND_MUL = program_of(("expand", "{0}.expand(3, 4)", (0,)), ("mul", "torch.mul({0}, {1})", (2, 1)), inputs=((1, 4), (3, 4)))


@pytest.fixture(scope="module")
def evaluator():
    return Evaluator()


def evaluate_with(evaluator):
    def evaluate(program, placements, paths, **options):
        return evaluator(program, placements, paths=paths, **options)

    return evaluate


def the_regression(evaluator, program, placement, path):
    found = regressions(evaluate_with(evaluator), program, placement, resolve("stock"), [path])
    assert found, f"{placement.name} shows no failure on {path} that stock passes"
    return found[0]


def bisected(evaluator, program, name, path):
    placement = resolve(name)
    failure = the_regression(evaluator, program, placement, path)
    return failure, bisect_failure(evaluate_with(evaluator), program, placement, failure)


# --- the seed's own program --------------------------------------------------------------------------


def test_the_seeds_program_names_the_raise_on_add_and_not_the_ne_removal(evaluator):
    failure, found = bisected(evaluator, COS_PLUS_SIN, "symcall", "thunderfx")
    culprit = found.culprit
    assert failure.oracle == "splits"
    assert culprit is not None and culprit.kind == "raise", found
    assert culprit.error_type == "KeyError" and culprit.before.startswith("t1 = ltorch.add(t0, t1")
    assert culprit.malformation_kinds == (decisions.REUSES_A_NAME,)
    assert culprit.error_frame == "thunder/core/transform_common.py:dce"
    assert found.alone and found.without
    (other,) = found.others
    assert other.kind == "removal" and [r.symbol for r in other.removed] == ["ne"]
    words = "\n".join(describe(found, ORACLES))
    assert "raises KeyError: 't1'" in words and "whose output name t1 is also an input" in words
    assert "the graph is not split" in words
    assert "The program's other edits do not matter: the removal of `i0 = prims.ne(alpha, 1)`" in words
    assert found.runs <= 2 + len(found.edits) + 2


# --- the property bisection rests on ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "program", "path"),
    [("symcall", COS_PLUS_SIN, "thunderfx"), ("planted_dce:symcall_dce_raises_on_broadcast", EXPAND_MUL, "jit")],
    ids=["symcall", "raising"],
)
def test_no_edit_applied_passes_and_every_edit_applied_fails(evaluator, name, program, path):
    placement = resolve(name)
    failure = the_regression(evaluator, program, placement, path)
    shown = {}
    for gating in (decisions.Gating.first(0), decisions.Gating.every(), decisions.Gating.recording()):
        under = decisions.gated(placement, gating)
        violations = evaluator(program, [under], paths=[path], alone=True, cache=False, localise=False)[under.name].violations
        shown[gating] = any(v.oracle == failure.oracle for v in violations)
    assert shown == {decisions.Gating.first(0): False, decisions.Gating.every(): True, decisions.Gating.recording(): True}


def test_a_gated_placement_leaves_thunder_exactly_as_it_was():
    before = interception.attributes_of(interception.thunder_namespaces())
    gate = decisions.gated(resolve("planted_dce:symcall_folds_number_proxy"), decisions.Gating.first(3))
    with gate():
        during = interception.attributes_of(interception.thunder_namespaces())
    after = interception.attributes_of(interception.thunder_namespaces())
    changed = {k for k in before if before[k][2] is not during.get(k, (None, None, None))[2]}
    assert changed, "the gate replaced nothing"
    assert {k: v[2] for k, v in before.items()} == {k: v[2] for k, v in after.items() if k in before}


# --- gatings, and a gated run told apart from its placement by data -----------------------------------


def test_each_gating_does_and_observes_the_calls_its_constructor_names():
    Gating = decisions.Gating
    calls = range(5)

    def done(gating):
        return [i for i in calls if gating.applies(i)]

    def observed(gating):
        return [i for i in calls if gating.observes(i)]

    assert (done(Gating.recording()), observed(Gating.recording())) == ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4])
    assert (done(Gating.every()), observed(Gating.every())) == ([0, 1, 2, 3, 4], [])
    assert (done(Gating.first(0)), observed(Gating.first(0))) == ([], [])
    assert (done(Gating.first(3, observe=2)), observed(Gating.first(3, observe=2))) == ([0, 1, 2], [2])
    assert (done(Gating.all_but(1)), observed(Gating.all_but(1))) == ([0, 2, 3, 4], [])
    assert (done(Gating.only_call(3)), observed(Gating.only_call(3))) == ([3], [3])
    narrowed = Gating.narrowed(2, (0, 1))
    assert (done(narrowed), [i for i in calls if narrowed.narrows(i)]) == ([0, 1], [2])
    assert not any(g.narrows(i) for g in (Gating.recording(), Gating.first(2)) for i in calls)


def test_a_gating_that_would_need_a_precedence_cannot_be_made():
    Gating = decisions.Gating
    for conflicting in (
        lambda: dataclasses.replace(Gating.first(2, observe=1), observes_every=True),  # one call observed, or every one
        lambda: dataclasses.replace(Gating.all_but(2), narrowing=(0,)),  # a narrowed call follows a prefix
        lambda: dataclasses.replace(Gating.only_call(2), n=None),  # only which call?
    ):
        with pytest.raises(ValueError):
            conflicting()


def test_gatings_are_made_by_their_constructors_only():
    """Which calls a run gates is said by its constructor's name, never by fields set by hand."""
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parent.parent
    home = root / "fuzzdce" / "running" / "decisions.py"
    sources = [p for p in [*(root / "fuzzdce").rglob("*.py"), *(root / "tests").rglob("*.py")] if p != home]
    assert [str(p.relative_to(root)) for p in sources if re.search(r"\bGating\(", p.read_text())] == []


def test_a_gated_placement_keeps_its_placements_name_and_carries_its_gating_as_data():
    placement = resolve("rdnp")
    under = decisions.gated(placement, decisions.Gating.first(2))
    assert under.name == placement.name and placement.gating is None and under.gating == decisions.Gating.first(2)
    assert under.display_name == "rdnp [the first 2 calls]" and placement.display_name == "rdnp"


def test_a_gated_run_never_reuses_a_cached_result_of_its_placement_nor_the_reverse():
    from fuzzdce.core.model import EAGER, Outcome
    from fuzzdce.running.evaluate import PathResult

    ran = []

    def run_job(job):
        ran.append((job.placement.gating, job.path))
        return Outcome(EAGER, "stock") if job.path == EAGER else PathResult(Outcome(job.path, job.placement.name), [])

    evaluator = Evaluator(run_job, cache=True)
    placement = resolve("rdnp")
    first = decisions.gated(placement, decisions.Gating.first(0))
    recording = decisions.gated(placement, decisions.Gating.recording())
    for under in (placement, first, recording, first, placement):
        evaluator(ONE, [under], paths=["jit"], alone=True)
    # Each of the three ran once on jit; asked again, each is its own cached job (the cache works).
    assert [gating for gating, path in ran if path == "jit"] == [None, first.gating, recording.gating]


def test_stock_serves_its_placement_never_a_gated_run_of_it():
    """Stock's outcome on a path where the probe saw a placement do as stock is that placement's
    (``LocalJobs`` keeps it for the program): a gated run of the same name runs its own."""
    from fuzzdce.core.model import Outcome
    from fuzzdce.running.evaluate import stock_serves

    stock = Outcome("jit", "stock", unchanged_by=("rdnp",))
    placement = resolve("rdnp")
    assert stock_serves(stock, placement)
    assert not stock_serves(stock, decisions.gated(placement, decisions.Gating.recording()))
    assert not stock_serves(None, placement)


def test_a_gated_run_is_evaluated_alone():
    under = decisions.gated(resolve("rdnp"), decisions.Gating.first(0))
    with pytest.raises(ValueError, match="alone"):
        Evaluator(lambda job: pytest.fail("ran"))(ONE, [under], paths=["jit"])


def test_what_a_placement_replaces_is_found_by_comparing_thunders_attributes():
    assert decisions.patched_labels(resolve("symcall")) == ["thunder.core.symbol.Symbol.__call__"]
    assert decisions.patched_labels(resolve("rdnp")) == ["thunder.core.transform_common.remove_duplicate_number_proxies"]
    assert decisions.patched_labels(resolve("stock")) == []


# --- planted wrong placements: one decision each --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "program", "path", "expected"),
    [
        # Symbol.__call__ patched: the conversion producing the parent's output dropped.
        ("planted_dce:symcall_drops_output_producer", INT_PLUS_FLOAT, "jit-grad", ("convert_element_type", "parent output")),
        # remove_duplicate_number_proxies patched: a DONT_DCE subsymbol dropped.
        ("planted_dce:rdnp_ignores_dont_dce", CLONE_ADD_, "jit", ("copy_", "DONT_DCE")),
        # A user module's patch of transform_common.dce: a broadcast a kept sibling reads dropped.
        ("planted_dce:user_dce_drops_read_by_kept", SOFTMAX, "jit", ("broadcast_in_dim", "read by kept")),
        # Symbol.__call__ patched: a number's conversion taken for folded (the fast subset has one
        # Symbol.__call__ patch above).
        pytest.param(
            "planted_dce:symcall_folds_number_proxy",
            ADD_ALPHA,
            "thunderfx",
            ("convert_element_type", "read by kept"),
            marks=pytest.mark.slow,
        ),
    ],
    ids=["output-producer", "dont-dce", "read-by-kept", "number-proxy"],
)
def test_a_wrong_removal_is_named_with_why_unpatched_thunder_keeps_it(evaluator, name, program, path, expected):
    symbol, reason = expected
    _, found = bisected(evaluator, program, name, path)
    culprit = found.culprit
    assert culprit is not None and culprit.kind == "removal", describe(found)
    assert found.identity is not None and found.identity[:2] == (name, "removal")
    ((removed_symbol, reasons, _),) = found.identity[2]
    assert removed_symbol == symbol and reason in reasons, found.identity
    assert "removes `" in "\n".join(describe(found))


def test_a_dce_raising_on_a_well_formed_symbol_is_named_as_its_own_failure(evaluator):
    _, found = bisected(evaluator, EXPAND_MUL, "planted_dce:symcall_dce_raises_on_broadcast", "jit")
    culprit = found.culprit
    assert culprit.kind == "raise" and culprit.error_type == "RuntimeError" and culprit.malformed == ()
    assert culprit.error_frame == "planted_dce.py:dce_or_raise"
    assert "a well-formed bound symbol: the DCE itself fails there" in describe(found)[0]


def test_the_correct_placement_shows_no_failure_to_bisect(evaluator):
    for program in (COS_PLUS_SIN, ADD_ALPHA, EXPAND_MUL):
        assert not regressions(
            evaluate_with(evaluator), program, resolve("planted_dce:symcall_correct"), resolve("stock"), ["thunderfx", "jit-grad"]
        )


def test_a_build_or_stock_is_not_bisectable():
    found = bisection.bisect(resolve("stock"), lambda gating: pytest.fail("ran"))
    assert found.identity is None and "stock" in found.note
    assert describe(found) == [f"decision: not bisected: {found.note}"]


def test_the_other_edits_are_said_from_their_data():
    """Each other edit is said from its removals' fields: a parent printed with a tuple argument
    (``, (2, 3)``) is said whole, never cut where its words look like the reason's parenthesis."""
    culprit = Edit(
        1, "label", "removal", "Symbol.__call__", removed=(Removed("t2 = prims.exp(t1)", "exp", "t3 = ltorch.exp(t1)", 0),)
    )
    removal = Removed("t4 = prims.neg(a)", "neg", "t6 = ltorch.reshape(a, (2, 3))", 0)
    pruning = Removed("(t7, t8) = prims.split(a)", "split", "t9 = ltorch.g(a)", 0, pruned=True)
    others = (Edit(0, "label", "removal", "Symbol.__call__", removed=(removal,)), Edit(2, "l", "removal", removed=(pruning,)))
    found = Bisection("p", (others[0], culprit, others[1]), culprit, alone=True, without=True, runs=5, path="jit")
    said = (
        "The program's other edits do not matter: the removal of `t4 = prims.neg(a)` from `t6 = ltorch.reshape(a, (2, 3))`; "
        "the pruning of outputs of `(t7, t8) = prims.split(a)` from `t9 = ltorch.g(a)`."
    )
    assert said in describe(found)
    assert summary(found) == [describe(found)[0], said]


def test_a_call_that_removed_dozens_is_said_in_a_line_among_the_edits_that_do_not_matter():
    """The list of edits that do not matter names a call's first removals and counts the rest."""
    from fuzzdce.core.decisions import MOST_REMOVALS_SAID

    culprit = Edit(
        1, "label", "removal", "Symbol.__call__", removed=(Removed("t2 = prims.exp(t1)", "exp", "t3 = ltorch.exp(t1)", 0),)
    )
    many = tuple(Removed(f"i{k} = prims.eq(i0, 1)", "eq", "t9 = ltorch.mul(a, b)", 0) for k in range(MOST_REMOVALS_SAID + 10))
    found = Bisection("p", (Edit(0, "label", "removal", "Symbol.__call__", removed=many), culprit), culprit, alone=True, runs=5)
    (line,) = [w for w in describe(found) if w.startswith("The program's other edits do not matter")]
    assert line.count("the removal of") == MOST_REMOVALS_SAID and line.endswith(" and 10 more in that call."), line


def test_bisected_failures_are_grouped_by_their_decision():
    """``fuzzdce bisect`` says one decision once, under every failure it causes (``joining.by_decision``);
    a failure whose bisection named none stands alone."""
    from fuzzdce.core.joining import by_decision

    reshape, add, none = decided("p", "reshape"), decided("p", "add"), decision("p", "reshape")
    found = [("split", reshape), ("raise", none), ("wrong", add), ("dce-sound", reshape), ("again", none)]
    groups = by_decision(found, lambda pair: pair[1].identity)
    assert [[failure for failure, _ in group] for group in groups] == [["split", "dce-sound"], ["raise"], ["wrong"], ["again"]]


# --- a bug is known by its decision ---------------------------------------------------------------------

SPLIT = split("thunderfx", "'t0'", op="abs")
RAISE = raised("jit", "UnboundLocalError", "t1", "thunder/executors/torchex.py:f", symbol="reshape")
ONE = program_of(("abs", "torch.abs({0})", (0,)))
TWO = program_of(("abs", "torch.abs({0})", (0,)), ("cos", "torch.cos({0})", (1,)))


def decision(placement, symbol, reason="parent output"):
    removed = Removed(f"t1 = prims.{symbol}(a)", symbol, "t1 = ltorch.x(a)", 0, (reason,), ("it produces x's output t1",))
    return Bisection(
        placement,
        (Edit(3, "thunder.core.symbol.Symbol.__call__", "removal", "Symbol.__call__", removed=(removed,)),),
        None,
        runs=3,
    )


def decided(placement, symbol, reason="parent output"):
    made = decision(placement, symbol, reason)
    return Bisection(made.placement, made.edits, made.edits[0], alone=True, without=True, runs=4, path="jit", oracle="raises")


def regressions_of(*entries):
    """A store of regressions under "p", each (violation, program, decision)."""
    return store_of(*((Verdict.REGRESSION, ("p",), violation, program, None, found) for violation, program, found in entries))


def made_on(program, placement="p", symbol="reshape"):
    """``decided(placement, symbol)``, bisected on ``program``."""
    import dataclasses

    return dataclasses.replace(decided(placement, symbol), program=program_text(program))


def test_a_gated_run_that_does_not_finish_ends_the_bisection_with_a_note():
    """A gated run cut at its job's limit shows no failure, and read so it would say the failure
    goes without a call the program never needed: the search stops there and says why instead."""
    found = bisect_failure(timing_out([]), ONE, resolve(RAISES_ON_BROADCAST), RAISE)
    assert found.culprit is None and found.identity is None and found.runs == 1 and not found.finished
    assert describe(found) == [
        "decision: not bisected: a gated run on jit did not finish (timeout: jit ran past its time limit of 60 s) (1 runs)"
    ]
    assert found.made_on(program_text(ONE))


def test_a_gated_run_after_the_recording_run_is_cut_at_a_multiple_of_its_time():
    """The recording run (every call shadowed) is a bisection's slowest: a later gated run far past
    it is stuck, not slow, and is cut there instead of at its job's own limit."""
    from fuzzdce.core.decisions import Edit
    from fuzzdce.core.model import Outcome
    from fuzzdce.fuzzing.bisection import GATED_RUN_LEAST, gated_run_limit
    from fuzzdce.running.evaluate import Evaluation

    limits = []

    def evaluate(program, placements, paths, timeout=None, **options):
        limits.append(timeout)
        (under,) = placements
        outcome = Outcome(paths[0], under.name, seconds=7.0, edits=[Edit(0, "Symbol.__call__", "raise")], gated_calls=1)
        return {under.name: Evaluation(program, under.name, Outcome("eager", "stock"), {paths[0]: outcome}, [RAISE])}

    found = bisect_failure(evaluate, ONE, resolve(RAISES_ON_BROADCAST), RAISE)
    assert found.runs > 1, found
    assert limits[0] is None and len(limits) > 1, limits
    assert set(limits[1:]) == {gated_run_limit(7.0)} and gated_run_limit(7.0) > 7.0, limits
    assert gated_run_limit(0.1) == GATED_RUN_LEAST


def timing_out(calls):
    """A stand-in evaluate whose every gated run is cut at its job's limit, recording each call."""
    from fuzzdce.core.model import JobFailure, Outcome
    from fuzzdce.core.vocabulary import FailureKind
    from fuzzdce.running.evaluate import Evaluation

    def evaluate(program, placements, paths, **options):
        calls.append((program, paths))
        (under,) = placements
        outcome = Outcome(paths[0], under.name)
        outcome.failure = JobFailure(FailureKind.TIMEOUT, "jit ran past its time limit of 60 s")
        return {under.name: Evaluation(program, under.name, Outcome("eager", "stock"), outcomes={paths[0]: outcome})}

    return evaluate


def raise_edit(index, frame):
    """Call ``index``'s edit: the placement raised a RuntimeError in ``frame`` where Thunder returned."""
    return Edit(
        index,
        "Symbol.__call__",
        "raise",
        "Symbol.__call__",
        before=f"t{index} = ltorch.f(a)",
        error_type="RuntimeError",
        error_kind="RuntimeError",
        error_message="planted",
        error_frame=frame,
    )


def test_a_check_of_the_culprit_that_does_not_finish_leaves_its_answer_unknown_and_the_decision_named():
    """The prefixes name the culprit; the run of every call but it mixes the placement's calls with
    unpatched Thunder's as no prefix does, and may not finish (thunderfx: the placement's raise in
    Thunder's compile after the splitter's check passed). Its answer is unknown, and says so; the
    decision stands, and is the bug's identity."""
    from fuzzdce.core.decisions import Check
    from fuzzdce.core.model import JobFailure, Outcome
    from fuzzdce.core.vocabulary import FailureKind
    from fuzzdce.running.decisions import Calls
    from fuzzdce.running.evaluate import Evaluation

    def evaluate(program, placements, paths, **options):
        (under,) = placements
        gating = under.gating
        outcome = Outcome(paths[0], under.name, seconds=1.0, gated_calls=2)
        if gating.calls is Calls.ALL_BUT:
            outcome.failure = JobFailure(FailureKind.TIMEOUT, "no result within 10 s")
        outcome.edits = [raise_edit(i, "planted.py:f") for i in (0, 1) if gating.observes(i)]
        shown = [RAISE] if gating.applies(1) and outcome.failure is None else []
        return {under.name: Evaluation(program, under.name, Outcome("eager", "stock"), {paths[0]: outcome}, shown)}

    found = bisect_failure(evaluate, ONE, resolve(RAISES_ON_BROADCAST), RAISE)
    assert found.finished and found.culprit.index == 1 and found.alone is True and found.without is None, found
    assert found.unanswered == ((Check.WITHOUT, "timeout: no result within 10 s"),)
    assert found.identity is not None
    said = describe(found)
    assert (
        "Whether the failure goes with that one call done as unpatched Thunder does it is not known: its run did not finish "
        "(timeout: no result within 10 s)." in said
    ), said
    assert Bisection.from_json(json.loads(json.dumps(found.to_json()))) == found


def two_raises_the_second_failing(same_frame=False):
    """A stand-in evaluate whose recording run finds two raises (calls 0 and 1, made in different
    frames, or one frame: one decision) and whose failure shows where call 1 is done as the
    placement does it; and the gatings it was asked for."""
    from fuzzdce.core.model import Outcome
    from fuzzdce.running.evaluate import Evaluation

    asked = []

    def edit(index):
        return raise_edit(index, f"planted.py:f{0 if same_frame else index}")

    def evaluate(program, placements, paths, **options):
        (under,) = placements
        asked.append(under.gating)
        outcome = Outcome(paths[0], under.name, seconds=1.0, gated_calls=2)
        outcome.edits = [edit(i) for i in (0, 1) if under.gating.observes(i)]
        shown = [RAISE] if under.gating.applies(1) else []
        return {under.name: Evaluation(program, under.name, Outcome("eager", "stock"), {paths[0]: outcome}, shown)}

    return evaluate, edit, asked


def test_a_cause_of_a_decision_already_known_is_decided_in_two_runs():
    """A decision an earlier cause was bisected to is tried first: the recording run, then the
    first call making it, alone; the failure shows, so the search ends there and the cause is
    known by that decision (its bug joins the earlier one's)."""
    evaluate, edit, asked = two_raises_the_second_failing()
    placement = resolve(RAISES_ON_BROADCAST)
    known = {(placement.name, *edit(1).key())}
    found = bisect_failure(evaluate, ONE, placement, RAISE, known=known)
    assert found.known and found.runs == 2 and found.culprit.index == 1 and found.alone, found
    assert found.identity in known
    assert asked == [decisions.Gating.recording(), decisions.Gating.only_call(1)]
    assert describe(found)[-1].endswith("2 runs on jit; the decision of an earlier cause, tried alone first)"), describe(found)


def test_each_call_making_a_known_decision_is_tried_alone_until_one_shows_the_failure():
    """Two calls make the known decision (a raise in one frame, at two ops) and the failure needs
    the second (a split at its op): the first is tried alone, then the second, which shows it."""
    evaluate, edit, asked = two_raises_the_second_failing(same_frame=True)
    placement = resolve(RAISES_ON_BROADCAST)
    found = bisect_failure(evaluate, ONE, placement, RAISE, known={(placement.name, *edit(0).key())})
    assert found.known and found.runs == 3 and found.culprit.index == 1, found
    assert asked == [decisions.Gating.recording(), decisions.Gating.only_call(0), decisions.Gating.only_call(1)]


def test_a_known_decision_that_alone_does_not_fail_leaves_the_whole_search_to_name_the_culprit():
    evaluate, edit, asked = two_raises_the_second_failing()
    placement = resolve(RAISES_ON_BROADCAST)
    found = bisect_failure(evaluate, ONE, placement, RAISE, known={(placement.name, *edit(0).key())})
    assert not found.known and found.culprit.index == 1 and found.alone and found.without, found
    assert asked[:2] == [decisions.Gating.recording(), decisions.Gating.only_call(0)] and decisions.Gating.first(0) in asked


def test_a_program_whose_gated_run_did_not_finish_is_not_bisected_again_on_that_path():
    """A hang costs its job's whole limit: the second cause of that program and path is not
    bisected there (it says why), a cause on another program is."""
    import time

    from fuzzdce.fuzzing.shrinking import Shrinker
    from fuzzdce.fuzzing.time_plan import TimePlan

    calls = []
    store = regressions_of(
        (RAISE, ONE, None),
        (raised("jit", "UnboundLocalError", "t1", "thunder/core/prims.py:take", symbol="reshape"), ONE, None),
        (SPLIT, TWO, None),
    )
    placements = [dataclasses.replace(resolve(RAISES_ON_BROADCAST), name="p")]
    campaign = StandInCampaign(store, evaluate=timing_out(calls), placements=placements, plan=TimePlan(600, time.time()))
    Shrinker(campaign).decide_found(list(store))
    assert [program for program, _ in calls] == [ONE, TWO], "one bisection per program and path"
    notes = sorted(describe(f.decision)[0] for f in store)
    assert notes == [
        "decision: not bisected: a gated run of its program on jit did not finish before",
        "decision: not bisected: a gated run on jit did not finish (timeout: jit ran past its time limit of 60 s) (1 runs)",
        "decision: not bisected: a gated run on thunderfx did not finish (timeout: jit ran past its time limit of 60 s) (1 runs)",
    ], notes


def test_the_causes_a_program_shows_on_one_path_share_their_gated_runs():
    """A gated run shows every failure of its path: two causes of one program, path and placement
    are decided from the same runs, each asked for once; a cause on another path has its own."""
    import time

    from fuzzdce.core.decisions import Edit
    from fuzzdce.core.model import Outcome
    from fuzzdce.fuzzing.shrinking import Shrinker
    from fuzzdce.fuzzing.time_plan import Phase, TimePlan
    from fuzzdce.running.evaluate import Evaluation

    other = raised("jit", "UnboundLocalError", "t1", "thunder/core/prims.py:take", symbol="reshape")
    asked = []

    def evaluate(program, placements, paths, **options):
        asked.append(paths[0])
        (under,) = placements
        outcome = Outcome(paths[0], under.name, seconds=1.0, edits=[Edit(0, "Symbol.__call__", "raise")], gated_calls=1)
        shown = [RAISE, other, SPLIT] if under.gating.applies(0) else []
        return {under.name: Evaluation(program, under.name, Outcome("eager", "stock"), {paths[0]: outcome}, shown)}

    store = regressions_of((RAISE, ONE, None), (other, ONE, None), (SPLIT, ONE, None))
    placements = [dataclasses.replace(resolve(RAISES_ON_BROADCAST), name="p")]
    campaign = StandInCampaign(store, evaluate=evaluate, placements=placements, plan=TimePlan(600, time.time()))
    Shrinker(campaign).decide_found(list(store))
    first, second, on_thunderfx = (next(f.decision for f in store if f.violation == v) for v in (RAISE, other, SPLIT))
    # The first cause's whole search; the second cause's decision, known by then, is tried first
    # from the same runs (none asked again); the thunderfx cause tries it in runs of its own.
    assert not first.known and asked.count("jit") == first.runs > 2, (asked, first)
    assert second.known and second.runs == 2 and second.identity == first.identity, second
    assert on_thunderfx.known and asked.count("thunderfx") == on_thunderfx.runs == 2, (asked, on_thunderfx)
    assert campaign.phases.seconds[Phase.DECIDING] > 0


def test_a_finding_given_a_smaller_program_drops_the_decision_made_on_its_larger_one():
    store = regressions_of((RAISE, TWO, made_on(TWO)))
    (finding,) = store
    store.add(Verdict.REGRESSION, ("p",), RAISE, TWO)  # the same program again: its decision stands
    assert finding.decision.made_on(program_text(TWO))
    _, change = store.add(Verdict.REGRESSION, ("p",), RAISE, ONE)
    assert str(change) == "smaller" and finding.program == ONE and finding.decision is None


def test_merged_lanes_keep_the_decision_of_the_program_they_keep():
    """Two lanes' copies of one finding: the smaller program wins with its own decision, or none;
    a decision bisected on the other's program never comes with it."""
    smaller_decided, larger_decided = (
        regressions_of((RAISE, ONE, made_on(ONE))),
        regressions_of((RAISE, TWO, made_on(TWO, symbol="add"))),
    )
    smaller_decided.merge(larger_decided)
    ((finding),) = smaller_decided
    assert finding.program == ONE and finding.decision.made_on(program_text(ONE))
    undecided, larger = regressions_of((RAISE, ONE, None)), regressions_of((RAISE, TWO, made_on(TWO)))
    undecided.merge(larger)
    ((finding),) = undecided
    assert finding.program == ONE and finding.decision is None
    larger, undecided = regressions_of((RAISE, TWO, made_on(TWO))), regressions_of((RAISE, ONE, None))
    larger.merge(undecided)
    ((finding),) = larger
    assert finding.program == ONE and finding.decision is None


def test_failures_of_one_decision_are_one_bug_whatever_they_show():
    store = store_of(
        (Verdict.REGRESSION, ("p",), SPLIT, ONE, None, decided("p", "reshape")),
        (Verdict.REGRESSION, ("p",), RAISE, TWO, None, decided("p", "reshape")),
    )
    (bug,) = store.bugs()
    assert "decision | p | removal" in bug.key
    assert bug.decision.identity == decided("p", "reshape").identity
    assert any(why.startswith("same decision") for why in bug.why.values())


def test_two_decisions_are_two_bugs_even_where_their_failures_share_a_fault():
    store = store_of(
        (Verdict.REGRESSION, ("p",), SPLIT, ONE, None, decided("p", "reshape")),
        (Verdict.REGRESSION, ("p",), SPLIT, TWO, None, decided("p", "add")),
    )
    store.findings = {}  # the same fault on two programs is one finding: give each its own
    for program, found in ((ONE, decided("p", "reshape")), (TWO, decided("p", "add"))):
        finding, _ = store.add(Verdict.REGRESSION, ("p",), SPLIT if program is ONE else RAISE, program)
        finding.decision = found
    assert len(store.bugs()) == 2


def test_without_a_single_edit_a_bug_keeps_its_failures_identity():
    store = store_of((Verdict.REGRESSION, ("p",), SPLIT, ONE, None, decision("p", "reshape")))
    (bug,) = store.bugs()
    assert "decision" not in bug.key and bug.decision.identity is None


def test_a_decision_survives_the_bug_record_and_is_said_in_its_report(tmp_path):
    from fuzzdce.results.records import BugRecord
    from fuzzdce.results.report import bug_lines

    (bug,) = store_of((Verdict.REGRESSION, ("p",), SPLIT, ONE, None, decided("p", "reshape"))).bugs()
    record = BugRecord.of(bug)
    again = BugRecord.from_json(record.to_json())
    assert again.decision == record.decision and again.decision.identity == decided("p", "reshape").identity
    lines = "\n".join(bug_lines(again))
    assert "p's Symbol.__call__ removes `t1 = prims.reshape(a)` from `t1 = ltorch.x(a)`" in lines
    assert "It is the program's only edit." in lines
    assert summary(again.decision)[0] == describe(again.decision)[0]


# --- the bound symbol's well-formedness -----------------------------------------------------------------


def test_malformations_name_what_is_wrong_with_a_bound_symbol():
    t0, t1, t2 = Name("t0"), Name("t1"), Name("t2")
    clash = Node("add", (t0, t1), (t1,), subsymbols=(Node("add", (t0, t1), (t1,)),))
    assert decisions.malformations(clash) == ((decisions.REUSES_A_NAME, "output name t1 is also an input (and 1 more)"),)
    # The same clash inside the decomposition (the splitter's names, an upcast under exp): one kind.
    inner = Node(
        "exp", (t0,), (t2,), subsymbols=(Node("convert", (t0,), (t0,)), Node("exp", (t0,), (t1,)), Node("convert", (t1,), (t2,)))
    )
    assert decisions.malformations(inner) == (
        (decisions.REUSES_A_NAME, "subsymbol `t0 = convert(t0)` defines t0, also its input"),
    )
    redefined = Node(
        "mul",
        (t0,),
        (t2,),
        subsymbols=(Node("neg", (t0,), (t1,)), Node("mul", (t1, t1), (t1,), subsymbols=(Node("neg", (t1,), (t0,)),))),
    )
    assert decisions.malformations(redefined) == (
        (decisions.REUSES_A_NAME, "subsymbol `t1 = mul(t1, t1)` defines t1, also its input (and 1 more)"),
    )  # the more: `t0 = neg(t1)`, a level down, defines the argument t0 again
    unknown = Node("mul", (t0,), (t1,), subsymbols=(Node("mul", (t0, t2), (t1,)),))
    assert decisions.malformations(unknown) == (
        (decisions.READS_UNDEFINED, "a subsymbol reads t2, which nothing before it defines"),
    )
    well_formed = Node("add", (t0,), (t1,), subsymbols=(Node("neg", (t0,), (t2,)), Node("add", (t0, t2), (t1,))))
    assert decisions.malformations(well_formed) == ()


def test_a_placement_whose_replacements_never_run_says_so():
    found = bisection.bisect(resolve("planted:cos_grad_flipped"), lambda gating: (True, [], 0))
    assert found.culprit is None and "no call of anything it replaced" in found.note


# --- the command line and a campaign --------------------------------------------------------------------

SEED_PROGRAM = """
import torch


def program(x):
    return torch.cos(x) + torch.sin(x)


def make_inputs(requires_grad=False):
    return [torch.randn(10, 10, requires_grad=requires_grad)]
"""


@pytest.mark.slow
def test_fuzzdce_bisect_says_which_decision_breaks_the_seeds_program(tmp_path, capsys):
    from fuzzdce.cli import main

    source = tmp_path / "seed.py"
    source.write_text(SEED_PROGRAM)
    assert main(["bisect", str(source), "--placement", "symcall", "--path", "thunderfx", "--path", "thunderfx-dynamic"]) == 1
    out = capsys.readouterr().out
    # One decision, said once under both failures it causes.
    assert out.count("--- [thunderfx") == 2 and out.count("raises KeyError: 't1'") == 1, out
    assert "on `t1 = ltorch.add(t0, t1, alpha=1)`, whose output name t1 is also an input" in out
    assert "The program's other edits do not matter: the removal of `i0 = prims.ne(alpha, 1)`" in out
    assert main(["bisect", str(source), "--placement", "symcall-fixed", "--path", "thunderfx"]) == 0


@pytest.mark.slow
def test_a_campaign_lists_a_wrong_placement_as_one_bug_named_by_its_decision_and_the_correct_one_as_none():
    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig

    wrong, correct = "planted_dce:symcall_dce_raises_on_broadcast", "planted_dce:symcall_correct"
    config = CampaignConfig.of(
        ("stock", wrong, correct),
        ("jit", "thunderfx"),
        max_examples=8,
        seed=2,
        time_budget=180,  # shrinking stops there; every cause is bisected as generation finds it
        ops=("add", "mul", "expand", "sum_all", "abs"),
        # As a campaign's lanes run: a gated run that hangs (one of thunderfx on an 8-op program
        # here) is cut at its job's limit, and the cause is bisected again on a smaller program.
        sandbox=True,
        timeout=20,
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    regressions = [b for b in campaign.ledger.bugs() if b.verdict == Verdict.REGRESSION]
    described = [(b.id, b.placements, b.decision is not None, b.smallest.violation.message[:80]) for b in regressions]
    assert {b.placements for b in regressions} == {(wrong,)}, described
    # Every cause is bisected as generation finds it: each bug names its decision or says why it
    # names none (a gated thunderfx run that hangs is cut at its job's limit); every cause bisected
    # is known by the one decision that breaks, the raise on jit and the split on thunderfx alike.
    assert all(b.decision is not None for b in regressions), described
    bisected = [b for b in regressions if b.decision.identity is not None]
    assert len(bisected) == 1, [describe(b.decision) for b in regressions]
    (bug,) = bisected
    assert bug.decision.identity[:3] == (wrong, "raise", "RuntimeError"), describe(bug.decision)
    assert bug.decision.made_on(program_text(bug.program)), "the decision names the reproducer's statements"
    assert all(describe(b.decision)[0].startswith("decision: not bisected: ") for b in regressions if b is not bug)


RAISES_ON_BROADCAST = "planted_dce:symcall_dce_raises_on_broadcast"
ABS_EXPAND_MUL = program_of(
    ("abs", "torch.abs({0})", (0,)),
    ("expand", "{0}.expand(3, 4)", (2,)),
    ("mul", "torch.mul({0}, {1})", (3, 1)),
    inputs=((1, 4), (3, 4)),
)


def decided_on_a_larger_program():
    """A campaign (stock and ``RAISES_ON_BROADCAST`` on jit) that recorded ``ABS_EXPAND_MUL`` and
    bisected its one cause there, as a campaign does before any shrink: ``(campaign, cause key)``."""
    import time

    from fuzzdce.fuzzing.campaign import Campaign
    from fuzzdce.fuzzing.config import CampaignConfig
    from fuzzdce.fuzzing.time_plan import TimePlan

    config = CampaignConfig.of(("stock", RAISES_ON_BROADCAST), ("jit",), max_examples=1, time_budget=600)
    campaign = Campaign(config, log=lambda line: None)
    campaign.plan = TimePlan(600, time.time())
    campaign.ledger.record(ABS_EXPAND_MUL, campaign.evaluate_everywhere(ABS_EXPAND_MUL))
    ((key, _),) = campaign.store.causes().items()
    campaign.shrinker.decide(key)
    return campaign, key


def culprit_on(campaign, program, failure):
    """The statement bisecting ``failure`` on ``program`` names."""
    return bisect_failure(campaign.evaluate, program, resolve(RAISES_ON_BROADCAST), failure).culprit.before


def test_a_finding_whose_program_is_replaced_by_a_smaller_one_carries_no_decision_made_on_the_old_program():
    """A decision is its program's (``Bisection.program``): the statement it names is in that
    program. A smaller program showing the same finding replaces it (``FindingStore.add``), and
    the decision goes with the old program; deciding as found (``Shrinker.decide_found``) bisects
    the cause again on the new one, whose statement a report then names."""
    campaign, key = decided_on_a_larger_program()
    (larger,) = campaign.store.causes()[key]
    assert larger.decision.made_on(program_text(ABS_EXPAND_MUL)) and larger.decision.path == "jit"
    on_larger = larger.decision.culprit.before
    # A smaller program showing the same cause, as generation or a shrink's settling records one.
    changed = campaign.ledger.record(EXPAND_MUL, campaign.evaluate_everywhere(EXPAND_MUL))
    smallest = campaign.store.causes()[key][0]
    assert smallest is larger and smallest.program == EXPAND_MUL
    assert smallest.decision is None, "a decision of the larger program, whose statements the reproducer does not hold"
    campaign.shrinker.decide_found(changed)
    on_smaller = culprit_on(campaign, EXPAND_MUL, smallest.violation)
    assert on_smaller != on_larger, "the two programs' culprits are written alike: this test could not fail"
    assert smallest.decision.made_on(program_text(EXPAND_MUL)) and smallest.decision.culprit.before == on_smaller


def test_a_shrink_leaves_its_cause_decided_on_the_program_it_leaves():
    """The same through a shrink: its passes drop ``abs``, and settling what they leave decides the
    cause again there."""
    campaign, key = decided_on_a_larger_program()
    campaign.shrinker.shrink(key)
    smallest = campaign.store.causes()[key][0]
    assert smallest.program.n_ops < ABS_EXPAND_MUL.n_ops, smallest.program.source()
    assert smallest.decision.made_on(program_text(smallest.program))
    assert smallest.decision.culprit.before == culprit_on(campaign, smallest.program, smallest.violation)


def test_merged_shards_join_bugs_of_one_decision_and_keep_two_decisions_apart(tmp_path):
    """Three runs' bugs: a split and a raise bisected to one decision join; a raise elsewhere,
    bisected to another decision, stays apart, as the campaign keeps it (``joining.joined``)."""
    from pathlib import Path

    from fuzzdce.results.merge import Candidate, Source, merged_bugs
    from fuzzdce.results.records import BugRecord

    def record(violation, program, found):
        (bug,) = store_of((Verdict.REGRESSION, ("p",), violation, program, None, found)).bugs()
        return Candidate(BugRecord.of(bug), Path(tmp_path))

    elsewhere = raised("jit", "UnboundLocalError", "t1", "thunder/core/prims.py:take", symbol="reshape")
    one, again, other = (
        record(SPLIT, ONE, decided("p", "reshape")),
        record(RAISE, TWO, decided("p", "reshape")),
        record(elsewhere, ONE, decided("p", "add")),
    )
    assert one.record.key == again.record.key != other.record.key, "a bug's key is its decision's"
    bugs = [bug for bug, _ in merged_bugs([Source(Path(tmp_path), None, [one, again, other])], {})]
    assert sorted(len(b.members) for b in bugs) == [1, 2]
    (pair,) = [b for b in bugs if len(b.members) == 2]
    assert pair.decision.identity == decided("p", "reshape").identity and pair.id == one.record.id

"""What tests build, written once: programs, violations, finding stores, a stand-in evaluator and a
stand-in campaign. Tests import it as they import ``planted`` and ``conftest`` (tests/ is on the path).

Every violation is made by its oracle's own code (``raises.raised``, ``names.malformed``, the
outputs, grads, splits and metadata oracles' ``check`` on a small outcome; dce-sound's as its check
makes it) and localised by the evaluator's ``localise.localised``: each carries the fault
production gives it, so a join a test checks is one production makes. No test builds a violation
of fuzzdce's oracles itself, nor a stand-in evaluator, store or campaign (tests/test_builders.py
checks it): only an oracle registered outside fuzzdce makes no fault (``faults.Stated`` stands in).
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import torch

from fuzzdce.core.faults import dce_fault
from fuzzdce.core.findings import FindingStore
from fuzzdce.core.model import EAGER, Call, ErrorInfo, Outcome, Placement, SplitKind, SplitRecord, Violation
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import CallLabel, TraceLabel
from fuzzdce.fuzzing.time_plan import PhaseClock
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles import names as names_oracle
from fuzzdce.oracles import raises as raises_oracle
from fuzzdce.oracles import splits as splits_oracle
from fuzzdce.oracles.metadata import Misstated
from fuzzdce.running.evaluate import Evaluation, Evaluator
from fuzzdce.running.localise import localised
from fuzzdce.running.placements import resolve

# --- programs ---------------------------------------------------------------------------------------

# Ops that take their one value twice in ``chain``.
BINARY = ("add", "mul", "sub")


def chain(*ops: str, seed: int = 1, shape: tuple[int, ...] = (2,), requires_grad: bool = False) -> Program:
    """A chain of ``ops`` on one input, each on the value before it (``add``, ``mul`` and ``sub``
    take it twice), returning the last."""
    steps = []
    for i, op in enumerate(ops):
        twice = op in BINARY
        call = f"torch.{op}({{0}}, {{0}})" if twice else f"torch.{op}({{0}})"
        steps.append(Step(op, call, (Ref(i), Ref(i)) if twice else (Ref(i),)))
    return Program((TensorInput(shape, requires_grad=requires_grad),), tuple(steps), (len(ops),), seed=seed)


# --- violations, as their oracles make them ---------------------------------------------------------

THUNDER_FRAME = "thunder/core/symbol.py:__call__"


def raised(
    path: str,
    error_type: str = "KeyError",
    message: str = "'t3'",
    frame: str = THUNDER_FRAME,
    *,
    where: str = "",
    symbol: str = "",
) -> Violation:
    """The raises oracle's violation of one exception: ``where`` the call and stage that raised it
    ("forward", "grad call, backward"; empty: outside any call), ``symbol`` the op Thunder was
    working on (``ErrorInfo.symbol``)."""
    error = ErrorInfo(error_type, message, frame, "", symbol)
    return raises_oracle.raised(path, error, f" ({where})" if where else "")


def malformed(path: str, problem: str = "a name defined twice", *, trace: str = "forward", detail: str = "") -> Violation:
    """The names oracle's violation of one malformation ``problem`` (its kind: no names) in a trace
    of kind ``trace`` ("forward", "backward", "prologue") of ``path``."""
    label = TraceLabel(path, trace, 0)
    return names_oracle.malformed(path, label, names_oracle.Problem(problem, detail or problem))


def wrong_values(path: str, op: str | None = None, *, oracle: str = "outputs", call: str = CallLabel.PLAIN) -> Violation:
    """A wrong value of ``call`` on ``path`` as ``oracle`` (outputs, grads or mutations) finds it,
    localised at ``op`` as the evaluator localises it (None: no prefix showed it, not localised)."""
    label = CallLabel(call)
    thunders, eagers = (
        Call(label, outputs=[value], grads=[value], grad_inputs=[0], inputs_after=[value])
        for value in (torch.tensor([1.0]), torch.tensor([2.0]))
    )
    (violation,) = ORACLES[oracle].check(
        Outcome(path, "p", calls={label: thunders}), Outcome(EAGER, "stock", calls={label: eagers})
    )
    if op is None:
        return violation
    return localised(chain(op), violation, lambda prefix: [violation])


def split(
    path: str = "thunderfx", exception: str = "'t0'", *, op: str = "neg", reason: str = "EXCEPTION_META_THUNDER_OP"
) -> Violation:
    """The splits oracle's violation of thunderfx splitting the FX node of ``op`` because Thunder
    raised ``exception`` there (``reason``: the split's reason type)."""
    info = f"Failed while running meta for node with name: {op} and target: <built-in method {op} of type object>, see exception field"
    record = SplitRecord(SplitKind(reason), info, exception)
    (violation,) = splits_oracle.check(Outcome(path, "p", split_reasons=[record]), Outcome(EAGER, "stock"))
    return violation


THUNDER_FUNCTION = "thunder.executors.torch_autograd.ThunderFunction"


def flag(path: str = "jit-grad", *, invented: bool = True, marked_by: str | None = None) -> Violation:
    """The grads oracle's violation of a grad call whose output's ``requires_grad`` differs from
    eager's: ``invented`` (True where eager's is False) or lost, the output made by Thunder's
    autograd Function ``marked_by`` (a ``thunder.`` qualname: the fault is marked by it) or by none
    (not localised)."""
    label = CallLabel.GRAD
    thunders = Call(label, output_requires_grad=[invented], output_functions=[marked_by])
    eagers = Call(label, output_requires_grad=[not invented])
    (violation,) = ORACLES["grads"].check(
        Outcome(path, "p", calls={label: thunders}), Outcome(EAGER, "stock", calls={label: eagers})
    )
    return violation


def misstated(
    path: str = "jit-symbolic",
    op: str = "qr",
    *,
    stated_by: str = "",
    attribute: str = "shape",
    trace: str = "forward",
    proxy: str = "t1",
    stated: str = "[2]",
    actual: str = "[3]",
) -> Violation:
    """The metadata oracle's violation of ``op``'s tensor ``proxy``, in a ``trace``, whose
    ``attribute`` is ``actual`` when it runs and ``stated`` by the trace (by ``stated_by``, the meta
    function of a prim; "" for a decomposed op)."""
    found = Misstated(trace, op, proxy, attribute, stated, actual, stated_by)
    (violation,) = ORACLES["metadata"].check(Outcome(path, "p", misstated=[found]), Outcome(EAGER, "stock"))
    return violation


def unsound(path: str = "jit", wrong: str = "dropped one a kept subsymbol reads") -> Violation:
    """The dce-sound oracle's violation of a DCE that did ``wrong`` (``faults.UnsoundDce``), with the
    fault its oracle gives it. Made here as the oracle makes it (its ``check`` needs the placement's
    recorded DCE calls, which only a run under Thunder makes)."""
    return Violation("dce-sound", path, f"a DCE {wrong}", "UnsoundDce", key=wrong, fault=dce_fault("dce-sound", wrong))


# --- findings ---------------------------------------------------------------------------------------


def store_of(*found: tuple) -> FindingStore:
    """A store of findings, each (verdict, placements, violation, program, shrunk, decision): the
    last two may be left off (None)."""
    store = FindingStore()
    for verdict, placements, violation, program, *rest in found:
        shrunk, decision = (*rest, None, None)[:2]
        finding, _ = store.add(verdict, placements, violation, program)
        finding.shrunk = shrunk
        if decision is not None:
            finding.decision = decision
    return store


# --- stand-ins --------------------------------------------------------------------------------------


def shows_nothing(program: Program, placement: Placement, paths) -> list[Violation]:
    return []


class StandInEvaluator(Evaluator):
    """An evaluator that compiles nothing, for tests of what reads evaluations: under each placement
    (stock first, unless ``alone``) a program shows ``shows(program, placement, paths)``, and each
    path's outcome is ``outcome(program, placement, path)`` (none by default). Records every call
    in ``calls``, as (program, placement names, paths), and whether it was a gated run in ``gated``."""

    def __init__(self, shows=shows_nothing, outcome=None):
        self.shows, self.outcome = shows, outcome
        self.calls: list[tuple[Program, tuple[str, ...], tuple[str, ...]]] = []
        self.gated: list[bool] = []

    def __call__(self, program, placements, *, paths, timeout=None, alone=False, cache=True, localise=True, **options):
        evaluated = {p.name: p for p in ([] if alone else [resolve("stock")]) + list(placements)}
        self.calls.append((program, tuple(evaluated), tuple(paths)))
        self.gated.append(any(p.gating is not None for p in evaluated.values()))
        evaluations = {}
        for name, placement in evaluated.items():
            outcomes = {} if self.outcome is None else {path: self.outcome(program, placement, path) for path in paths}
            shown = list(self.shows(program, placement, paths))
            evaluations[name] = Evaluation(program, name, Outcome(EAGER, "stock"), outcomes, shown)
        return evaluations

    def close(self):
        pass


class StandInCampaign:
    """What ``Shrinker`` reads of a campaign, for tests of shrinking and confirming without one: a
    ``store`` whose ``fails`` verdicts are worth shrinking, ``settings`` and ``plan`` as given, and
    evaluations under stock and ``placements`` (rdnp by default) from ``evaluator``, or from
    ``evaluate`` (a function standing in for ``Campaign.evaluate`` itself), each recorded in
    ``replays`` as (program, placement names, paths, cache). Phase seconds are counted in
    ``phases.seconds``, log lines kept in ``lines``."""

    def __init__(
        self,
        store: FindingStore,
        *,
        fails=lambda verdict: True,
        settings=None,
        plan=None,
        evaluator: Evaluator | None = None,
        evaluate=None,
        placements: list[Placement] | None = None,
        seconds_per_program: float = 1.0,
    ):
        self.ledger = SimpleNamespace(store=store, fails=fails)
        self.settings, self.plan = settings, plan
        self.stats = SimpleNamespace(seconds_per_program=seconds_per_program)
        self.driver = SimpleNamespace(stopped=False)
        self.spent = False
        self.phases = PhaseClock(Counter())
        self.reference = resolve("stock")
        self.placements = [resolve("rdnp")] if placements is None else list(placements)
        self.evaluator = evaluator if evaluator is not None else StandInEvaluator()
        self.evaluated = evaluate
        self.replays, self.lines = [], []

    def evaluate(self, program, placements, paths, **options):
        """As ``Campaign.evaluate`` (``options``: the ``Evaluator``'s ``alone``, ``cache``, ``localise``)."""
        self.replays.append((program, tuple(p.name for p in placements), tuple(paths), options.get("cache", True)))
        if self.evaluated is not None:
            return self.evaluated(program, placements, paths, **options)
        return self.evaluator(program, placements, paths=paths, **{**options, "alone": True})

    def progress(self):
        pass

    def log(self, line):
        self.lines.append(line)

"""Generation steered to what a campaign has not tested yet, with Hypothesis's own tools.

- **Strategy weights** (``Weights``), fixed for one Hypothesis run so replay and shrinking stay
  exact: catalog entries, input dtypes and value domains the campaign drew rarely weigh more, never
  drawn ones most; so do entries in whose programs the placements changed subsymbols, in
  proportion, and entries whose programs ran one of Thunder's grad rules no program had run before
  (``running.grad_rules``), in proportion; OpInfo entries likewise, and those whose op's own grad
  rule no program has run yet most; programs grow longer (more ops per compile). A steered campaign runs in rounds
  of ``ROUND`` programs, each with weights from everything drawn before it.
- **``target()``** inside the test (Hypothesis's statistics show it; rounds draw each program afresh,
  ``driver.IndependentDraws``, so Hypothesis hill-climbs none of it inside them): how many subsymbols the placements
  changed against stock in this program (DCE activity), how much of the program is new to the
  campaign (entries, dtypes, domains drawn rarely so far), and how many of Thunder's grad rules it
  ran under stock that no program had run before.
- **``event()``**: whether each placement changed subsymbols, and whether the program reached a new
  grad rule, shown in Hypothesis's statistics.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import event, target

from fuzzdce.core.model import STOCK
from fuzzdce.core.program import Program
from fuzzdce.running.coverage import program_activity
from fuzzdce.strategies import CATALOG
from fuzzdce.strategies.opinfo import OpInfoSource
from fuzzdce.strategies.programs import INPUT_DOMAINS, INPUT_DTYPES, Weights

ROUND = 15  # programs per steered round: weights are recomputed between rounds
UNSEEN = 32  # weight of what was never drawn; a thing drawn n times weighs max(1, UNSEEN // (1 + n))
STOP_IN = 10  # a steered program stops growing at one "continue?" draw in STOP_IN
# Weight of an entry in whose programs every placement-evaluated program changed subsymbols (in
# proportion for fewer): activity found weighs more than novelty, which it would otherwise drown.
ACTIVE = 4 * UNSEEN
# Weight of an entry every one of whose evaluated programs reached a grad rule not reached before (in
# proportion for fewer): Thunder's code not yet run is what generation should favour next.
NEW_RULES = 2 * UNSEEN
# Weight of an OpInfo whose op's own grad rule (``opinfo.Entry.rule``) no program has run yet:
# the rules never reached are what the steering is for, so they come before what is merely unseen.
UNREACHED = 2 * UNSEEN


def inverse_weights(names: Iterable[str], counts: Mapping[str, int]) -> dict[str, int]:
    return {name: max(1, UNSEEN // (1 + counts.get(name, 0))) for name in names}


class Steering:
    """What the campaign drew so far, turned into weights for the next round and targets per program."""

    def __init__(self, opinfos: OpInfoSource | None = None) -> None:
        self.opinfos = opinfos  # the OpInfo source programs draw steps from, if any
        self.ops: Counter = Counter()
        self.dtypes: Counter = Counter()
        self.domains: Counter = Counter()
        self.evaluated: Counter = Counter()  # op -> evaluated programs holding it
        self.active: Counter = Counter()  # op -> those in which a placement changed subsymbols
        self.rules: Counter = Counter()  # Thunder's grad rule -> programs that ran it under stock
        self.new_rules: Counter = Counter()  # op -> evaluated programs holding it that reached a new rule

    def steered(self, names: Iterable[str]) -> dict[str, int]:
        """Weights of ops by name (``Step.op``): rarely drawn ones more, never drawn most, and those
        whose programs changed subsymbols or reached new grad rules, in proportion."""
        return {
            name: max(
                weight,
                round(ACTIVE * self.active[name] / max(self.evaluated[name], 1)),
                round(NEW_RULES * self.new_rules[name] / max(self.evaluated[name], 1)),
            )
            for name, weight in inverse_weights(names, self.ops).items()
        }

    def weights(self) -> Weights:
        """The next round's weights: the catalog's entries, and where programs draw OpInfo steps
        (``opinfos``), its entries alike, so an OpInfo never drawn, whose op's rule no program ran,
        is drawn first."""
        opinfo_weights = None
        if self.opinfos is not None:
            by_op = self.steered(entry.op for entry in self.opinfos.entries)
            opinfo_weights = {}
            for entry in self.opinfos.entries:
                rule, drawn = entry.rule, self.ops[entry.op]
                unreached = rule is not None and rule not in self.rules
                # A rule no program ran weighs most, less each time its entry is drawn and it is
                # still not run (a sample that never differentiates, a path failing before).
                opinfo_weights[entry.name] = max(by_op[entry.op], UNREACHED // (1 + drawn)) if unreached else by_op[entry.op]
        return Weights(
            ops=self.steered(spec.name for spec in CATALOG),
            dtypes=inverse_weights(INPUT_DTYPES, self.dtypes),
            domains=inverse_weights(INPUT_DOMAINS, self.domains),
            stop_in=STOP_IN,
            opinfos=opinfo_weights,
        )

    def novelty(self, program: Program) -> float:
        """How new the program is to the campaign: 1 per entry, dtype or domain never drawn, less for rarer ones."""
        drawn = [
            *((self.ops, op) for op in set(program.ops)),
            *((self.dtypes, d) for d in {i.dtype for i in program.inputs}),
            *((self.domains, d) for d in {i.domain for i in program.inputs}),
        ]
        return sum(1.0 / (1 + counts[name]) for counts, name in drawn)

    def drew(self, program: Program) -> None:
        self.ops.update(program.ops)
        self.dtypes.update(i.dtype for i in program.inputs)
        self.domains.update(i.domain for i in program.inputs)

    def reached(self, evaluations: Mapping[str, Any]) -> int:
        """Count the grad rules the program ran under stock (``Outcome.grad_rules``, every path);
        how many of them no program had run before."""
        stock = evaluations.get(STOCK)
        rules = set().union(*(getattr(o, "grad_rules", ()) for o in stock.outcomes.values())) if stock is not None else set()
        new = sum(1 for rule in rules if rule not in self.rules)
        self.rules.update(rules)
        return new

    def observe(self, program: Program, evaluations: Mapping[str, Any] | None = None) -> None:
        """Inside the Hypothesis test, once per program: targets and events, then count what it drew."""
        target(self.novelty(program), label="novelty")
        if evaluations is not None:
            changed = 0
            for name, evaluation in evaluations.items():
                if name == STOCK or evaluation.invalid:
                    continue
                n = sum(program_activity(evaluation.outcomes.values()).values())
                event(f"{name} changed subsymbols", "yes" if n else "no")
                changed += n
            target(float(changed), label="subsymbols changed by placements")
            new = self.reached(evaluations)
            target(float(new), label="grad rules not reached before")
            event("reached a grad rule no program had", "yes" if new else "no")
            for op in set(program.ops):
                self.evaluated[op] += 1
                self.active[op] += changed > 0
                self.new_rules[op] += new > 0
        self.drew(program)

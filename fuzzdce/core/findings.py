"""Findings and bugs: violations triaged against the reference Thunder, deduplicated, joined by root cause.

A finding's signature is (verdict, placements, path, oracle, exception type, normalised message,
Thunder frame). The verdict and placements come from one program evaluated under the campaign's
*reference* Thunder (stock, unless ``--against`` or ``--reference`` names another) and every
Thunder under test: for each violation, the placements whose run of that program shows the same
violation signature (same path and oracle, so a shared failure elsewhere in the program masks
nothing). Without the reference among them it is a ``regression``; the reference and a Thunder
under test make it ``shared``; the reference alone makes it ``fixed``.

A **bug** is what a user files: findings (kept as its evidence) of one verdict and placements
joined by evidence a user can check:
- the same exception (``Violation.cause``: type, normalised message, Thunder frame) is one bug
  whatever the path and whichever call showed it (``cause_key``: findings of one key are one
  *cause*, shrunk together);
- two causes whose minimal programs, each a finished shrink's result, each show the other's cause
  are one bug (``FindingStore.link``). Findings that merely co-occur on a program never join, and a
  program Hypothesis did not finish shrinking joins nothing;
- findings whose settled minimal programs are identical, or whose violations are the same but for
  the path (not a value comparison), with a placement in common (``join_keys``);
- but a bug holds at most one kind of exception that Thunder raised to its caller (``raised_types``;
  one raised in torch's own code is not Thunder's), and its findings have a Thunder in common (the
  one holding the fault: a finding two faulty placements both show joins one's bug, not both): a
  link that would break either is not followed, so no bug glues them through a third cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from fuzzdce.core.faults import (  # noqa: F401  (UNBOUND_NAME, nameless: their readers')
    UNBOUND_NAME,
    fault_of,
    is_value,
    nameless,
    on_thunders_behalf,
    raised_kind,
    signature,
    value_fault,
    words,
)
from fuzzdce.core.model import STOCK, TORCH_FRAME, Verdict, Violation
from fuzzdce.core.program import Domain, Program
from fuzzdce.core.signatures import finding_signature, short_id
from fuzzdce.core.vocabulary import AddResult

VERDICTS = tuple(Verdict)  # in the order bugs are listed


Item = TypeVar("Item")


def size_of(n_ops: int, n_inputs: int, source: str) -> tuple[int, int, int]:
    """Smaller is better: fewer ops, then fewer inputs, then less source. (Bug records, which hold
    a program's source and counts but not the program, are ordered by it too.)"""
    return (n_ops, n_inputs, len(source))


def size(program) -> tuple[int, int, int]:
    """``size_of`` a program."""
    return size_of(program.n_ops, len(program.inputs), program.source())


def earliest(times: Iterable[float | None]) -> float | None:
    """The smallest of ``times`` that are known (None when none is)."""
    return min((t for t in times if t is not None), default=None)


def combined_confirmed(states: Iterable[bool | None]) -> bool | None:
    """Whether findings (or copies of one) reproduced the same on replay, together: False if any
    says False, else None if any is unknown, else True."""
    states = list(states)
    return False if False in states else (None if None in states else True)


def is_reportable(verdict: Verdict, known: str | None) -> bool:
    """A regression not suppressed by the known-findings file: what makes ``fuzzdce run`` exit 1."""
    return verdict == Verdict.REGRESSION and not known


def bug_order(bug) -> tuple:
    """How bugs are listed (a ``Bug`` or a ``records.BugRecord``: anything with a verdict, reportable
    and id): regressions and new first, wrong values that need a NaN or infinite input after
    the other bugs of their verdict, then by id."""
    return (VERDICTS.index(bug.verdict), not bug.reportable, bool(getattr(bug, "needs_nonfinite", False)), bug.id)


def by_kind(labels: set) -> dict:
    """Labels by kind: a label is a (kind, value) pair, or a plain value of a kind of its own."""
    kinds: dict = {}
    for label in labels:
        kinds.setdefault(label[0] if isinstance(label, tuple) else "", set()).add(label)
    return kinds


def clash(labels: set, other: set = frozenset()) -> bool:
    """Would joining ``labels`` and ``other`` put two faults in one bug: a kind both hold, with no
    label of it in common (``compatible``)? (Alone: do ``labels`` hold two of one kind?) A bug holds one raised kind
    and one fault label; a cause whose one identity was met at several ops (a name collision in
    the splitter, whatever node it hit) holds several, and joins what shares one of them."""
    if not other:
        return any(len(same) > 1 for same in by_kind(labels).values())
    mine, theirs = by_kind(labels), by_kind(other)
    return any(kind in theirs and not any(compatible(a, b) for a in mine[kind] for b in theirs[kind]) for kind in mine)


def connected(
    items: Sequence[Item],
    names: Callable[[Item], Iterable[Hashable]],
    kept_apart: Callable[[Item], Iterable[Hashable]] = lambda item: (),
    shown_under: Callable[[Item], Iterable[Hashable]] | None = None,
) -> list[list[Item]]:
    """``items`` joined when they share a name, directly or through other items (union-find): the
    components, each in the items' order. The one join of findings into bugs: the campaign's
    (``FindingStore.bugs``) and ``fuzzdce merge``'s (of bug records) both call it.

    Two components join only when, for each kind of label ``kept_apart`` gives their items that
    both hold, they have a label of it in common (``clash``: one raised kind, one fault label, one
    frame; an item met at several ops holds several), and, given
    ``shown_under`` (the Thunders showing an item), its items have a Thunder in common: a shared
    name that would break either is not followed (nor, so, any path through a third). A fault lives
    in one Thunder, so a finding that two faulty placements both show joins the bug of one of
    them, never both into one."""
    parent = list(range(len(items)))
    labels = [set(kept_apart(item)) for item in items]  # by root
    common = [None if shown_under is None else frozenset(shown_under(item)) for item in items]  # by root

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Hashable, int] = {}
    for i, item in enumerate(items):
        for name in names(item):
            a, b = root(i), root(owner.setdefault(name, i))
            if a == b or clash(labels[a], labels[b]):
                continue
            if shown_under is not None and not common[a] & common[b]:
                continue
            low, high = min(a, b), max(a, b)
            parent[high] = low
            labels[low] |= labels[high]
            if shown_under is not None:
                common[low] = common[a] & common[b]
    components: dict[int, list[Item]] = {}
    for i, item in enumerate(items):
        components.setdefault(root(i), []).append(item)
    return list(components.values())


RAISES = "raises"  # the oracle whose findings are Thunder raising to its caller
OUTPUTS = "outputs"  # the oracle whose findings are wrong forward values


def raised_types(found: Iterable[tuple[str, str | None, str | None, str]]) -> set[str]:
    """The kinds of exception (``raised_kind``) Thunder raised to its caller among ``found`` (each
    finding's oracle, error type, frame and message): a bug holds at most one. One small program
    can show two faults (``nll_loss`` raised a ``TypeError`` on jit and a ``ValueError`` under
    grad), and two bugs are better than one that hides another. (A split's reason or a malformed
    trace is not such a type: those follow from one fault together with what it raises, and join
    it. Nor is an exception raised inside torch's own code (``TORCH_FRAME``), such as torch.compile
    refusing the trace Thunder handed it: ``var_mean``'s backward on a 0-d input raised a
    ``TypeError`` in Thunder's torch executor and, on the same program, torch.compile's
    ``Unsupported`` on a malformed trace.)"""
    return {
        raised_kind(error_type, message)
        for oracle, error_type, frame, message in found
        if oracle == RAISES and error_type and (not (frame or "").startswith(TORCH_FRAME) or on_thunders_behalf(frame))
    }


def cause_key(verdict: Verdict, placements: tuple[str, ...], violation: Violation) -> str:
    """What joins findings into one cause with no further evidence: the same identity (``faults``:
    where Thunder fails) under the same verdict and placements, whatever the path or call."""
    return finding_signature(verdict, placements, "fault | " + fault_of(violation))


# The oracles whose failures are faults of their own: Thunder raising, thunderfx splitting because it
# raised, wrong values. Every other oracle observes what a fault did to a trace (a malformed trace,
# DCE that is no fixed point, a subsymbol removed while live): it joins the fault its program shows.
SPLITS = "splits"
EXCEPTION_ORACLES = frozenset({RAISES, SPLITS})


def named_site(violation: Violation) -> str:
    """The violation's site when its identity names it (not only its context), else ""."""
    return violation.site if violation.site and violation.site in fault_of(violation).split(" | ") else ""


def exception_words(violation: Violation) -> str:
    """An exception's or a split's words without its type, names and numbers: one exception a path
    raises and thunderfx reports as a split's reason reads alike."""
    text = violation.key or violation.message
    return words(text.split(": ", 1)[1] if ": " in text else text)


def fault_label(violation: Violation) -> str:
    """What a bug holds at most one of (``connected``'s ``kept_apart``): the op a raised exception
    or a split names, else its words; the op where a wrong value first differs; "" for the oracles
    that only observe a fault, and for an exception torch raised in its own code on what Thunder
    handed it (a consequence of the fault beside it, not a fault of its own), unless its autograd
    engine or dispatcher raised it on Thunder's behalf (``faults.on_thunders_behalf``)."""
    if violation.oracle in EXCEPTION_ORACLES or violation.fault.startswith("exception |"):
        if (violation.frame or "").startswith(TORCH_FRAME) and not on_thunders_behalf(violation.frame):
            return ""
        named = named_site(violation)
        # Words say what went wrong, not where: the op it was met at goes with them.
        return f"op {named}" if named else f"words {exception_words(violation)}{words_site(violation)}"
    if is_value(violation):  # not localised, a wrong value is labelled by its oracle and call alone
        return f"op {violation.site}" if violation.site else value_fault(violation.oracle, violation.call, None)
    return ""


# Where Thunder defines ops (``ErrorInfo.frame``): an exception raised there is about the op being
# defined; one raised elsewhere (a transform, the interpreter) may be met through any op.
_OP_CODE = re.compile(r"^thunder/(torch/__init__|clang/__init__|core/prims)\.py:")
_AT = " | at "


def words_site(violation: Violation) -> str:
    """Where an exception known by its words alone was met, when that is part of the fault: a
    split's FX target, a raise's outermost Thunder symbol when it was raised in an op's own code
    (``_OP_CODE``). Words say what went wrong, not where: "tuple index out of range" was
    ``logsumexp``'s squeeze of a 0-d tensor and ``index_select``'s take of one, and a split of
    logsumexp in those words joined index_select's raise. A raise in code every op goes through
    (a transform's own words) has no site: it is one fault whichever op met it."""
    if not violation.site:
        return ""
    if violation.oracle != SPLITS and not _OP_CODE.match(violation.frame or ""):
        return ""
    return f"{_AT}{violation.site}"


def compatible(label, other) -> bool:
    """May one bug hold both labels (of one kind)? The same label; or the same words, one of them
    met at an op and the other at none that is part of the fault (``words_site``)."""
    if label == other:
        return True
    if not (isinstance(label, tuple) and isinstance(other, tuple)):
        return False
    mine, theirs = label[1], other[1]
    if not (isinstance(mine, str) and isinstance(theirs, str) and mine.startswith("words ") and theirs.startswith("words ")):
        return False
    return mine.split(_AT)[0] == theirs.split(_AT)[0] and (_AT not in mine or _AT not in theirs)


def kept_apart(violations: Iterable[Violation]) -> set[tuple[str, str]]:
    """What a bug holds at most one of each (``connected``, ``clash``), for the campaign's findings."""
    violations = list(violations)
    return labels_kept_apart(((v.oracle, v.error_type, v.frame, v.message) for v in violations), map(fault_label, violations))


def labels_kept_apart(raised: Iterable[tuple[str, str, str, str]], fault_labels: Iterable[str]) -> set[tuple[str, str]]:
    """What a bug holds at most one of each: the kind of exception Thunder raised (``raised_types``
    of each (oracle, error type, frame, message)), the fault label (``fault_label``: the op it is
    about) and the frame Thunder raised at. The campaign's findings (``kept_apart``) and ``fuzzdce
    merge``'s bug records (their members' fields) are kept apart by this one rule."""
    raised = list(raised)
    kinds = raised_types(raised)
    # Where Thunder raised (a split keeps no frame): two frames are two faults, whatever the words.
    frames = {frame for oracle, _, frame, _ in raised if oracle == RAISES and frame and not frame.startswith(TORCH_FRAME)}
    labels = {label for label in fault_labels if label}
    return {("raised", kind) for kind in kinds} | {("fault", label) for label in labels} | {("frame", f) for f in frames}


def join_keys(finding: Finding) -> list[str]:
    """What joins findings into one bug beyond their cause (``cause_key``), one name per placement
    showing it (findings sharing a name and so a placement join; one faulty placement's finding
    never joins another's):
    - its program, once it is settled (``shrunk``: a finished shrink's result): findings whose
      minimal programs are identical are one fault, whichever path and oracle showed each;
    - its identity, under this placement (a finding that this and another placement show joins
      this placement's bug of the same identity);
    - its site, for an exception or a split: one fault in different words on different paths
      (jit-grad's "no gradient transform for prims.index_add", thunderfx's "VJP for
      PrimIDs.INDEX_ADD"), or in the same words at the same op (``words_site``), and for a wrong
      value, where values first differ."""
    keys = []
    v = finding.violation
    label = fault_label(v)
    for placement in finding.placements:
        head = f"{finding.verdict} | {placement}"
        if finding.shrunk:
            keys.append(f"{head} | program | {finding.program.source()}{finding.program.inputs_source()}")
        keys.append(f"{head} | fault | {fault_of(v)}")  # the same identity under other placements besides
        if label and (v.site or not is_value(v)):  # one fault in other words on another path: its op, or its words
            keys.append(f"{head} | {'value' if is_value(v) else 'exception'} | {label}")
    return keys


class Triaged(NamedTuple):
    """One violation signature of a program, triaged: what the reference does with it and who shows it."""

    verdict: Verdict
    placements: tuple[str, ...]  # the placements showing it, the reference first, the others in the order given
    violation: Violation  # one of them, as an example


def verdict_of(names: Sequence[str], reference: str, evaluated: int) -> Verdict:
    """The verdict of a violation shown under ``names``, against ``reference``, of ``evaluated``
    placements (the reference alone fixes nothing: a campaign of stock alone has nothing under test)."""
    if reference not in names:
        return Verdict.REGRESSION
    return Verdict.SHARED if len(names) > 1 or evaluated == 1 else Verdict.FIXED


def triage(violations_by_placement: Mapping[str, Iterable[Violation]], reference: str | None = None) -> dict[str, Triaged]:
    """Triage one program: violation signature -> its ``Triaged`` (verdict, placements, a violation).

    ``violations_by_placement``: placement name -> the violations it showed (``evaluate.violations_of``
    a program's evaluations); it must include ``reference``, by default its first placement (the
    ``Evaluator`` lists the reference first). Placements keep the order given, the reference first.
    """
    reference = reference or next(iter(violations_by_placement), STOCK)
    showing: dict[str, list[str]] = {}
    example: dict[str, Violation] = {}
    for name in sorted(violations_by_placement, key=lambda name: name != reference):
        for v in violations_by_placement[name]:
            sig = signature(v)
            example.setdefault(sig, v)
            if name not in showing.setdefault(sig, []):
                showing[sig].append(name)
    return {
        sig: Triaged(verdict_of(names, reference, len(violations_by_placement)), tuple(names), example[sig])
        for sig, names in showing.items()
    }


@dataclass
class Finding:
    verdict: Verdict
    placements: tuple[str, ...]
    violation: Violation
    program: Program
    count: int = 0
    known_reason: str | None = None  # set when a known-findings file suppresses it
    # Set by the final triage: did the smallest program show the same finding when replayed?
    confirmed: bool | None = None
    # Seconds from the campaign's start (a lane's: its parent's) to this finding's first occurrence.
    first_seen_seconds: float | None = None
    # The Hypothesis choices (and steering weights, None unsteered) that drew ``program``: what its
    # shrink run starts from. None for a program not drawn by Hypothesis (tests hand some in).
    choices: tuple | None = None
    weights: object = None
    # Is ``program`` a finished shrink's result (True), where a shrink run stopped for time (False),
    # or not shrunk (None)?
    shrunk: bool | None = None

    @property
    def violation_signature(self) -> str:
        return signature(self.violation)

    @property
    def signature(self) -> str:
        return finding_signature(self.verdict, self.placements, self.violation_signature)

    @property
    def id(self) -> str:
        return short_id(self.signature)

    @property
    def cause_key(self) -> str:
        """The finding's cause (``cause_key``): what joins findings with no further evidence."""
        return cause_key(self.verdict, self.placements, self.violation)

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing it (the reference, unless a regression)."""
        return self.placements[0]

    @property
    def reportable(self) -> bool:
        """A regression not suppressed: what makes ``fuzzdce run`` exit 1."""
        return is_reportable(self.verdict, self.known_reason)


@dataclass
class Bug:
    """Findings of one root cause: ``key`` names it (its id is stable across runs while the cause
    is), ``members`` are its findings, ``why`` says for each member (by signature) why it belongs."""

    key: str
    members: list[Finding]
    why: dict[str, str]
    known_reason: str | None = None

    @property
    def id(self) -> str:
        return short_id(self.key)

    @property
    def smallest(self) -> Finding:
        """The member with the smallest program: the bug's reproducer runs that program."""
        return min(self.members, key=lambda f: (size(f.program), f.signature))

    @property
    def program(self) -> Program:
        return self.smallest.program

    @property
    def verdict(self) -> Verdict:
        return self.members[0].verdict

    @property
    def placements(self) -> tuple[str, ...]:
        """The Thunders showing every member (``connected`` keeps one in common), in the order its
        smallest program's finding lists them: a member that another faulty placement shows too
        does not make the bug that placement's."""
        first = self.members[0].placements
        common = tuple(p for p in first if all(p in f.placements for f in self.members))
        return common or first

    @property
    def placement(self) -> str:
        """The placement its reproducer applies: the first showing every member."""
        return self.placements[0]

    @property
    def count(self) -> int:
        return sum(f.count for f in self.members)

    @property
    def shrink_note(self) -> str | None:
        """Said when the bug's program is not known to be at its minimum."""
        smallest = self.smallest
        if smallest.shrunk is False:
            return f"shrinking stopped at {self.program.n_ops} ops: time"
        return None

    @property
    def needs_nonfinite(self) -> bool:
        """Wrong values (a forward divergence) whose shrunk program still draws an input among NaN
        and infinities: the shrinker tried it with finite inputs (``shrinking``) and it passed."""
        smallest = self.smallest
        return (
            bool(smallest.shrunk)
            and smallest.violation.oracle == OUTPUTS
            and any(i.domain == Domain.NONFINITE for i in smallest.program.inputs)
        )

    @property
    def confirmed(self) -> bool | None:
        """False when a member did not reproduce the same on its smallest program."""
        return combined_confirmed(f.confirmed for f in self.members)

    @property
    def reportable(self) -> bool:
        return is_reportable(self.verdict, self.known_reason)

    @property
    def first_seen_seconds(self) -> float | None:
        """When its first member was first seen (None when no member has a time)."""
        return earliest(f.first_seen_seconds for f in self.members)

    def paths(self) -> list[str]:
        return sorted({f.violation.path for f in self.members})

    def oracles(self) -> list[str]:
        return sorted({f.violation.oracle for f in self.members})


class FindingStore:
    """Findings by signature; keeps the smallest program seen for each and counts occurrences;
    joins them into bugs."""

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        self.findings: dict[str, Finding] = {}
        # Known bug ids, finding signatures or ids -> reason they are suppressed.
        self.known = dict(known or {})
        # (cause key, cause key) pairs joined by their shrunk minimal programs -> why.
        self.links: dict[tuple[str, str], str] = {}

    def add(
        self,
        verdict: Verdict,
        placements: tuple[str, ...],
        violation: Violation,
        program,
        seconds: float | None = None,
        choices: tuple | None = None,
        weights: object = None,
    ) -> tuple[Finding, AddResult]:
        """Record one occurrence, ``seconds`` into the campaign; returns the finding and what the
        occurrence is to it."""
        sig = finding_signature(verdict, placements, signature(violation))
        finding = self.findings.get(sig)
        if finding is None:
            finding = self.findings[sig] = Finding(
                verdict, placements, violation, program, first_seen_seconds=seconds, choices=choices, weights=weights
            )
            finding.known_reason = self.known.get(sig, self.known.get(finding.id))
            change = AddResult.NEW
        elif size(program) < size(finding.program):
            finding.program, finding.violation = program, violation
            finding.choices, finding.weights, finding.shrunk = choices, weights, None
            change = AddResult.SMALLER
        else:
            if finding.choices is None and program == finding.program:
                finding.choices, finding.weights = choices, weights
            change = AddResult.SEEN
        finding.count += 1
        return finding, change

    def causes(self) -> dict[str, list[Finding]]:
        """The findings by cause (``cause_key``), each cause's smallest program first."""
        causes: dict[str, list[Finding]] = {}
        for finding in self.findings.values():
            causes.setdefault(finding.cause_key, []).append(finding)
        return {key: sorted(members, key=lambda f: (size(f.program), f.signature)) for key, members in sorted(causes.items())}

    def link(self, first: Finding, second: Finding, why: str = "each one's shrunk minimal program shows the other") -> None:
        """Record that the causes of ``first`` and ``second`` are one bug (never two verdicts)."""
        a, b = sorted((first.cause_key, second.cause_key))
        if a != b and first.verdict == second.verdict:
            self.links[(a, b)] = why

    def bugs(self) -> list[Bug]:
        """The findings joined into bugs (see the module docstring), regressions and new first."""
        causes = self.causes()
        # A link joins two causes: a name the two share and no other cause has.
        links: dict[str, list[tuple[str, str]]] = {}
        for a, b in sorted(self.links):
            if a in causes and b in causes:
                links.setdefault(a, []).append((a, b))
                links.setdefault(b, []).append((a, b))
        joined = connected(
            list(causes),
            lambda key: [key, *links.get(key, ()), *(k for f in causes[key] for k in join_keys(f))],
            kept_apart=lambda key: kept_apart(f.violation for f in causes[key]),
            shown_under=lambda key: causes[key][0].placements,  # a cause's findings share their placements
        )
        bugs = [self._bug([f for key in keys for f in causes[key]]) for keys in joined]
        return sorted(bugs, key=bug_order)

    def _bug(self, members: list[Finding]) -> Bug:
        members = sorted(members, key=lambda f: (size(f.program), f.signature))
        key = members[0].cause_key  # the cause of the smallest program's finding names the bug
        why = {}
        for f in members:
            if f is members[0]:
                why[f.signature] = "the finding of the bug's smallest program"
            elif f.cause_key == key:
                why[f.signature] = f"same identity: {fault_of(f.violation)[:200]}"
            elif set(join_keys(f)) & set(join_keys(members[0])):
                why[f.signature] = "the same minimal program, or the same op in other words on another path"
            else:
                reason = self.links.get(tuple(sorted((key, f.cause_key))))
                why[f.signature] = reason or "joined through another member: each one's shrunk minimal program shows the other's"
        # Known by its identity (its key, or its id), never because a member is: a member's
        # finding once filed must not make every bug it later joins known.
        known = self.known.get(key) or self.known.get(short_id(key))
        return Bug(key, members, why, known)

    def merge(self, other: FindingStore) -> None:
        """Fold in another store (another lane's): counts add up, the smaller program (with its
        choices and shrink state) and the earlier first sighting win."""
        self.links.update(other.links)
        for sig, theirs in other.findings.items():
            mine = self.findings.get(sig)
            if mine is None:
                self.findings[sig] = theirs
                continue
            mine.count += theirs.count
            mine.first_seen_seconds = earliest((mine.first_seen_seconds, theirs.first_seen_seconds))
            if size(theirs.program) < size(mine.program):
                mine.program, mine.violation = theirs.program, theirs.violation
                mine.choices, mine.weights, mine.shrunk = theirs.choices, theirs.weights, theirs.shrunk
            elif theirs.program == mine.program and theirs.shrunk and not mine.shrunk:
                mine.shrunk = True

    def by_verdict(self, verdict: Verdict) -> list[Finding]:
        return [f for f in self if f.verdict == verdict]

    def __iter__(self):
        return iter(
            sorted(
                self.findings.values(),
                key=lambda f: (VERDICTS.index(f.verdict), f.known_reason is not None, f.violation.path, f.violation.oracle, f.id),
            )
        )

    def __len__(self) -> int:
        return len(self.findings)

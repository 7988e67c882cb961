"""Joining: whether two failures are one fault, what keeps bugs apart, and which failure a shrink
may move to. One rule, ``joined``, makes bugs of findings: the campaign's ``FindingStore`` calls it
on its findings, ``fuzzdce merge`` on the members of the bug records it reads back (each stores, as
data, what this module joins by); the shrinker asks ``same_failure`` and ``settled_links``.

A failure is known by its fault's identity (``faults.Fault.identity``: where Thunder fails, a tuple
of fields) and its *site* (the op it is about, named by the failure or by its context); every key
here is a tuple of such data, never text. Failures join into one bug by evidence a user can check
(``findings`` says how a campaign gathers it):

- **one fault**: the same fault under the same verdict and placements is one *cause*, whatever the
  path or call (``cause_key``);
- **one settled program**: findings whose minimal programs, each a finished shrink's result, are
  identical are one fault, whichever path and oracle showed each (``join_keys``); and two causes
  whose settled programs each show the other's fault (``mark``, ``placed_marks``) are one bug;
- **one decision**: findings whose causes a bisection traced to the same decision of a placement's
  (``decision_identity``: a removal and why it was live, a raise and what was malformed) are one
  bug, whatever each shows (splits at any op, raises, dce-sound, wrong values); two decisions are
  kept apart, whatever their failures share (``findings_kept_apart``, ``clash``); ``fuzzdce
  bisect`` groups its failures by decision alike (``by_decision``);
- **one op in other words**: an exception or split at the same op (jit-grad's "no gradient
  transform for prims.index_add", thunderfx's "VJP for PrimIDs.INDEX_ADD"), or in the same words
  where the words are the fault (``words_site``); a wrong value where values first differ.

But a bug holds at most one of each label ``kept_apart`` gives (``Label``): the kind of exception
Thunder raised, the fault label (the op it is about, or its words; for an exception torch raised on
what Thunder handed it, the op of the statement it ran, so it joins only a fault that explains it),
the frame Thunder raised at and the op a misstatement is stated for; and its findings have a
Thunder in common (``connected``). A link
that would break either is not followed, so no bug glues two faults through a third. A bug is known
by its smallest program's cause, or by its decision (``bug_key``); its id hashes that identity.

A shrink keeps a failure when a candidate shows the same path, oracle and fault (``same_failure``):
a different failure is another bug, so a shrink never slips from one fault to another.

Below ``findings`` (which uses it on findings) and above ``faults`` and ``model``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

from fuzzdce.core.decisions import identity_text
from fuzzdce.core.faults import Fault, Identity, Misstatement, Origin, Raised, Split, WrongValue, fault_of
from fuzzdce.core.model import Verdict, Violation
from fuzzdce.core.signatures import finding_signature, identity_id

Item = TypeVar("Item")


class Label(NamedTuple):
    """What a bug holds at most one of, per ``kind``: "raised" (an exception kind Thunder raised),
    "fault" (the op a failure is about, or its words) or "frame" (where Thunder raised). A fault
    known by its words (``by_words``) may say ``at`` which op it was met, when that is part of it."""

    kind: str
    text: str
    at: str = ""
    by_words: bool = False

    def __str__(self) -> str:
        return f"{self.text} | at {self.at}" if self.at else self.text


def cause_key(verdict: Verdict, placements: Sequence[str], fault: Fault) -> Identity:
    """What joins findings into one cause with no further evidence: the same fault under the same
    verdict and placements, whatever the path or call."""
    return (str(verdict), tuple(placements), "fault", fault.identity())


def cause_text(verdict: Verdict, placements: Sequence[str], fault: Fault) -> str:
    """A cause in words (a bug's ``key``, which a known-findings entry may name it by): display only."""
    return finding_signature(verdict, placements, f"fault | {fault}")


def decision_key(verdict: Verdict, placements: Sequence[str], decided: Identity) -> Identity:
    """What a bug known by its decision (``decision_identity``) is known by."""
    return (str(verdict), tuple(placements), "decision", decided)


def decision_text(verdict: Verdict, placements: Sequence[str], decided: Identity) -> str:
    """``decision_key`` in words: display only."""
    return finding_signature(verdict, placements, f"decision | {identity_text(decided)}")


def same_failure(v: Violation, target: Violation) -> bool:
    """Does ``v`` keep ``target``'s failure: the same path, oracle and fault (for a wrong value, the
    op where it first differs)? A different failure is another bug, so a shrink (and a minify)
    never slips from one fault to another."""
    return (v.path, v.oracle, fault_of(v)) == (target.path, target.oracle, fault_of(target))


def mark(verdict: Verdict, violation: Violation) -> Identity:
    """What a settled program must show of a cause for the cause to join it: its fault under its
    verdict; under a placement the cause's finding has too (``placed_marks``: one faulty
    placement's bug never joins another's)."""
    return (str(verdict), fault_of(violation).identity())


def placed_marks(item: Any) -> set[tuple[Identity, str]]:
    """(``mark``, placement) for each placement ``item`` shows under: a ``findings.Finding``, or a
    violation a settled program shows (a ``findings.Triaged``). A settled program shows a cause when the two share a pair."""
    shown = mark(item.verdict, item.violation)
    return {(shown, p) for p in item.placements}


def settled_links(
    causes: Mapping[Identity, Sequence[Any]], shown: Mapping[Any, Sequence[Any]]
) -> list[tuple[Identity, Identity]]:
    """(cause, other cause) for each cause whose smallest program (its findings' first) is settled
    (``shown``: settled program -> what it shows, each a ``findings.Triaged``) and shows the other
    (``placed_marks``) under a placement of the cause's: one minimal program showing two failures
    of one Thunder is one fault (a DCE drop and the raise it causes). ``connected``'s kept-apart
    labels still keep two exception types apart, and one verdict joins only its own."""
    showing: dict[tuple[Identity, str], set[Identity]] = {}  # (mark, placement) -> the causes with such a finding
    for key, members in causes.items():
        for f in members:
            for pair in placed_marks(f):
                showing.setdefault(pair, set()).add(key)
    links = []
    for key, members in causes.items():
        settled = shown.get(members[0].program)
        if settled is None:
            continue
        placements = {p for f in members for p in f.placements}
        others = {
            other
            for t in settled
            if placements & set(t.placements)
            for pair in placed_marks(t)
            for other in showing.get(pair, ())
        }
        links.extend((key, other) for other in sorted(others - {key}))
    return links


# --- what keeps bugs apart ---------------------------------------------------------------------------


def words_site(fault: Fault, site: str) -> str:
    """Where an exception known by its words alone was met, when that is part of the fault: a
    split's FX target, a raise's outermost Thunder symbol when it was raised in an op's own code
    (``faults.Origin.OP_CODE``). Words say what went wrong, not where: "tuple index out of range" was
    ``logsumexp``'s squeeze of a 0-d tensor and ``index_select``'s take of one, and a split of
    logsumexp in those words joined index_select's raise. A raise in code every op goes through
    (a transform's own words) has no site: it is one fault whichever op met it."""
    if not site:
        return ""
    if isinstance(fault, Split) or (isinstance(fault, Raised) and fault.origin == Origin.OP_CODE):
        return site
    return ""


def fault_label(fault: Fault, site: str) -> Label | None:
    """What a bug holds at most one of: the op a raised exception or a split names, else its words;
    the op where a wrong value first differs; None for the oracles that only observe a fault. An
    exception torch raised in its own code on what Thunder handed it (``Raised.in_torch``: Dynamo
    refusing a generated trace's statement) is a consequence of a Thunder fault, but only of one
    that explains it: its label is the op of the statement torch ran (its site), so it joins a
    fault about that op, or one that only observes (a DCE that removed what the statement reads),
    never a fault about another op that a program shows beside it; with no site, it has none."""
    if isinstance(fault, Raised | Split):
        if isinstance(fault, Raised) and fault.in_torch:
            return Label("fault", f"op {site}") if site else None
        if fault.names(site):
            return Label("fault", f"op {site}")
        # Words say what went wrong, not where: the op it was met at goes with them.
        return Label("fault", f"words {fault.message_words}", words_site(fault, site), by_words=True)
    if isinstance(fault, WrongValue):  # not localised, a wrong value is labelled by its oracle and call alone
        return Label("fault", f"op {site}" if site else fault.unlocalised())
    return None


def kept_apart(failures: Iterable[tuple[Fault, str]]) -> set[Label]:
    """What a bug holds at most one of each, for failures given as (fault, site): the kinds of
    exception Thunder raised (a raise torch made in its own code on what Thunder handed it is not
    one), the frames it raised at (two frames are two faults, whatever the words), the ops whose
    metadata a trace misstates, and the fault labels. One small program can show two faults
    (``nll_loss`` raised a ``TypeError`` on jit and a ``ValueError`` under grad), and two bugs are
    better than one that hides another. The campaign's findings and ``fuzzdce merge``'s bug records
    are kept apart by this one rule.

    A misstatement carries no fault label: ops traced from a misstated tensor fail through it (a
    ``zeros(y.shape)`` of a misstated ``y`` returns the stated shape), and it joins the fault its
    program shows. But two ops' misstatements are two faults (``faults.Misstatement``), even where
    one meta function states both: a bug holds one op's, so no failure shown beside each glues them."""
    labels: set[Label] = set()
    for fault, site in failures:
        if isinstance(fault, Raised) and not fault.in_torch:
            labels.add(Label("raised", fault.exception))
        if isinstance(fault, Raised) and fault.frame and fault.in_thunder:
            labels.add(Label("frame", fault.frame))
        if isinstance(fault, Misstatement):
            labels.add(Label("misstated", f"op {fault.op}"))
        label = fault_label(fault, site)
        if label is not None:
            labels.add(label)
    return labels


def decision_identity(finding: Any) -> Identity | None:
    """The placement's decision that breaks, as ``finding``'s cause's bisection found it
    (``core.decisions.Bisection.identity``), or None (not bisected, or no single edit)."""
    return finding.decision_identity


def findings_kept_apart(findings: Iterable[Any]) -> set[Label]:
    """What a bug holds at most one of, for a cause's findings: its decision, where bisection named
    one (a split at abs and a KeyError at reshape that one removal causes are one bug; two
    removals are two), and ``kept_apart``'s labels of its failures (their faults and sites)."""
    findings = list(findings)
    decided = {Label("decision", identity_text(i)) for f in findings if (i := decision_identity(f)) is not None}
    # The failures' labels stay beside the decision: against a cause with no decision (not bisected,
    # or no single edit) they are what keeps two faults apart; ``clash`` lets two decisions decide alone.
    return decided | kept_apart((f.fault, f.site) for f in findings)


def compatible(label: Label, other: Label) -> bool:
    """May one bug hold both labels (of one kind)? The same label; or the same words, one of them
    met at an op and the other at none that is part of the fault (``words_site``)."""
    if label == other:
        return True
    return label.by_words and other.by_words and label.text == other.text and not (label.at and other.at)


def by_kind(labels: Iterable[Label]) -> dict[str, set[Label]]:
    """Labels by kind."""
    kinds: dict[str, set[Label]] = {}
    for label in labels:
        kinds.setdefault(label.kind, set()).add(label)
    return kinds


def clash(labels: set[Label], other: set[Label] = frozenset()) -> bool:
    """Would joining ``labels`` and ``other`` put two faults in one bug: a kind both hold, with no
    label of it in common (``compatible``)? (Alone: do ``labels`` hold two of one kind?) A bug holds
    one raised kind and one fault label; a cause whose one fault was met at several ops (a name
    collision in the splitter, whatever node it hit) holds several, and joins what shares one."""
    if not other:
        return any(len(same) > 1 for same in by_kind(labels).values())
    mine, theirs = by_kind(labels), by_kind(other)
    if "decision" in mine and "decision" in theirs:  # the decision is the bug: symptoms say nothing more
        return not mine["decision"] & theirs["decision"]
    return any(kind in theirs and not any(compatible(a, b) for a in mine[kind] for b in theirs[kind]) for kind in mine)


def connected(
    items: Sequence[Item],
    names: Callable[[Item], Iterable[Hashable]],
    kept_apart: Callable[[Item], Iterable[Label]] = lambda item: (),
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


def by_decision(items: Iterable[Item], decided: Callable[[Item], Identity | None]) -> list[list[Item]]:
    """``items`` grouped by the decision that breaks each (``decided``: its bisection's
    ``Bisection.identity``), in their order: one decision is one bug, whatever failures it causes
    (``fuzzdce bisect`` says each decision once, under every failure it causes). An item whose
    bisection named no single decision stands alone."""
    return connected(list(items), lambda item: [d] if (d := decided(item)) is not None else [])


def join_keys(finding: Any) -> list[Identity]:
    """What joins a finding into a bug beyond its cause (``cause_key``), one name per placement
    showing it (findings sharing a name and so a placement join; one faulty placement's finding
    never joins another's):
    - its program, once it is settled (``settled``: a finished shrink's result): findings whose
      minimal programs are identical are one fault, whichever path and oracle showed each;
    - its fault, under this placement (a finding that this and another placement show joins
      this placement's bug of the same fault);
    - its site, for an exception or a split: one fault in different words on different paths
      (jit-grad's "no gradient transform for prims.index_add", thunderfx's "VJP for
      PrimIDs.INDEX_ADD"), or in the same words at the same op (``words_site``), and for a wrong
      value, where values first differ."""
    keys: list[Identity] = []
    fault, site = finding.fault, finding.site
    label = fault_label(fault, site)
    decided = decision_identity(finding)
    for placement in finding.placements:
        head = (str(finding.verdict), placement)
        if decided is not None:  # one decision of the placement's, whatever failure it causes
            keys.append((*head, "decision", decided))
        if finding.settled is not None:
            keys.append((*head, "program", finding.settled))
        keys.append((*head, "fault", fault.identity()))  # the same fault under other placements besides
        if label and (site or not fault.is_value):  # one fault in other words on another path: its op, or its words
            keys.append((*head, "value" if fault.is_value else "exception", tuple(label)))
    return keys


# --- the one join: findings into bugs --------------------------------------------------------------
#
# A *finding* here is anything with: ``verdict``, ``placements`` (those showing it), ``fault``,
# ``site``, ``settled`` (its program's text once a finished shrink's result, else None),
# ``decision_identity`` (or None), ``size`` (``findings.size`` of its program) and ``signature``
# (a tie-break). The campaign's ``findings.Finding`` is one; a bug record's member, read back from
# bug.json, is another: ``fuzzdce merge`` joins members exactly as the campaign joins findings.


def smallest_first(findings: Iterable[Item]) -> list[Item]:
    """Findings by their program's size, then signature: the first is a bug's smallest."""
    return sorted(findings, key=lambda f: (f.size, f.signature))


def causes_of(findings: Iterable[Any]) -> dict[Identity, list[Any]]:
    """The findings by cause (``cause_key``), each cause's smallest program first, causes in the
    order of their ids (the same whichever process or record they come from)."""
    causes: dict[Identity, list[Any]] = {}
    for f in findings:
        causes.setdefault(cause_key(f.verdict, f.placements, f.fault), []).append(f)
    return {key: smallest_first(causes[key]) for key in sorted(causes, key=identity_id)}


def joined(findings: Iterable[Item], links: Iterable[tuple[Identity, Identity]] = ()) -> list[list[Item]]:
    """The findings joined into bugs, each bug's smallest program first: by cause, by ``links``
    between causes (the evidence a shrink found: a settled program showing the other's fault;
    ``fuzzdce merge`` reads them back from bug.json), and by ``join_keys``; kept
    apart by ``findings_kept_apart`` and by their Thunders (``connected``)."""
    causes = causes_of(findings)
    pairs = sorted({tuple(sorted(pair, key=identity_id)) for pair in links}, key=lambda p: [identity_id(k) for k in p])
    linked: dict[Identity, list[Identity]] = {}
    for a, b in pairs:
        if a in causes and b in causes and a != b:
            linked.setdefault(a, []).append(("link", a, b))
            linked.setdefault(b, []).append(("link", a, b))
    groups = connected(
        list(causes),
        lambda key: [key, *linked.get(key, ()), *(k for f in causes[key] for k in join_keys(f))],
        kept_apart=lambda key: findings_kept_apart(causes[key]),
        shown_under=lambda key: causes[key][0].placements,  # a cause's findings share their placements
    )
    return [smallest_first(f for key in keys for f in causes[key]) for keys in groups]


def bug_key(members: Sequence[Any]) -> tuple[Identity, str]:
    """(identity, text) of the bug ``members`` make (smallest first): the cause of its smallest
    program's finding, unless a member's bisection named the decision that breaks (then the bug
    is known by that, whatever it shows). Its id is ``identity_id`` of the identity; the text is
    for people (and known-findings entries) only."""
    first = members[0]
    decided = next((d for f in members if (d := decision_identity(f)) is not None), None)
    if decided is not None:
        verdict, placements = first.verdict, first.placements
        return decision_key(verdict, placements, decided), decision_text(verdict, placements, decided)
    return cause_key(first.verdict, first.placements, first.fault), cause_text(first.verdict, first.placements, first.fault)

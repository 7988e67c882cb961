"""A placement's DCE decisions as data: the edits a run made, the one that breaks, and the bug's
identity by that decision.

``fuzzing.bisection`` finds them (its docstring is the feature's guide: calls, edits, gated runs,
the search), with ``running.decisions``' gated runs; this module is what the rest of fuzzdce reads:
``Edit`` (one call of what a placement replaced that did otherwise than unpatched Thunder),
``Bisection`` (the search's result, with the culprit and whether the other edits matter) and
``Bisection.identity``, by which ``joining`` knows a bug:

- a **removal**: the placement, each removed subsymbol's symbol and why unpatched Thunder keeps it
  (``liveness.why_live``'s kinds: an output of its parent, read by a kept subsymbol, a keep-tag;
  none: it was dead there);
- a **raise**: the placement, the exception's kind, where in Thunder it was raised and what is
  wrong with the bound symbol the call was given (``running.decisions.malformations``'s kinds);
  never the parent symbol (abs, add, reshape): one defect meets every symbol;
- any other **change** (a kept subsymbol edited, a value returned otherwise, a raise that went):
  the placement, the replaced function and the symbols removed and added.

Every failure one decision causes (splits at any op, raises, wrong values, dce-sound) is one bug;
two decisions are two. Where the search found no single edit (``identity`` None), the bug keeps its
failure's identity. Plain data throughout: it crosses processes and is written in ``bug.json``.
Its words (``describe``, ``summary``) are made from the data, never read back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from fuzzdce.core.model import Oracle


@dataclass(frozen=True)
class Removed:
    """A subsymbol an edit removed: its head as printed, its symbol, its parent's symbol and depth,
    why unpatched Thunder keeps it (kinds, and the words of each), and whether only some of its
    outputs were pruned."""

    head: str
    symbol: str
    parent: str
    depth: int
    reasons: tuple[str, ...] = ()
    why: tuple[str, ...] = ()
    pruned: bool = False
    # Where it stood in what unpatched Thunder's call produced: the produced bound symbol's index,
    # then a subsymbol index per level (``running.decisions`` removes it alone there, to narrow).
    where: tuple[int, ...] = ()

    def key(self) -> tuple:
        return (self.symbol, self.reasons or ("dead",), self.pruned)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Removed:
        """A removal as ``asdict`` wrote it (lists back to tuples)."""
        return Removed(**{**data, **{name: tuple(data.get(name, ())) for name in ("reasons", "why", "where")}})


@dataclass(frozen=True)
class Edit:
    """One call of what a placement replaced (``label``), the ``index``-th of its run, whose outcome
    differs from unpatched Thunder's at that point. ``kind``: "removal" (subsymbols removed,
    nothing else), "raise" (the placement's version raised where the original returned, or raised
    another type), "no raise" (the reverse), "change" (anything else)."""

    index: int
    label: str
    kind: str
    function: str = ""  # the replaced function's name where it is defined (``Symbol.__call__``)
    symbol: str = ""  # the bound symbol's symbol: display only, never identity
    before: str = ""  # its head as unpatched Thunder made it
    before_text: str = ""  # with its decomposition, one line a subsymbol
    after_text: str = ""
    removed: tuple[Removed, ...] = ()
    added: tuple[str, ...] = ()
    added_symbols: tuple[str, ...] = ()  # the symbols of ``added``, as data
    # Bound symbols the call produced as other symbols ("add -> sub"; "(none)" for one it did not
    # produce, or produced besides): a change of what runs, not of a decomposition.
    rebound: tuple[str, ...] = ()
    error_type: str = ""
    error_kind: str = ""  # ``faults.raised_kind``: one kind for every way of saying "unbound name"
    error_message: str = ""
    error_frame: str = ""
    malformed: tuple[str, ...] = ()  # what is wrong with the bound symbol it was given, in words
    malformation_kinds: tuple[str, ...] = ()

    def live_removals(self) -> tuple[Removed, ...]:
        """The removals that were live where they were made (unpatched Thunder keeps each for a
        reason), else all: a dead subsymbol's removal is what a correct DCE does, and one that
        died with the live one it fed (``t = clamp(a)`` with the ``copy_`` reading it) is no decision
        of its own."""
        return tuple(r for r in self.removed if r.reasons) or self.removed

    @property
    def decisions(self) -> int:
        """How many decisions the call made: a raise one; a removal or change one per kind of live
        removal, symbol added and symbol made otherwise (at least one)."""
        if self.kind in ("raise", "no raise"):
            return 1
        kinds = {r.key() for r in self.live_removals()} | set(self.added_symbols) | set(self.rebound)
        return max(1, len(kinds))

    def key(self) -> tuple:
        """What the edit is, without where it was met (``Bisection.identity``)."""
        if self.kind == "raise":
            return ("raise", self.error_kind, self.error_frame, self.malformation_kinds)
        if self.kind == "no raise":
            return ("no raise", self.function, self.error_kind, self.error_frame)
        removed = tuple(sorted(dict.fromkeys(r.key() for r in self.live_removals())))
        if self.kind == "removal":
            return ("removal", removed)
        return ("change", self.function, removed, tuple(sorted(set(self.added_symbols))), tuple(sorted(set(self.rebound))))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(data: dict[str, Any]) -> Edit:
        values = {f.name: data[f.name] for f in fields(Edit) if f.name in data}
        values["removed"] = tuple(Removed.from_json(r) for r in data.get("removed", ()))
        for name in ("added", "added_symbols", "rebound", "malformed", "malformation_kinds"):
            values[name] = tuple(values.get(name, ()))
        return Edit(**values)


class Check(enum.Enum):
    """A check a bisection makes of the culprit its prefixes named, each one gated run."""

    ALONE = "alone"  # the culprit's call alone done as the placement does it: does the failure show?
    WITHOUT = "without"  # every call but the culprit's: does the failure go?
    NARROWED = "narrowed"  # one of the culprit's removals alone: which one fails?


# Each check's question, in the words that say it went unanswered.
CHECK_QUESTIONS = {
    Check.ALONE: "Whether that call alone fails",
    Check.WITHOUT: "Whether the failure goes with that one call done as unpatched Thunder does it",
    Check.NARROWED: "Which of that call's removals alone fails",
}


@dataclass(frozen=True)
class Bisection:
    """What bisecting one failure under ``placement`` found: every edit of the failing run, the
    ``culprit`` (the first without which the failure goes), whether it ``alone`` fails (None: not
    checked), whether the run ``without`` it passes, the runs it took, and ``note`` where it found
    nothing. ``program`` and ``path``: what it was bisected on (the program's text, source and
    inputs: ``findings.program_text``): a finding whose program is replaced drops it
    (``FindingStore.add``), since its calls and statements are the old program's."""

    placement: str
    edits: tuple[Edit, ...] = ()
    culprit: Edit | None = None
    alone: bool | None = None
    without: bool | None = None
    runs: int = 0
    note: str = ""
    path: str = ""
    oracle: str = ""
    # Of a culprit that removed several subsymbols, the one whose removal alone fails (None: not
    # narrowed, or none alone does).
    narrowed: Removed | None = None
    # Bisected the other way: the failure is the reference's, which the placement does not show,
    # and the culprit is the edit that makes it go (without it, it comes back). Never a bug's
    # identity: what a bug of the reference's failure is known by stays its failure.
    fixes: bool = False
    # The checks of the culprit whose run did not finish, each with why (the job's failure): their
    # answers (``alone``, ``without``, ``narrowed``) are unknown, the culprit stays named.
    unanswered: tuple[tuple[Check, str], ...] = ()
    # The culprit makes a decision an earlier cause was bisected to, and was tried alone first: the
    # search stopped there (``without`` not checked; the earlier cause's bisection checked it).
    known: bool = False

    @property
    def names_an_edit(self) -> bool:
        """Did the search name one edit without which the failure (or, ``fixes``, the reference's
        failure going) is undone?"""
        # The other way, "without it, it comes back" is the test: the same removal made by earlier
        # calls too (a symbol traced again) may be needed beside it, and alone it need not suffice.
        return self.culprit is not None and self.without is not False and (self.fixes or self.alone is not False)

    program: str = ""
    # False: a gated run produced no result (cut at its job's limit, or its worker died), and the
    # search stopped there (``note`` says so): the program is not bisected on that path again.
    finished: bool = True

    def made_on(self, program_text: str) -> bool:
        """Was it bisected on the program of text ``program_text``?"""
        return self.program == program_text

    @property
    def identity(self) -> tuple | None:
        """The decision that breaks, as the bug's identity; None where no single edit explains the
        failure (it needs others too, or no edit was found)."""
        if self.culprit is None or self.alone is False or self.fixes:
            return None
        if self.narrowed is not None:
            return (self.placement, "removal", (self.narrowed.key(),))
        if self.culprit.decisions > 1:  # one call, several decisions: which one breaks is not known
            return None
        return (self.placement, *self.culprit.key())

    @property
    def others(self) -> tuple[Edit, ...]:
        """The edits besides the culprit (which do not matter when ``alone``)."""
        if self.culprit is None:
            return self.edits
        return tuple(e for e in self.edits if e.index != self.culprit.index)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["edits"] = [e.to_json() for e in self.edits]
        data["culprit"] = self.culprit.to_json() if self.culprit is not None else None
        data["narrowed"] = asdict(self.narrowed) if self.narrowed is not None else None
        data["unanswered"] = [[check.value, why] for check, why in self.unanswered]
        return data

    @staticmethod
    def from_json(data: dict[str, Any]) -> Bisection:
        values = {f.name: data[f.name] for f in fields(Bisection) if f.name in data}
        values["edits"] = tuple(Edit.from_json(e) for e in data.get("edits", ()))
        values["culprit"] = Edit.from_json(data["culprit"]) if data.get("culprit") else None
        values["narrowed"] = Removed.from_json(data["narrowed"]) if data.get("narrowed") else None
        values["unanswered"] = tuple((Check(check), why) for check, why in data.get("unanswered", ()))
        return Bisection(**values)


def identity_text(identity: tuple) -> str:
    """An identity as one line (a join key, a bug key): its parts joined."""
    return " | ".join(str(part) for part in identity)


# --- in the maintainer's words ----------------------------------------------------------------------


def _block(text: str) -> list[str]:
    return ["    " + line for line in text.splitlines()]


def _removal_words(removed: Removed) -> str:
    """A removal as what the call did, with why unpatched Thunder keeps what it removed."""
    why = "; ".join(removed.why) if removed.why else "it is dead there (a correct DCE may remove it)"
    what = "prunes outputs of" if removed.pruned else "removes"
    return f"{what} {_removed_from(removed)} ({why})"


def _removed_from(removed: Removed) -> str:
    return f"`{removed.head}` from `{removed.parent}`"


def _edit_words(edit: Edit) -> str:
    """One edit in a phrase, for the list of edits that do not matter."""
    if edit.kind == "raise":
        return f"the raise of {edit.error_type} on `{edit.before}`"
    if edit.kind == "no raise":
        return f"{edit.function} returning where unpatched Thunder raises {edit.error_type}"
    if edit.rebound:
        return f"{edit.function} making {', '.join(dict.fromkeys(edit.rebound))}"
    if edit.removed:
        said = [f"the {'pruning of outputs of' if r.pruned else 'removal of'} {_removed_from(r)}" for r in edit.removed]
        more = len(said) - MOST_REMOVALS_SAID
        return "; ".join(said[:MOST_REMOVALS_SAID]) + (f" and {more} more in that call" if more > 0 else "")
    return f"the change of `{edit.before}`"


# The most removals of one call named in the list of edits that do not matter: a call of a big
# decomposition removes dozens, and the list is there to say they do not matter, not to show them.
MOST_REMOVALS_SAID = 2


def describe(bisection: Bisection, oracles: Mapping[str, Oracle] | None = None) -> list[str]:
    """The decision that breaks, in the words of the engineer changing the DCE: what the call did,
    to which bound symbol (before and after), what goes with it undone (in the words of its oracle
    among ``oracles``, ``Oracle.holds``; the registry is the caller's, above this wing), and which
    edits of the program do not matter. Empty when there is nothing to say."""
    b = bisection
    if b.culprit is None:
        if not b.note:
            return []
        what = f"what made the reference's failure go under {b.placement}" if b.fixes else "decision"
        return [f"{what}: not bisected: {b.note}" + (f" ({b.runs} runs)" if b.runs else "")]
    c = b.culprit
    doer = f"{b.placement}'s {c.function}"
    lines: list[str] = []
    if c.kind == "raise":
        where = f" at {c.error_frame}" if c.error_frame else ""
        head = f"{doer} raises {c.error_type}: {c.error_message}{where}, on `{c.before}`"
        if c.malformed:
            lines.append(
                f"{head}, whose {'; '.join(c.malformed)}: the bound symbol was malformed before the DCE, which only surfaces it"
            )
        else:
            lines.append(f"{head}, a well-formed bound symbol: the DCE itself fails there")
    elif c.kind == "no raise":
        lines.append(f"{doer} returns where unpatched Thunder raises {c.error_type}: {c.error_message}")
    elif b.narrowed is not None:
        lines.append(f"{doer} {_removal_words(b.narrowed)}")
        rest = len({r.head for r in c.removed} - {b.narrowed.head})
        if rest:
            lines.append(f"  (that removal alone fails; the same call removes {rest} more, which it does not need)")
    else:
        said = "; ".join(_removal_words(r) for r in c.removed) or "changes it"
        if c.removed:
            lines.append(f"{doer} {said}")
        elif c.rebound:
            lines.append(f"{doer} makes other symbols than unpatched Thunder: {', '.join(dict.fromkeys(c.rebound))}")
        else:
            lines.append(f"{doer} changes `{c.before}`")
        if c.added:
            lines.append(f"  and adds {', '.join(f'`{a}`' for a in c.added)}")
    if c.before_text and c.kind != "raise" and b.narrowed is None:
        lines += ["  before:", *_block(c.before_text), "  after:", *_block(c.after_text or "(nothing)")]
    declared = (oracles or {}).get(b.oracle)
    if declared is not None:
        goes = declared.holds
    else:  # no oracle named, or none given to say it
        goes = f"the {b.oracle} check passes" if b.oracle else "the failure goes"
    if b.fixes:
        lines.insert(0, f"The reference's {b.oracle or 'failure'} failure goes under {b.placement} by this edit:")
        goes = "it comes back"
    if b.without:
        lines.append(f"With that one call done as unpatched Thunder does it, {goes}.")
    elif b.without is False:
        again = sum(1 for e in b.others if e.index > c.index and e.key() == c.key())
        still = "With that one call done as unpatched Thunder does it, the failure still shows: "
        if again:
            lines.append(still + f"{again} later call{'s make' if again != 1 else ' makes'} the same decision.")
        else:
            lines.append(still + "a later edit causes it too.")
    lines += [f"{CHECK_QUESTIONS[check]} is not known: its run did not finish ({why})." for check, why in b.unanswered]
    others = _others_words(b, c)
    if others is not None:
        lines.append(others)
    if b.identity is None and b.alone is not False and c.decisions > 1:
        lines.append(f"That one call makes {c.decisions} decisions at once: the bug keeps its failure's identity.")
    tried = "; the decision of an earlier cause, tried alone first" if b.known else ""
    lines.append(
        f"(bisection: {len(b.edits)} edit{'s' if len(b.edits) != 1 else ''}, {b.runs} runs on {b.path or 'its path'}{tried})"
    )
    return lines


def summary(bisection: Bisection) -> list[str]:
    """The decision in a line or two, for a script's docstring: what the call did, and whether the
    program's other edits matter."""
    first = describe(bisection)[:1]
    if bisection.culprit is None:
        return first
    others = _others_words(bisection, bisection.culprit)
    return first + ([others] if others is not None else [])


def _others_words(b: Bisection, c: Edit) -> str | None:
    """Whether the program's edits besides the culprit ``c`` matter, in a line (None: nothing to say)."""
    others = [e for e in b.others if e.key() != c.key()]
    if others and b.alone:
        said = list(dict.fromkeys(_edit_words(e) for e in others))
        shown = said[:4] + ([f"and {len(said) - 4} more"] if len(said) > 4 else [])
        return "The program's other edits do not matter: " + "; ".join(shown) + "."
    if b.alone is False and b.fixes:
        same = sum(1 for e in b.others if e.index < c.index and e.key() == c.key())
        if same:
            made = f"{same} earlier call{'s make' if same != 1 else ' makes'} the same edit"
            return f"Alone it does not make it go: {made}, needed too."
        return "That edit alone does not make it go: it needs earlier edits too."
    if b.alone is False:
        return (
            "That edit alone does not fail: it needs earlier edits too "
            "(no single decision; the bug keeps its failure's identity)."
        )
    if not b.others:
        return "It is the program's only edit."
    return None

"""A failure's *fault*: where Thunder fails, never how the message words it.

Two failures are one fault when Thunder fails in the same place: the text of a message is too fine
(a trace annotation, ``# t5: "cpu f32[2, 1]"``, makes every rank another failure) and, for values,
too coarse (every wrong value of a path reads "values differ"). A fault is a value (``Fault``), one
frozen dataclass per kind, each made by one constructor below, which the oracles call:

- ``Raised`` (``exception_fault``): its kind (``raised_kind``), the innermost Thunder frame that is
  not a generic helper (``model.ErrorInfo.frame``) and the symbol the message names, if any (a
  bound symbol's call ``prims.index_add(...)``, a ``PrimIDs.INDEX_ADD``, an FX target,
  ``aten::aminmax``); one raised by torch's autograd engine or dispatcher on Thunder's behalf
  (``Origin.TORCH_FOR_THUNDER``: a gradient Thunder's backward returned, an aten op thunderfx left to
  autograd) is known by its words and that symbol instead, never by the engine's frame, which
  every such error shares;
- ``Split`` (``split_fault``): a thunderfx split's reason type and the symbol its exception names,
  or, when it names none, the exception's words without names, numbers or annotations and the op
  of the FX node split off (``target_op``; never the node's name, which is the program's);
- ``WrongValue`` (``value_fault``: ``outputs``, ``mutations``, ``exact``) and ``Flag``
  (``flag_fault``: a ``requires_grad`` of ``grads``): the oracle, the call and the op of the first
  statement whose value is wrong, found by evaluating prefixes of the program (``running.localise``);
  until then, "not localised" on its path;
- ``Malformed`` (``names``), ``GuardProperty`` (``guards``: the property varied, and whether the
  call hit the cache or compiled again), ``UnsoundDce`` (``dce-sound``: what
  the DCE did wrong, never the symbol it did it in), ``Misstatement`` (``metadata``: the op whose
  tensor's shape, dtype, device or requires_grad a trace states otherwise than it runs, and the
  meta function that stated it);
- ``JobFailed`` (``crash``, ``timeout``), ``NotFixedPoint`` (``idempotent``), ``AcceptedRejected``
  (``rejects``), ``SplitChanged`` (``split-set``: the node's op, never its name);
- ``Stated`` (``fault_of``, for an oracle registered outside fuzzdce that makes none): its oracle
  and the key it states.

A fault is known by its identity (``Fault.identity``: its kind and the fields that say where
Thunder fails, a tuple); ids hash identities (``signatures.identity_id``). It prints as its parts
joined by " | ", made from its fields for people, and is written as data in bug records
(``Fault.to_json``); nothing reads it back from its text.

Besides its fault a failure may have a *site*: the op it is about, named by the failure or by its
context (the FX node a split hit, the outermost Thunder symbol on an exception's stack). One fault
in different words on different paths (jit-grad's "no gradient transform for prims.index_add", the
split's "VJP for PrimIDs.INDEX_ADD") has one site; ``joining`` joins such causes, and never two
faults of two sites.

Below ``joining`` (which joins by them) and above ``model``, ``tracebacks`` and ``signatures`` only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any, ClassVar

from fuzzdce.core.model import CallLabel, ErrorInfo, Violation
from fuzzdce.core.signatures import normalise
from fuzzdce.core.tracebacks import TORCH_FRAME

# Thunder annotates a proxy in a printed trace with its device, dtype and shape ("cpu f32[2, 1]");
# a message quoting a trace line carries it, and it says which shape a program drew, not where it failed.
_ANNOTATION = re.compile(r"\s*#\s*[A-Za-z_]\w*:\s*\"[^\"]*\"|\"(cpu|cuda:\d+|meta)\s+[a-z0-9]+\[[^\]]*\]\"")
# How a message names the symbol it is about: a bound symbol's call ("prims.index_add(" or
# "ltorch.add("), a primitive's id ("PrimIDs.INDEX_ADD"), an FX node's target ("<built-in method
# index_add of ...>", "<function relu at ...>", "aten.index_add.default").
_SYMBOL_PATTERNS = (
    re.compile(r"\b(?:prims|ltorch|torch|clang|ops|nn\.functional|F)\.([A-Za-z_][A-Za-z0-9_]*)\("),
    re.compile(r"\bPrimIDs\.([A-Z_][A-Z0-9_]*)"),
    re.compile(r"<(?:built-in )?(?:method|function) ([A-Za-z_][A-Za-z0-9_]*)"),
    re.compile(r"\baten(?:\.|::)([A-Za-z_][A-Za-z0-9_]*)"),
)
# An FX node's target in a split reason's info (``node.target``, after the node's own name): a
# function's repr ("<built-in method logsumexp of type object at 0x7f>", "<function softmax at 0x7f>",
# "<built-in function getitem>"), an op overload ("aten.add.Tensor"), or a method call's name ("zero_").
_TARGET = re.compile(r"target:\s*(<[^>]*>|[^\s,]+)")
# The node the info names, by its name and target: Dynamo names a node by the program's local or
# by its op with a counter ("v3", "getitem", "getitem_1"), which says which program it is in.
_NODE = re.compile(r"node with name:\s*\S+ and target:\s*(?:<[^>]*>|[^\s,]+)")
_BARE_NAME = re.compile(r"[A-Za-z_]\w*")

NOT_LOCALISED = "not localised"


def without_annotations(message: str) -> str:
    """``message`` without the device/dtype/shape annotations of trace lines it quotes."""
    return _ANNOTATION.sub("", message)


def symbol_named(text: str) -> str:
    """The symbol ``text`` names (lower case, without its namespace), or "" when it names none."""
    for pattern in _SYMBOL_PATTERNS:
        match = pattern.search(text)
        if match:
            return match.group(1).lower()
    return ""


def target_op(info: str) -> str:
    """The op of the FX node a thunderfx split reason's ``info`` names (lower case, without its
    namespace, address or the node's name), or "" when it names none."""
    match = _TARGET.search(info)
    if not match:
        return ""
    target = match.group(1)
    return symbol_named(target) or (target.lower() if _BARE_NAME.fullmatch(target) else words(target))


def without_node(info: str) -> str:
    """A split reason's ``info`` with the node it names (its name and target) said as "node": what
    it says of the node, whichever program's node it is."""
    return _NODE.sub("node", info)


# A tuple or list of numbers once ``normalise`` made each "<num>": a shape, a dims list. Its length
# is a rank, which the same fault has another of in every program: "shape of proxy t5 recomputes to
# (1, 1, 1, 1) incorrectly" and "... to (2,) incorrectly" are one fault, so they read alike.
_NUMBERS = re.compile(r"[(\[]<num>(?:, <num>)*,?[)\]]")


# Thunder prints a number proxy as "[IntegerProxy name=i0, value=-2, static=CONSTRAINT.STATIC]"
# (``NumberProxy.__repr__``). Where a trace holds proxies for numbers (thunderfx's splitter,
# jit-symbolic) a message quotes the proxy where jit's quotes the number: "start=-2 is not a valid
# index" was one bug on jit and another in thunderfx's split reason.
_NUMBER_PROXY = re.compile(r"\[(?:Integer|Float|Complex)Proxy(?: \(bool type\))? name=\w+, value=([^,\]]+), static=[\w.]+\]")


def numbers_for_proxies(message: str) -> str:
    """``message`` with each number proxy Thunder printed in it (``_NUMBER_PROXY``) the number it stands for."""
    return _NUMBER_PROXY.sub(r"\1", message)


def words(message: str) -> str:
    """A message's words without names, numbers, shapes, addresses or annotations: how it reads,
    for a failure with no frame to say where it came from. A number proxy reads as its number."""
    return _NUMBERS.sub("<numbers>", nameless(without_annotations(numbers_for_proxies(message))))


# Python says "a name was read that nothing bound" three ways, by how the code that read it ran:
# NameError (code Thunder generated and exec'd), UnboundLocalError (a function's local: a NameError
# too), a KeyError of the bare name (a table of values by name, as Thunder's interpreter and
# thunderfx's splitter keep). One fault that leaves a name unbound raises each, path by path.
UNBOUND_NAME = "an unbound name (NameError, UnboundLocalError, KeyError of a name)"
_NAME_ERRORS = frozenset({"NameError", "UnboundLocalError"})
_KEY_OF_A_NAME = re.compile(r"^KeyError\b[^:]*: '<name>'$")  # on ``nameless(message)``


def nameless(message: str) -> str:
    """``normalise``'s message with every counted name, whatever its stem, one name: Thunder names
    a proxy by its kind (``t0`` a tensor, ``f0`` a float), so one fault raises ``KeyError: 't0'``
    on one program and ``KeyError: 'f0'`` on another."""
    return re.sub(r"\b[A-Za-z_]+<n>", "<name>", normalise(message))


def raised_kind(error_type: str, message: str) -> str:
    """The kind of exception Thunder raised: its type, but ``UNBOUND_NAME`` for each of Python's
    ways of saying a name was read that nothing bound."""
    if error_type in _NAME_ERRORS or (error_type == "KeyError" and _KEY_OF_A_NAME.match(nameless(message))):
        return UNBOUND_NAME
    return error_type


# torch's autograd engine and dispatcher (``ErrorInfo.frame``): what raises there on Thunder's behalf
# (backward through a Function of Thunder's, an aten op without a derivative) raises from C++ under
# the one frame that called in, ``torch/autograd/graph.py:_engine_run_backward`` for every error.
_ENGINE_AND_DISPATCHER = re.compile(r"^torch/(autograd/|_ops\.py:)")
# Where Thunder defines ops: an exception raised there is about the op being defined; one raised
# elsewhere in Thunder (a transform, the interpreter) may be met through any op.
_OP_CODE = re.compile(r"^thunder/(torch/__init__|clang/__init__|core/prims)\.py:")


class Origin(StrEnum):
    """Whose code raised an exception, read once from its frame (``origin_of``) and kept as a field."""

    OP_CODE = "Thunder's op definitions"  # about the op being defined
    THUNDER = "Thunder"  # a transform, the interpreter: code every op goes through
    TORCH = "torch"  # torch's own code on what Thunder handed it
    TORCH_FOR_THUNDER = "torch for Thunder"  # torch's autograd engine or dispatcher running what Thunder gave it


def origin_of(frame: str) -> Origin:
    """Whose code raised at ``frame`` (``ErrorInfo.frame``: "" when unknown, taken as Thunder's)."""
    if _ENGINE_AND_DISPATCHER.match(frame or ""):
        return Origin.TORCH_FOR_THUNDER
    if (frame or "").startswith(TORCH_FRAME):
        return Origin.TORCH
    return Origin.OP_CODE if _OP_CODE.match(frame or "") else Origin.THUNDER


# --- the faults: one type per kind, one constructor each ---------------------------------------------

Identity = tuple  # of strings and nested tuples of strings: JSON keeps it, ``identity_id`` hashes it


class Fault:
    """A failure's fault: where Thunder fails, as a value (Hypothesis's ``InterestingOrigin`` is the
    model). Each kind is a frozen dataclass below, made by its constructor in this module. What it
    is known by is ``identity``: its kind and the fields that say where Thunder fails, a canonical
    tuple; two faults are one when their identities are, and ids hash it (``identity_id``). What a
    field holds that the identity leaves out says more of the same fault without making another (a
    raise's words, unless torch raised it on Thunder's behalf; a value's path once localised). Its
    text (``str``, ``parts``) is made from the fields for people to read, and nothing reads it back."""

    KIND: ClassVar[str] = ""

    def identity(self) -> Identity:
        raise NotImplementedError

    def parts(self) -> tuple[str, ...]:
        """Its fields in words, for display."""
        raise NotImplementedError

    def __str__(self) -> str:
        return " | ".join(self.parts())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Fault) and self.identity() == other.identity()

    def __hash__(self) -> int:
        return hash(self.identity())

    def to_json(self) -> dict[str, Any]:
        """The fault as data (a bug record keeps it; ``from_json`` makes it again)."""
        return {"kind": self.KIND, **{f.name: getattr(self, f.name) for f in fields(self)}}  # type: ignore[arg-type]

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Fault:
        """A fault ``to_json`` wrote."""
        cls = FAULT_KINDS[data["kind"]]
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    # What joining asks of every fault (``joining``); each kind answers for itself.
    is_value: ClassVar[bool] = False  # a wrong value of a call, known by where it first differs

    def names(self, site: str) -> bool:
        """Is ``site`` (the op it is about) the symbol the fault names?"""
        return False

    # What triage asks (``findings.triage``): does the fault stop Thunder's run of the path where it
    # happens (a raise, a split sending the op to eager, a dead or hung job), so that a failure the
    # reference meets later on that path cannot show? Such a fault of a Thunder under test masks it.
    stops_the_run: ClassVar[bool] = False


@dataclass(frozen=True, eq=False)
class Raised(Fault):
    """Thunder raised an exception: its kind (``raised_kind``), where (the innermost Thunder frame,
    or for one torch's autograd engine or dispatcher raised on Thunder's behalf its words), whose
    code that frame is (``Origin``) and the symbol its message names."""

    KIND: ClassVar[str] = "exception"
    stops_the_run: ClassVar[bool] = True

    exception: str
    frame: str
    symbol: str
    # The message's words (``words``): what a raise with no symbol is labelled by (``joining``).
    message_words: str = ""
    origin: str = Origin.THUNDER

    @property
    def by_torch_for_thunder(self) -> bool:
        """Raised by torch's autograd engine or dispatcher running what Thunder gave it."""
        return self.origin == Origin.TORCH_FOR_THUNDER

    @property
    def in_torch(self) -> bool:
        """Raised in torch's own code on what Thunder handed it (not on Thunder's behalf)."""
        return self.origin == Origin.TORCH

    @property
    def in_thunder(self) -> bool:
        """Raised in Thunder's own code (its op definitions included)."""
        return self.origin in (Origin.THUNDER, Origin.OP_CODE)

    def where(self) -> str:
        """What says where it was raised: its words, for one torch raised on Thunder's behalf (the
        engine's frame is every such error's), else its frame."""
        return self.message_words if self.by_torch_for_thunder else self.frame

    def identity(self) -> Identity:
        return (self.KIND, self.exception, str(self.origin), self.where(), self.symbol)

    def names(self, site: str) -> bool:
        return bool(site) and site == self.symbol

    def parts(self) -> tuple[str, ...]:
        where = f"raised by torch for Thunder: {self.message_words}" if self.by_torch_for_thunder else self.frame
        return (self.KIND, self.exception, where, self.symbol)


@dataclass(frozen=True, eq=False)
class Split(Fault):
    """thunderfx split a graph because Thunder raised on a node: the reason type and the symbol the
    exception names, or, when it names none, its words and the op of the node split off (``target``).

    Words say what went wrong, not where, and a split keeps no frame to say it: "tuple index out
    of range" was ``logsumexp``'s squeeze of a 0-d tensor and ``index_select``'s take of one, and a
    ``KeyError`` of a proxy's name is raised wherever a name went missing. So a split known by its
    words is known by its op as well (as ``joining.words_site`` labels it): one op's split for one
    reason, in any program, is one fault, and two ops' are two. A symbol the exception names is
    where Thunder fails, whichever op reached it ("VJP for PrimIDs.INDEX_ADD" under any op that
    decomposes to it): the node's op is then no part of the fault. Never the node's name, which
    Dynamo gives by the program ("v3", "getitem_1")."""

    KIND: ClassVar[str] = "split"
    stops_the_run: ClassVar[bool] = True

    reason: str
    symbol: str
    message_words: str = ""
    target: str = ""  # the op of the FX node split off (``target_op``)

    def identity(self) -> Identity:
        if self.symbol:
            return (self.KIND, self.reason, self.symbol, "", "")
        return (self.KIND, self.reason, "", self.message_words, self.target)

    def names(self, site: str) -> bool:
        return bool(site) and site == self.symbol

    def parts(self) -> tuple[str, ...]:
        at = (f"at {self.target}",) if self.target and not self.symbol else ()
        return (self.KIND, self.reason, self.symbol or self.message_words, *at)


@dataclass(frozen=True, eq=False)
class WrongValue(Fault):
    """A call's value is wrong (``outputs``, ``mutations``, ``exact``): the oracle, the call and the
    op where values first differ (``localise``). Until localised (``op`` None) it says only which
    output differs: one per path, as two faults on two paths would read alike."""

    KIND: ClassVar[str] = "wrong value"
    is_value: ClassVar[bool] = True

    oracle: str
    call: str
    path: str
    op: str | None = None

    @property
    def localisable(self) -> bool:
        """Not yet localised: ``localised_at`` may say where it first differs."""
        return self.op is None

    def localised_at(self, op: str) -> WrongValue:
        return replace(self, op=op)

    def identity(self, localised: bool = True) -> Identity:
        """Its kind, oracle, call and op; until localised, its path too. Not ``localised``: what it
        is wherever it first differs, on any path (what a replay of a script, with no statements to
        localise, compares)."""
        if not localised:
            return (self.KIND, self.oracle, self.call or CallLabel.PLAIN, "", "")
        return (self.KIND, self.oracle, self.call or CallLabel.PLAIN, self.op or "", self.path if self.localisable else "")

    def where(self) -> str:
        return f"first differs at {self.op or NOT_LOCALISED}"

    def unlocalised(self) -> str:
        """What it reads wherever it first differs, on any path: what a replay of a script (no
        statements to localise) shows, and the label of a value no op is known for."""
        return " | ".join((self.oracle, self.call or CallLabel.PLAIN, f"first differs at {NOT_LOCALISED}"))

    def parts(self) -> tuple[str, ...]:
        on = (f"on {self.path}",) if self.op is None else ()
        return (self.oracle, self.call or CallLabel.PLAIN, self.where(), *on)


@dataclass(frozen=True, eq=False)
class Flag(WrongValue):
    """An output's ``requires_grad`` differs from eager's (``grads``): its direction, and where it
    was decided: the autograd Function of Thunder's that marked it (``marked_by``: one fault at the
    Function, however many ops show it), else the op where it first differs (``localise``)."""

    KIND: ClassVar[str] = "requires_grad flag"

    direction: str = ""
    marked_by: str | None = None

    @property
    def localisable(self) -> bool:
        return self.op is None and self.marked_by is None

    def identity(self, localised: bool = True) -> Identity:
        if self.marked_by:
            return (self.KIND, self.oracle, self.call or CallLabel.PLAIN, self.direction, "marked by", self.marked_by)
        return (*super().identity(localised), self.direction)

    def where(self) -> str:
        return f"marked by {self.marked_by}" if self.marked_by else super().where()

    def parts(self) -> tuple[str, ...]:
        on = (f"on {self.path}",) if self.localisable else ()
        return (self.oracle, self.call or CallLabel.PLAIN, self.where(), self.direction, *on)


@dataclass(frozen=True, eq=False)
class Malformed(Fault):
    """A trace Thunder made is malformed: the problem's words and the kind of trace it is in (one
    wording in a backward and in a forward trace comes from two transforms)."""

    KIND: ClassVar[str] = "malformed trace"

    oracle: str
    problem: str
    trace: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.problem, self.trace)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, "MalformedTrace", self.problem, f"in a {self.trace or 'labelled'} trace")


@dataclass(frozen=True, eq=False)
class GuardProperty(Fault):
    """A second call on inputs the prologue must tell apart differs from eager's: the property
    varied, and whether the call reused the cached computation (``cache``: "hit", a guard let it
    through, or symbolic values reused it by design and it is wrong for them) or compiled anew
    ("miss": the guard worked, and what Thunder compiled for the new inputs is wrong). Those are
    two faults in two places (the prologue, the computation), whatever op shows them."""

    KIND: ClassVar[str] = "guard"

    oracle: str
    property: str
    cache: str = ""  # "hit", "miss", or "" where the compiled function does not say (``Call.cache``)

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.property, self.cache)

    def parts(self) -> tuple[str, ...]:
        cache = {"hit": ("it hit the cache",), "miss": ("it compiled again",)}.get(self.cache, ())
        return (self.oracle, self.property, *cache)


@dataclass(frozen=True, eq=False)
class UnsoundDce(Fault):
    """A DCE removed what was live: what it did wrong (dropped a subsymbol that produces its
    symbol's output, dropped one a kept subsymbol reads, dropped one tagged to be kept, pruned a
    kept one's live outputs, kept one changed), never the symbol it happened in. For the engineer
    changing the DCE, a drop under permute, flatten and amin is one defect in one function."""

    KIND: ClassVar[str] = "unsound dce"

    oracle: str
    wrong: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.wrong)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, "UnsoundDce", self.wrong)


@dataclass(frozen=True, eq=False)
class Misstatement(Fault):
    """A trace states a tensor's metadata otherwise than it is when it runs (``metadata``): the kind
    of trace, the op it is stated for, the code that stated it, and the attribute misstated (shape,
    dtype, device, requires_grad), never the program's shapes or names.

    The code that stated it is the op's own where the op decomposes (Thunder's ``cos``: its
    decomposition's prims state it for that op alone), and the meta function of a prim, which states
    its outputs itself (``stated_by``). One meta function may serve many prims: every torch op
    Thunder registers automatically is stated by one adaptor, which runs the op on fake tensors. The
    op is part of the fault all the same: whether the adaptor states an op rightly depends on the op
    (its fake-tensor kernel, its sizes under symbolic values), and one fault for every op it states
    made one bug of two ops' misstatements, which a failure shown beside either then linked. So one
    meta function's misstatements of two ops are two faults, and one op's in any program is one."""

    KIND: ClassVar[str] = "misstated metadata"

    oracle: str
    trace: str
    op: str
    attribute: str
    stated_by: str = ""  # the meta function of a prim that stated it (module.qualname); "" for a decomposed op

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.trace, self.op, self.stated_by, self.attribute)

    def parts(self) -> tuple[str, ...]:
        by = (f"stated by {self.stated_by}",) if self.stated_by else ()
        return (self.oracle, f"{self.attribute} misstated", f"at {self.op}", *by, f"in a {self.trace or 'labelled'} trace")


@dataclass(frozen=True, eq=False)
class JobFailed(Fault):
    """The process running a compile path died (``crash``) or the path ran past its time limit
    (``timeout``): the oracle and the kind of job failure, nothing of the last words (every crash of
    one path reads otherwise, and a hang says nothing of where)."""

    KIND: ClassVar[str] = "job failed"
    stops_the_run: ClassVar[bool] = True

    oracle: str
    failure: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.failure)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, self.failure)


@dataclass(frozen=True, eq=False)
class NotFixedPoint(Fault):
    """DCE again removes something from a trace DCE produced (``idempotent``): one fault of the
    DCE's, whatever symbols it shows in (they depend on the program)."""

    KIND: ClassVar[str] = "dce not a fixed point"

    oracle: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, "DCE is not a fixed point")


@dataclass(frozen=True, eq=False)
class AcceptedRejected(Fault):
    """A call eager and the reference Thunder both reject returned a result (``rejects``): the
    exception the reference raised and its words."""

    KIND: ClassVar[str] = "accepts what the reference rejects"

    oracle: str
    exception: str
    message_words: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.exception, self.message_words)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, f"accepts what the reference rejects: {self.exception}", self.message_words)


@dataclass(frozen=True, eq=False)
class SplitChanged(Fault):
    """A thunderfx split that no exception caused appears or disappears against stock
    (``split-set``): which, the reason type, the op of the FX node split off, and the words of
    its info and exception. Not the node's name: Dynamo names a node by the program ("getitem" in
    one, "getitem_1" in another), and one op's split in two programs is one fault."""

    KIND: ClassVar[str] = "split set"

    oracle: str
    change: str  # "appears" or "disappears"
    reason: str
    info_words: str  # what the info says of the node (``without_node``), in words
    exception_words: str
    target: str = ""  # the op of the FX node split off (``target_op``)

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.change, self.reason, self.target, self.info_words, self.exception_words)

    @property
    def stops_the_run(self) -> bool:  # type: ignore[override]
        """A split that appears sends ops to eager, as a raise's split does."""
        return self.change == "appears"

    def parts(self) -> tuple[str, ...]:
        at = (f"at {self.target}",) if self.target else ()
        return (self.oracle, f"split {self.change}", self.reason, *at, self.info_words, self.exception_words)


@dataclass(frozen=True, eq=False)
class Stated(Fault):
    """The violation of an oracle registered outside fuzzdce that makes no fault of its own: its
    oracle, error type, the key it states without names and numbers, and frame."""

    KIND: ClassVar[str] = "stated"

    oracle: str
    error_type: str
    key_words: str
    frame: str

    def identity(self) -> Identity:
        return (self.KIND, self.oracle, self.error_type, self.key_words, self.frame)

    def parts(self) -> tuple[str, ...]:
        return (self.oracle, self.error_type, self.key_words, self.frame)


FAULT_KINDS: dict[str, type[Fault]] = {
    kind.KIND: kind
    for kind in (
        Raised, Split, WrongValue, Flag, Malformed, GuardProperty, UnsoundDce, Misstatement, JobFailed, NotFixedPoint,
        AcceptedRejected, SplitChanged, Stated,
    )
}  # fmt: skip


# --- the constructors: how an oracle makes each kind ------------------------------------------------


def exception_fault(error: ErrorInfo) -> tuple[Raised, str]:
    """(fault, site) of a raised exception. An exception torch raised in its own code on a
    generated trace's statement alone (``ErrorInfo.frame`` stays torch's, the same for every op:
    Dynamo's "name 't13' is not defined") is told apart by that statement's symbol; one its autograd
    engine or dispatcher raised (``Origin.TORCH_FOR_THUNDER``) by its words and the symbol it names or
    Thunder was working on, in place of the frame."""
    origin = origin_of(error.frame)
    named = symbol_named(without_annotations(error.message))
    if not named and origin in (Origin.TORCH, Origin.TORCH_FOR_THUNDER):
        named = error.symbol
    kind = raised_kind(error.type, f"{error.type}: {error.message}")
    return Raised(kind, error.frame, named, message_words=words(error.message), origin=origin), named or error.symbol


def split_fault(reason_type: str, info: str, exception: str) -> tuple[Split, str]:
    """(fault, site) of a thunderfx split: the reason type and the symbol its exception names,
    or its words and the FX node's op when it names none (``Split``); the site falls back on that op."""
    named = symbol_named(without_annotations(exception))
    op = target_op(info)
    return Split(reason_type, named, message_words=words(exception), target=op), named or op


def value_fault(oracle: str, call: str, path: str, op: str | None = None) -> WrongValue:
    """A wrong value of ``call`` on ``path``, first differing at ``op`` (None: not yet localised,
    ``WrongValue.localised_at``)."""
    return WrongValue(oracle, call or CallLabel.PLAIN, path, op)


def flag_fault(oracle: str, call: str, path: str, direction: str, marked_by: str | None) -> Flag:
    """A ``requires_grad`` flag of ``call`` on ``path`` that differs from eager's in ``direction``,
    marked by Thunder's Function ``marked_by`` (None: localised by the op, later)."""
    return Flag(oracle, call or CallLabel.PLAIN, path, direction=direction, marked_by=marked_by)


def malformation_fault(oracle: str, problem: str, trace: str) -> Malformed:
    """A malformed trace: the problem's words (no names) and the kind of trace it is in."""
    return Malformed(oracle, words(problem), trace)


def guard_fault(oracle: str, property_varied: str, cache: str = "") -> GuardProperty:
    """A guard's property that, varied, makes Thunder differ from eager, on a call that hit the
    cache or missed it (``cache``: "" where unknown)."""
    return GuardProperty(oracle, property_varied, cache)


def dce_fault(oracle: str, wrong: str) -> UnsoundDce:
    """A DCE that removed what was live, known by what it did wrong (``UnsoundDce``)."""
    return UnsoundDce(oracle, wrong)


def metadata_fault(oracle: str, trace: str, op: str, attribute: str, stated_by: str = "") -> Misstatement:
    """A tensor's ``attribute`` that ``op`` defines, in a ``trace`` (forward, backward), stated
    otherwise than it runs (``Misstatement``)."""
    return Misstatement(oracle, trace, op, attribute, stated_by)


def job_fault(oracle: str, failure: str) -> JobFailed:
    """A path whose job failed (``model.FailureKind``: a crash, a timeout)."""
    return JobFailed(oracle, str(failure))


def fixed_point_fault(oracle: str) -> NotFixedPoint:
    """DCE that is no fixed point."""
    return NotFixedPoint(oracle)


def rejection_fault(oracle: str, exception: str, message: str) -> AcceptedRejected:
    """A result where the reference raised ``exception`` with ``message`` (its words are kept)."""
    return AcceptedRejected(oracle, exception, words(message))


def split_change_fault(oracle: str, change: str, reason: str, info: str, exception: str) -> SplitChanged:
    """A split (not an exception's) that appears or disappears: its reason type, the op of the FX
    node split off, and its info (without the node's name) and exception in words."""
    return SplitChanged(oracle, change, reason, words(without_node(info)), words(exception), target=target_op(info))


def stated_fault(violation: Violation) -> Stated:
    """The fault of a violation whose oracle makes none (one registered outside fuzzdce): its
    oracle, type, key in words and frame."""
    return Stated(violation.oracle, violation.error_type, words(violation.key or violation.message), violation.frame)


def fault_of(violation: Violation) -> Fault:
    """``violation``'s fault: the one its oracle made, else the one it states (``stated_fault``)."""
    return violation.fault if violation.fault is not None else stated_fault(violation)


def failure_identity(path: str, oracle: str, fault: Fault, localised: bool = True) -> Identity:
    """What a failure is known by: its path, oracle and fault's identity (not ``localised``: a
    wrong value's wherever it first differs, ``WrongValue.identity``)."""
    own = fault.identity(localised) if isinstance(fault, WrongValue) else fault.identity()
    return (path, oracle, own)


def identity(violation: Violation, localised: bool = True) -> Identity:
    """``failure_identity`` of a violation."""
    return failure_identity(violation.path, violation.oracle, fault_of(violation), localised)


def signature(violation: Violation) -> str:
    """A violation's signature: its path, oracle and fault, in words (``identity`` is what it is
    known by; this is its text, for people and known-findings entries)."""
    return " | ".join((violation.path, violation.oracle, str(fault_of(violation))))

"""A failure's identity (its *fault*): where Thunder fails, never how the message words it.

Two failures are one fault when Thunder fails in the same place: the text of a message is too fine
(a trace annotation, ``# t5: "cpu f32[2, 1]"``, makes every rank another failure) and, for values,
too coarse (every wrong value of a path reads "values differ"). So an identity is built from:

- a raised exception: its kind (``findings.raised_kind``), the innermost Thunder frame that is not a
  generic helper (``model.ErrorInfo.frame``) and the symbol the message names, if any (a bound
  symbol's call ``prims.index_add(...)``, a ``PrimIDs.INDEX_ADD``, an FX target, ``aten::aminmax``);
  one raised by torch's autograd engine or dispatcher on Thunder's behalf (``on_thunders_behalf``:
  a gradient Thunder's backward returned, an aten op thunderfx left to autograd) is known by its
  words and that symbol instead, never by the engine's frame, which every such error shares;
- a thunderfx split: its reason type and the symbol its exception names, or, when it names none, the
  exception's words without names, numbers or annotations (the split keeps only the text);
- a wrong value (``outputs``, ``grads``, ``mutations``): the oracle, the call and the op of the
  first statement whose value is wrong, found by evaluating prefixes of the program
  (``running.localise``); until then, "not localised";
- any other violation: its oracle and the key it states (a crash, a timeout, a guard's property).

Besides its identity a failure may have a *site*: the op it is about, named by the failure or by its
context (the FX node a split hit, the outermost Thunder symbol on an exception's stack). One fault
in different words on different paths (jit-grad's "no gradient transform for prims.index_add", the
split's "VJP for PrimIDs.INDEX_ADD") has one site; ``findings`` joins such causes, and never two
identities of two sites.

Below ``findings`` (which joins by them) and above ``model`` and ``signatures`` only.
"""

from __future__ import annotations

import re

from fuzzdce.core.model import TORCH_FRAME, CallLabel, ErrorInfo, Violation
from fuzzdce.core.signatures import normalise

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
# An FX node's target in a split reason's info: the op the split hit.
_TARGET = re.compile(r"target:\s*(.*?)(?:,\s*see exception|$)")

# The oracles that judge values (against eager, its float64 run, or the reference bit for bit):
# a call's wrong value is localised where it first differs.
VALUE_ORACLES = frozenset({"outputs", "grads", "mutations", "exact"})
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


# A tuple or list of numbers once ``normalise`` made each "<num>": a shape, a dims list. Its length
# is a rank, which the same fault has another of in every program ("shape of proxy t5 recomputes to
# (1, 1, 1, 1) incorrectly" and "... to (2,) incorrectly": add broadcasting was two bugs).
_NUMBERS = re.compile(r"[(\[]<num>(?:, <num>)*,?[)\]]")


def words(message: str) -> str:
    """A message's words without names, numbers, shapes, addresses or annotations: how it reads,
    for a failure with no frame to say where it came from."""
    return _NUMBERS.sub("<numbers>", nameless(without_annotations(message)))


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


def on_thunders_behalf(frame: str) -> bool:
    """Was the exception raised at ``frame`` by torch's autograd engine or dispatcher, running what
    Thunder gave it (its frame says nothing of which error it is)?"""
    return bool(_ENGINE_AND_DISPATCHER.match(frame or ""))


def exception_fault(error: ErrorInfo) -> tuple[str, str]:
    """(identity, site) of a raised exception. An exception torch raised in its own code on a
    generated trace's statement alone (``ErrorInfo.frame`` stays torch's, the same for every op:
    Dynamo's "name 't13' is not defined") is told apart by that statement's symbol; one its autograd
    engine or dispatcher raised (``on_thunders_behalf``) by its words and the symbol it names or
    Thunder was working on, in place of the frame."""
    named = symbol_named(without_annotations(error.message))
    if not named and error.frame.startswith(TORCH_FRAME):
        named = error.symbol
    kind = raised_kind(error.type, f"{error.type}: {error.message}")
    where = f"raised by torch for Thunder: {words(error.message)}" if on_thunders_behalf(error.frame) else error.frame
    return f"exception | {kind} | {where} | {named}", named or error.symbol


def split_fault(reason_type: str, info: str, exception: str) -> tuple[str, str]:
    """(identity, site) of a thunderfx split: the reason type and the symbol its exception names,
    or its words when it names none; the site falls back on the FX node's target."""
    named = symbol_named(without_annotations(exception))
    identity = f"split | {reason_type} | {named or words(exception)}"
    target = _TARGET.search(info)
    return identity, named or (symbol_named(target.group(1)) if target else "")


def value_fault(oracle: str, call: str, op: str | None) -> str:
    """The identity of a wrong value: the oracle, the call, and the op where values first go wrong
    (None: not localised)."""
    return f"{oracle} | {call or CallLabel.PLAIN} | first differs at {op or NOT_LOCALISED}"


def is_value(violation: Violation) -> bool:
    """A wrong value of a call (its identity is where it first differs)? A value oracle's
    exception (a guard call raising) is an exception."""
    return violation.oracle in VALUE_ORACLES and not violation.fault.startswith("exception |")


def fault_of(violation: Violation) -> str:
    """``violation``'s identity: the one it states, or its oracle, type, key without names and
    numbers, and frame (what an oracle with no better knowledge can say)."""
    if is_value(violation) and (not violation.fault or NOT_LOCALISED in violation.fault):
        # Not localised, a wrong value says only which output differs: one per path, as two
        # faults on two paths would read alike.
        return f"{violation.fault or value_fault(violation.oracle, violation.call, None)} | on {violation.path}"
    if violation.fault:
        return violation.fault
    return " | ".join((violation.oracle, violation.error_type, words(violation.key or violation.message), violation.frame))


def without_localisation(signature_text: str) -> str:
    """A signature with where a wrong value first differs left out: what a replay of a program it
    cannot localise (a reproducer's script, not a fuzzdce program) compares."""
    text = re.sub(r" \| on [^|]*$", "", signature_text)
    return re.sub(r"first differs at [^|]*?(?= \| |$)", "first differs at <op>", text)


def signature(violation: Violation) -> str:
    """A violation's signature: its path, oracle and identity (``fault_of``). What ``triage``
    compares between Thunders; a finding is one signature under one verdict and placements."""
    return " | ".join((violation.path, violation.oracle, fault_of(violation)))

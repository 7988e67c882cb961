"""A fault is a value: each kind made by its one constructor, known by its identity (a tuple of its
fields, which ids hash), printed from its fields, written as data and read back, never parsed from
its text."""

import json

import pytest

from fuzzdce.core.faults import (
    Fault,
    Flag,
    Raised,
    Split,
    UnsoundDce,
    WrongValue,
    dce_fault,
    exception_fault,
    fault_of,
    fixed_point_fault,
    flag_fault,
    guard_fault,
    identity,
    job_fault,
    malformation_fault,
    metadata_fault,
    rejection_fault,
    split_change_fault,
    split_fault,
    value_fault,
)
from fuzzdce.core.joining import cause_key, clash, kept_apart
from fuzzdce.core.model import ErrorInfo, Violation
from fuzzdce.core.signatures import as_identity, identity_id
from fuzzdce.core.vocabulary import Verdict

INDEX_ADD = ErrorInfo(
    "RuntimeError",
    'Failed to find a gradient transform for bound symbol bsym=t3 = prims.index_add(a, t0, b, 0)  # t3: "cpu f32[2]"',
    "thunder/transforms/autodiff.py:process_bsym",
    "traceback",
    "index_add",
)
UNBOUND = ErrorInfo("KeyError", "'t1'", "thunder/core/symbol.py:__call__", "traceback", "add")
ENGINE = ErrorInfo(
    "RuntimeError",
    "function ThunderFunctionBackward returned an invalid gradient at index 0 - got [3] but expected shape compatible with [2]",
    "torch/autograd/graph.py:_engine_run_backward",
    "traceback",
    "",
)
LOGSUMEXP_NODE = "Failed while running meta for node with name: v3 and target: <built-in method logsumexp of type object at 0x7f>, see exception field"
FUNCTION = "thunder.executors.torch_autograd.ThunderFunction"
DIRECTION = "requires_grad True where eager's is False"

# Each kind, made by its constructor, and its text (display only: made from its fields, never read back).
KINDS = [
    (
        exception_fault(INDEX_ADD)[0],
        "exception | RuntimeError | thunder/transforms/autodiff.py:process_bsym | index_add",
    ),
    (
        exception_fault(UNBOUND)[0],
        "exception | an unbound name (NameError, UnboundLocalError, KeyError of a name) | thunder/core/symbol.py:__call__ | ",
    ),
    (
        exception_fault(ENGINE)[0],
        "exception | RuntimeError | raised by torch for Thunder: function ThunderFunctionBackward returned an invalid "
        "gradient at index <num> - got <numbers> but expected shape compatible with <numbers> | ",
    ),
    (
        split_fault("EXCEPTION_META_THUNDER_OP", LOGSUMEXP_NODE, "tuple index out of range")[0],
        "split | EXCEPTION_META_THUNDER_OP | tuple index out of range",
    ),
    (
        split_fault("EXCEPTION_PROXY_THUNDER_OP", "target: <built-in method lerp>", "VJP for PrimIDs.LERP is not implemented")[0],
        "split | EXCEPTION_PROXY_THUNDER_OP | lerp",
    ),
    (value_fault("outputs", "plain", "jit"), "outputs | plain | first differs at not localised | on jit"),
    (value_fault("grads", "grad", "jit-grad", "clamp"), "grads | grad | first differs at clamp"),
    (value_fault("grads", "grad", "jit-grad").localised_at("clamp"), "grads | grad | first differs at clamp"),
    (flag_fault("grads", "grad", "jit-grad", DIRECTION, FUNCTION), f"grads | grad | marked by {FUNCTION} | {DIRECTION}"),
    (
        flag_fault("grads", "grad", "jit-grad", DIRECTION, None),
        f"grads | grad | first differs at not localised | {DIRECTION} | on jit-grad",
    ),
    (
        flag_fault("grads", "grad", "jit-grad", DIRECTION, None).localised_at("hstack"),
        f"grads | grad | first differs at hstack | {DIRECTION}",
    ),
    (
        malformation_fault("names", "unknown proxy t13 is used", "backward"),
        "names | MalformedTrace | unknown proxy <name> is used | in a backward trace",
    ),
    (guard_fault("guards", "shape"), "guards | shape"),
    (
        dce_fault("dce-sound", "dropped a subsymbol that produces its symbol's output"),
        "dce-sound | UnsoundDce | dropped a subsymbol that produces its symbol's output",
    ),
    (
        metadata_fault("metadata", "forward", "cos", "dtype"),
        "metadata | dtype misstated | at cos | in a forward trace",
    ),
    (job_fault("crash", "crash"), "crash | crash"),
    (job_fault("timeout", "timeout"), "timeout | timeout"),
    (fixed_point_fault("idempotent"), "idempotent | DCE is not a fixed point"),
    (
        rejection_fault("rejects", "RuntimeError", "a leaf Variable that requires grad t0 is used in an in-place operation"),
        "rejects | accepts what the reference rejects: RuntimeError | a leaf Variable that requires grad <name> is used "
        "in an in-place operation",
    ),
    (
        split_change_fault("split-set", "appears", "MISSING_OP_SUPPORT", "node v3 has no lowering", ""),
        "split-set | split appears | MISSING_OP_SUPPORT | node <name> has no lowering | ",
    ),
    (fault_of(Violation("mine", "jit", "m", "MyError", key="a key of 3 words")), "mine | MyError | a key of <num> words | "),
]


@pytest.mark.parametrize("fault, text", KINDS, ids=[f"{type(f).__name__}-{i}" for i, (f, _) in enumerate(KINDS)])
def test_every_kind_of_fault_prints_as_before_and_round_trips_as_data(fault, text):
    assert isinstance(fault, Fault)
    assert str(fault) == text
    again = Fault.from_json(fault.to_json())
    assert again == fault and str(again) == text and type(again) is type(fault)
    assert hash(again) == hash(fault) and again.identity() == fault.identity()


def test_every_kind_has_a_constructor_and_is_in_the_table():
    made = {type(fault) for fault, _ in KINDS}
    from fuzzdce.core.faults import FAULT_KINDS

    assert made == set(FAULT_KINDS.values()), set(FAULT_KINDS.values()) - made


def test_ids_hash_the_identity_tuple_not_the_text():
    """A cause's id is ``identity_id`` of its tuple of fields, which JSON keeps (as lists) and the
    id reads alike; the display text takes no part. Pinned: these ids move only when a fault's
    identity does."""
    unbound = exception_fault(UNBOUND)[0]
    cause = cause_key(Verdict.REGRESSION, ("symcall",), unbound)
    assert cause == ("regression", ("symcall",), "fault", ("exception", unbound.exception, "Thunder", UNBOUND.frame, ""))
    assert identity_id(cause) == identity_id(as_identity(json.loads(json.dumps(cause)))) == "6be8bf34be"
    clamp = value_fault("grads", "grad", "jit", "clamp")
    assert identity_id(cause_key(Verdict.SHARED, ("stock",), clamp)) == "ca3be0495e"
    # A fault whose text reads alike but whose fields differ is another fault (and id).
    renamed = Raised(unbound.exception, unbound.frame, "", message_words="other words")
    assert str(renamed) == str(unbound) and renamed == unbound  # the words are no part of a Thunder raise's identity
    by_engine = exception_fault(ENGINE)[0]
    assert by_engine.identity() != Raised(**{**by_engine.__dict__, "message_words": "other words"}).identity()


def test_a_localised_value_is_one_fault_on_every_path_and_an_unlocalised_one_is_not():
    on_jit, on_fx = value_fault("outputs", "plain", "jit"), value_fault("outputs", "plain", "thunderfx")
    assert on_jit != on_fx and on_jit.localisable
    assert on_jit.localised_at("exp") == on_fx.localised_at("exp")
    assert not on_jit.localised_at("exp").localisable
    marked = flag_fault("grads", "grad", "jit", DIRECTION, FUNCTION)
    assert not marked.localisable, "a flag its Function marked has nothing to localise"


def test_a_replay_compares_wrong_values_wherever_they_first_differ():
    at_exp = Violation("outputs", "jit", "m", "Mismatch", fault=value_fault("outputs", "plain", "jit", "exp"), call="plain")
    unlocalised = Violation("outputs", "jit", "m", "Mismatch", fault=value_fault("outputs", "plain", "jit"), call="plain")
    assert identity(at_exp) != identity(unlocalised)
    assert identity(at_exp, localised=False) == identity(unlocalised, localised=False)
    lost = flag_fault("grads", "grad", "jit", "requires_grad False where eager's is True", None)
    invented = flag_fault("grads", "grad", "jit", DIRECTION, None)
    assert lost.identity(localised=False) != invented.identity(localised=False), "a flag lost and a flag invented stay two"


def test_what_joining_asks_each_kind():
    raised, site = exception_fault(INDEX_ADD)
    assert isinstance(raised, Raised) and raised.names(site) and not raised.in_torch
    assert exception_fault(ENGINE)[0].by_torch_for_thunder
    split, _ = split_fault("EXCEPTION_META_THUNDER_OP", LOGSUMEXP_NODE, "tuple index out of range")
    assert isinstance(split, Split) and not split.names("logsumexp")
    assert isinstance(value_fault("outputs", "plain", "jit"), WrongValue) and isinstance(
        flag_fault("grads", "g", "jit", "d", None), Flag
    )
    assert value_fault("outputs", "plain", "jit").is_value and not dce_fault("dce-sound", "x").is_value
    assert isinstance(dce_fault("dce-sound", "x"), UnsoundDce)


def test_a_number_proxy_in_a_message_reads_as_its_number():
    """jit says "start=-2"; thunderfx's splitter and jit-symbolic, tracing numbers as proxies, print
    the proxy: one fault in the same words, which kept a raise and the split it causes apart."""
    jit = ErrorInfo("RuntimeError", "start=-2 is not a valid index for length 1", "thunder/clang/__init__.py:_basic_indexing", "")
    symbolic = ErrorInfo(
        "RuntimeError",
        "start=-2 is not a valid index for length [IntegerProxy name=i2, value=1, static=CONSTRAINT.CONSTRAINABLE]",
        "thunder/clang/__init__.py:_basic_indexing",
        "",
    )
    node = "Failed while running meta for node with name: getitem and target: <built-in function getitem>"
    split = "start=[IntegerProxy name=i0, value=-2, static=CONSTRAINT.STATIC] is not a valid index for length 1"
    (raised, site), (symbolic_raised, _) = exception_fault(jit), exception_fault(symbolic)
    split_found, split_site = split_fault("EXCEPTION_META_THUNDER_OP", node, split)
    assert raised.message_words == symbolic_raised.message_words == split_found.message_words
    assert raised == symbolic_raised
    assert not clash(kept_apart([(raised, site)]), kept_apart([(split_found, split_site)]))
    # Only Thunder's repr of a number proxy: other brackets, and the words around it, stay.
    other = "start=[IntegerProxy name=i0, value=-2, static=CONSTRAINT.STATIC] is past the end"
    assert split_fault("EXCEPTION_META_THUNDER_OP", node, other)[0].message_words != split_found.message_words

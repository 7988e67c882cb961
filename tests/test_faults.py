"""A fault is a value: each kind made by its one constructor, known by its identity (a tuple of its
fields, which ids hash), printed from its fields, written as data and read back, never parsed from
its text."""

import json

import pytest
import torch
from builders import wrong_values

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
from fuzzdce.core.model import EAGER, Call, CallLabel, ErrorInfo, Outcome, Violation
from fuzzdce.core.signatures import as_identity, identity_id
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles import guards

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


def meta_failed(node: str, target: str) -> str:
    """A split reason's info as thunderfx's splitter words it, for the FX node ``node`` calling ``target``."""
    return f"Failed while running meta for node with name: {node} and target: {target}, see exception field"


def missing_op_support(node: str, op: str, address: str = "0x7fb035be7a60") -> str:
    """A non-exception split reason's info for the FX node ``node`` calling torch's ``op``."""
    return f"node with name: {node} and target: <built-in method {op} of type object at {address}> only has an automatic torch fallback in thunder."


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
        "split | EXCEPTION_META_THUNDER_OP | tuple index out of range | at logsumexp",
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
    (guard_fault("guards", "rank", "hit"), "guards | rank | it hit the cache"),
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
    (
        split_change_fault("split-set", "appears", "MISSING_OP_SUPPORT", missing_op_support("getitem_1", "ones"), ""),
        "split-set | split appears | MISSING_OP_SUPPORT | at ones | node only has an automatic torch fallback in thunder. | ",
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
    at_exp, unlocalised = wrong_values("jit", "exp"), wrong_values("jit")
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


def test_a_split_known_by_its_words_is_known_by_its_op_and_not_by_its_program():
    """No symbol in "tuple index out of range" or in a ``KeyError`` of a proxy's name: the words
    alone made one fault of every op's split in them (two ops' splits one bug, and a shrink free to
    slip from one to the other). The op of the node split off tells them apart; the node's name
    (Dynamo's, by the program), the function's address and the proxy's name do not."""

    def at(node, target, exception="tuple index out of range"):
        return split_fault("EXCEPTION_META_THUNDER_OP", meta_failed(node, target), exception)[0]

    logsumexp = at("v3", "<built-in method logsumexp of type object at 0x7f48501e7a60>")
    assert logsumexp.target == "logsumexp"
    # One op, for one reason, in two programs: one fault.
    assert logsumexp == at("logsumexp_1", "<built-in method logsumexp of type object at 0x7fab773e7a60>")
    assert at("v1", "<built-in method exp of type object at 0x7f>", "'t0'") == at("exp", "aten.exp.default", "'f1'")
    assert at("v1", "zero_", "'t0'") == at("zero__2", "zero_", "'t3'") and at("v1", "zero_", "'t0'").target == "zero_"
    # Two ops, or one op for two reasons: two faults.
    assert logsumexp != at("v3", "<built-in method index_select of type object at 0x7f48501e7a60>")
    assert at("v1", "<built-in method exp of type object at 0x7f>", "'t0'") != at("v1", "<built-in function getitem>", "'t0'")
    proxy = split_fault(
        "EXCEPTION_PROXY_THUNDER_OP", meta_failed("v3", "<built-in method logsumexp>"), "tuple index out of range"
    )[0]
    assert proxy != logsumexp
    # A symbol the exception names is where Thunder fails, whichever op's node reached it.
    lerp, addcmul = (
        split_fault(
            "EXCEPTION_META_THUNDER_OP",
            meta_failed("v2", f"<built-in method {op} of type object>"),
            "VJP for PrimIDs.LERP is not implemented",
        )[0]
        for op in ("lerp", "addcmul")
    )
    assert lerp == addcmul and lerp.identity() == addcmul.identity()


def test_a_split_that_appears_is_known_by_its_op_and_not_by_its_nodes_name():
    """``split-set`` keeps a split no exception caused: Dynamo names one op's node "getitem" in one
    program and "getitem_1" in another (a counted name), which the info's words kept apart."""

    def appears(node, op, address="0x7fb035be7a60"):
        return split_change_fault("split-set", "appears", "MISSING_OP_SUPPORT", missing_op_support(node, op, address), "None")

    assert appears("getitem", "ones") == appears("getitem_1", "ones", "0x7fc7815e7a60") == appears("v2", "ones")
    assert appears("v2", "ones").target == "ones"
    assert appears("v2", "ones") != appears("v2", "zeros")


def guard_call_wrong(cache: str, label: CallLabel = CallLabel.GUARD_SHAPE, size: int = 2) -> Fault:
    """The guards oracle's fault of a guard call ``label`` whose result differs from eager's, on a
    call that hit the cache or missed it (``cache``), on inputs of ``size`` elements."""
    plain = Call(CallLabel.PLAIN, outputs=[torch.ones(1)])
    reference = Outcome(
        EAGER, "stock", calls={CallLabel.PLAIN: plain}, guard_calls={label: Call(label, outputs=[torch.ones(size)])}
    )
    wrong = Call(label, outputs=[torch.zeros(size)], cache=cache)
    (violation,) = guards.check(Outcome("jit", "p", calls={CallLabel.PLAIN: plain}, guard_calls={label: wrong}), reference)
    return violation.fault


def test_a_guard_call_that_hit_the_cache_and_one_that_compiled_again_are_two_faults():
    """A wrong result that reused the cached computation is a guard letting it through; one that
    compiled anew is what Thunder compiled for the new inputs: two places, two faults. The same
    property and cache in another program is one."""
    assert guard_call_wrong("hit") != guard_call_wrong("miss")
    assert guard_call_wrong("hit") == guard_call_wrong("hit", size=3)
    assert guard_call_wrong("hit") != guard_call_wrong("hit", CallLabel.GUARD_RANK)
    assert str(guard_call_wrong("miss")) == "guards | shape | it compiled again"

"""A fault is a value: each kind made by its one constructor, printed as it always was (so bug ids
stay where the fault does), written as data and read back, never parsed from its text."""

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
    flag_fault,
    guard_fault,
    malformation_fault,
    metadata_fault,
    signature,
    split_fault,
    value_fault,
)
from fuzzdce.core.joining import cause_key, clash, kept_apart
from fuzzdce.core.model import ErrorInfo, Violation
from fuzzdce.core.signatures import short_id
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

# Each kind, made by its constructor, and its text as fuzzdce printed it before faults were values
# (measured on the string-built faults of 8bf0122): a bug's id is the hash of this text.
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
    (fault_of(Violation("crash", "jit", "crash: killed", "Crash", key="crash")), "crash | Crash | crash | "),
    (fault_of(Violation("timeout", "thunderfx", "timeout: 60 s", "Timeout", key="timeout")), "timeout | Timeout | timeout | "),
]


@pytest.mark.parametrize("fault, text", KINDS, ids=[f"{type(f).__name__}-{i}" for i, (f, _) in enumerate(KINDS)])
def test_every_kind_of_fault_prints_as_before_and_round_trips_as_data(fault, text):
    assert isinstance(fault, Fault)
    assert str(fault) == text
    again = Fault.from_json(fault.to_json())
    assert again == fault and str(again) == text and type(again) is type(fault)
    assert hash(again) == hash(fault)


def test_every_kind_has_a_constructor_and_is_in_the_table():
    made = {type(fault) for fault, _ in KINDS}
    from fuzzdce.core.faults import FAULT_KINDS

    assert made == set(FAULT_KINDS.values()), set(FAULT_KINDS.values()) - made


def test_bug_ids_stay_where_the_fault_is_the_same():
    """Ids measured on 8bf0122, where faults were strings: the same fault keeps its bug's id."""
    unbound = Violation(
        "raises",
        "jit",
        "KeyError: 't1'",
        "KeyError",
        UNBOUND.frame,
        key="KeyError: 't1'",
        fault=exception_fault(UNBOUND)[0],
        site="add",
    )
    assert short_id(cause_key(Verdict.REGRESSION, ("symcall",), unbound)) == "de9127cbd2"
    clamp = Violation(
        "outputs", "jit", "m", "Mismatch", fault=value_fault("grads", "grad", "jit", "clamp"), call="grad", site="clamp"
    )
    assert short_id(cause_key(Verdict.SHARED, ("stock",), clamp)) == "dba4a1a1c5"


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
    assert signature(at_exp) != signature(unlocalised)
    assert signature(at_exp, localised=False) == signature(unlocalised, localised=False)
    lost = flag_fault("grads", "grad", "jit", "requires_grad False where eager's is True", None)
    invented = flag_fault("grads", "grad", "jit", DIRECTION, None)
    assert lost.unlocalised_text() != invented.unlocalised_text(), "a flag lost and a flag invented stay two"


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

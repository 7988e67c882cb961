"""The tests' own builders (tests/builders.py): each violation is its oracle's, with the fault the
oracle gives it, and no test builds a violation of fuzzdce's oracles itself or writes its own
stand-in evaluator, store or campaign."""

import ast
from pathlib import Path

import pytest
from builders import THUNDER_FUNCTION, flag, malformed, misstated, raised, split, unsound, wrong_values

from fuzzdce.core.faults import Flag, Malformed, Misstatement, Raised, Split, Stated, UnsoundDce, WrongValue, fault_of
from fuzzdce.oracles import ORACLES

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize(
    "violation, kind",
    [
        (raised("jit"), Raised),
        (malformed("jit"), Malformed),
        (wrong_values("jit"), WrongValue),
        (wrong_values("jit-grad", "exp", oracle="grads", call="grad"), WrongValue),
        (split("thunderfx"), Split),
        (flag("jit-grad"), Flag),
        (flag("jit-grad", marked_by=THUNDER_FUNCTION), Flag),
        (misstated("jit-symbolic", "qr"), Misstatement),
        (unsound("jit"), UnsoundDce),
    ],
    ids=["raises", "names", "outputs", "grads", "splits", "flag", "flag-marked", "metadata", "dce-sound"],
)
def test_each_builder_makes_its_oracles_fault(violation, kind):
    assert isinstance(violation.fault, kind) and not isinstance(fault_of(violation), Stated)
    assert violation.oracle in ORACLES


def test_a_flag_a_function_marked_is_known_by_it_and_one_it_did_not_is_not_localised_yet():
    assert flag("jit-grad", marked_by=THUNDER_FUNCTION).fault.marked_by == THUNDER_FUNCTION
    assert flag("jit-grad").fault.localisable and flag("jit-grad").fault != flag("jit-grad", invented=False).fault


def test_a_localised_wrong_value_names_its_op_as_the_evaluator_does():
    at_exp = wrong_values("jit", "exp")
    assert at_exp.fault.op == at_exp.site == "exp" and wrong_values("jit").fault.op is None


def hand_built_violations(source: str) -> list[int]:
    """The lines of ``source`` that build a violation of one of fuzzdce's oracles itself, with a
    fault or without (``builders`` makes each by its oracle's code; an oracle registered outside
    fuzzdce makes its own, with no fault: ``faults.Stated`` stands in)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            oracle = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            outside = isinstance(oracle, str) and oracle not in ORACLES
            if name == "Violation" and not outside:
                found.append(node.lineno)
    return found


def own_stand_ins(source: str) -> list[str]:
    """What ``source`` writes again of tests/builders.py: an ``Evaluator`` subclass, a ``store_of``,
    or a campaign of its own (a namespace holding a ``ledger``, what ``Shrinker`` reads)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Evaluator" for b in node.bases):
            found.append(node.name)
        if isinstance(node, ast.FunctionDef) and node.name == "store_of":
            found.append(node.name)
        namespace = isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "SimpleNamespace"
        if namespace and any(k.arg == "ledger" for k in node.keywords):
            found.append(f"a campaign at line {node.lineno}")
    return found


def test_no_test_builds_a_violation_of_fuzzdces_oracles_itself():
    """Build one with ``builders`` (its oracle's code), so that each has the fault production gives it."""
    built = {
        (path.name, line)
        for path in TESTS.glob("*.py")
        if path.name != "builders.py"
        for line in hand_built_violations(path.read_text())
    }
    assert built == set()


def test_no_test_writes_its_own_stand_in_evaluator_store_or_campaign():
    written = {
        path.name: found
        for path in TESTS.glob("*.py")
        if path.name != "builders.py"
        if (found := own_stand_ins(path.read_text()))
    }
    assert written == {}


def test_a_planted_hand_built_violation_and_stand_in_are_found():
    planted = (
        "v = Violation('raises', 'jit', 'm', 'KeyError')\n"
        "w = Violation('outputs', 'jit', 'm', fault=f)\n"
        "x = Violation('mine', 'jit', 'm', 'MyError')\n"
        "class Mine(Evaluator):\n    pass\n"
        "def store_of(*found):\n    pass\n"
        "campaign = SimpleNamespace(ledger=SimpleNamespace(store=store))\n"
    )
    assert hand_built_violations(planted) == [1, 2]
    assert own_stand_ins(planted) == ["Mine", "store_of", "a campaign at line 8"]

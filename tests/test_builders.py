"""The tests' own builders (tests/builders.py): each violation is its oracle's, with the fault the
oracle gives it, and no test builds a violation without one or writes its own stand-in evaluator."""

import ast
from pathlib import Path

import pytest
from builders import malformed, raised, split, wrong_values

from fuzzdce.core.faults import Malformed, Raised, Split, Stated, WrongValue, fault_of
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
    ],
    ids=["raises", "names", "outputs", "grads", "splits"],
)
def test_each_builder_makes_its_oracles_fault(violation, kind):
    assert isinstance(violation.fault, kind) and not isinstance(fault_of(violation), Stated)


def test_a_localised_wrong_value_names_its_op_as_the_evaluator_does():
    at_exp = wrong_values("jit", "exp")
    assert at_exp.fault.op == at_exp.site == "exp" and wrong_values("jit").fault.op is None


def faultless_violations(source: str) -> list[int]:
    """The lines of ``source`` that build a violation of one of fuzzdce's oracles with no ``fault=``
    (an oracle registered outside fuzzdce makes none: ``faults.Stated`` stands in)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            oracle = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            outside = isinstance(oracle, str) and oracle not in ORACLES
            if name == "Violation" and not outside and not any(k.arg in ("fault", None) for k in node.keywords):
                found.append(node.lineno)
    return found


def own_stand_ins(source: str) -> list[str]:
    """What ``source`` writes again of tests/builders.py: an ``Evaluator`` subclass or a ``store_of``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and any(getattr(b, "id", getattr(b, "attr", "")) == "Evaluator" for b in node.bases):
            found.append(node.name)
        if isinstance(node, ast.FunctionDef) and node.name == "store_of":
            found.append(node.name)
    return found


def test_no_test_builds_a_violation_without_a_fault():
    """Build one with ``builders`` (its oracle's code), or hand it the fault its oracle would."""
    faultless = {
        (path.name, line)
        for path in TESTS.glob("*.py")
        if path.name != "builders.py"
        for line in faultless_violations(path.read_text())
    }
    assert faultless == set()


def test_no_test_writes_its_own_stand_in_evaluator_or_store():
    written = {
        path.name: found
        for path in TESTS.glob("*.py")
        if path.name != "builders.py"
        if (found := own_stand_ins(path.read_text()))
    }
    assert written == {}


def test_a_planted_faultless_violation_and_stand_in_are_found():
    planted = (
        "v = Violation('raises', 'jit', 'm', 'KeyError')\n"
        "w = Violation('outputs', 'jit', 'm', fault=f)\n"
        "x = Violation('mine', 'jit', 'm', 'MyError')\n"
        "class Mine(Evaluator):\n    pass\n"
        "def store_of(*found):\n    pass\n"
    )
    assert faultless_violations(planted) == [1]
    assert own_stand_ins(planted) == ["Mine", "store_of"]

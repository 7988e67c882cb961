"""The shape of the code: extension points declared below everything else, no import cycles."""

import ast
import pathlib

import pytest

from fuzzdce.core.model import CompilePath, Oracle, Placement
from fuzzdce.core.program import Domain
from fuzzdce.core.vocabulary import AddResult, CallLabel, FailureKind, Verdict
from fuzzdce.fuzzing.shrinking import Phase
from fuzzdce.oracles import ORACLES
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS
from fuzzdce.running.workers import ReplyStatus

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fuzzdce"


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def fuzzdce_imports(path: pathlib.Path) -> list[tuple[str, bool]]:
    """(imported fuzzdce module, imported at module level?) for each import in ``path``."""
    tree = ast.parse(path.read_text())
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fuzzdce"):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("fuzzdce")]
        for name in names:
            found.append((name, id(node) in top_level))
    return found


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        graph[name] = {imported for imported, _ in fuzzdce_imports(path) if imported in MODULES and imported != name}
    return graph


def test_the_import_graph_has_no_cycles():
    graph = import_graph()
    visiting, done, cycles = set(), set(), []

    def visit(node, stack):
        visiting.add(node)
        for nxt in sorted(graph[node]):
            if nxt in visiting:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in done:
                visit(nxt, stack + [nxt])
        visiting.discard(node)
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node, [node])
    assert cycles == []


def test_no_fuzzdce_module_is_imported_inside_a_function():
    inside = [(name, imported) for name, path in MODULES.items() for imported, top in fuzzdce_imports(path) if not top]
    assert inside == []


@pytest.mark.parametrize("module", ["fuzzdce.core.vocabulary", "fuzzdce.core.model", "fuzzdce.core.errors"])
def test_the_foundations_import_nothing_else_of_fuzzdce(module):
    """The vocabulary imports nothing of fuzzdce; the records and errors only the vocabulary."""
    assert import_graph()[module] <= ({"fuzzdce.core.vocabulary"} if module != "fuzzdce.core.vocabulary" else set())


def test_each_oracle_path_and_placement_is_one_declared_object_under_its_own_name():
    assert all(isinstance(o, Oracle) and o.name == name for name, o in ORACLES.items())
    assert all(isinstance(p, CompilePath) and p.name == name for name, p in PATHS.items())
    assert all(isinstance(p, Placement) and p.name == name for name, p in PLACEMENTS.items())


def test_each_oracle_module_is_named_after_its_oracle():
    """``fuzzdce/oracles/NAME.py`` declares the oracle NAME (``-`` written ``_``): known-findings
    files hold oracle names, so a module is renamed to fit, never the oracle."""
    modules = {name.rsplit(".", 1)[1]: name for name in MODULES if name.startswith("fuzzdce.oracles.")}
    declared = {module: __import__(name, fromlist=["ORACLE"]).ORACLE.name for module, name in modules.items()}
    assert {module: oracle for module, oracle in declared.items() if oracle.replace("-", "_") != module} == {}
    assert sorted(declared.values()) == sorted(ORACLES)


# The vocabulary's types, each with the module declaring it: elsewhere a member is written by name.
VOCABULARY = {Verdict: "fuzzdce.core.vocabulary", FailureKind: "fuzzdce.core.vocabulary", CallLabel: "fuzzdce.core.vocabulary"}
# (Not CallStage, BugGroup and driver.GenerationEnd: "inputs", "known", "programs" and "recycled"
# are also the names of record fields.)
VOCABULARY |= {AddResult: "fuzzdce.core.vocabulary", Domain: "fuzzdce.core.program"}
VOCABULARY |= {Phase: "fuzzdce.fuzzing.shrinking", ReplyStatus: "fuzzdce.running.workers"}
# A string equal to a member that does not stand for it: (module, string) -> what it is instead.
NOT_VOCABULARY = {
    ("fuzzdce.oracles.grads", "grad"): "the noun in the grads oracle's messages",
    ("fuzzdce.cli", "timeout"): "the campaign setting (Workers.timeout) that --timeout gives",
}


def string_literals(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, value) of every string constant in ``path`` but docstrings."""
    tree = ast.parse(path.read_text())
    bodies = (n.body for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))
    docstrings = {id(body[0].value) for body in bodies if body and isinstance(body[0], ast.Expr)}
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_vocabulary_is_written_through_its_types():
    """No string literal stands for a verdict, failure kind, call label, add result, domain, phase
    or worker reply status outside the type declaring it (StrEnum members equal their strings, so records read alike)."""
    declared_in = {member.value: (member, module) for kind, module in VOCABULARY.items() for member in kind}
    found = [
        f"{name}:{line}: {value!r} is {declared_in[value][0]!r}"
        for name, path in sorted(MODULES.items())
        for line, value in string_literals(path)
        if value in declared_in and declared_in[value][1] != name and (name, value) not in NOT_VOCABULARY
    ]
    assert found == []


# The wings, lowest first: a module may import its own wing and the wings below it, never above.
# The top-level modules (the CLI, the pytest plugin, the testing helpers, the reproducers' entry
# point) are the application, above everything.
WINGS = ("core", "strategies", "oracles", "running", "results", "fuzzing")
APPLICATION = len(WINGS)


def wing_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in WINGS):
        return WINGS.index(parts[1])
    return APPLICATION


def test_every_module_but_the_application_lives_in_a_wing():
    top_level = sorted(m for m in MODULES if wing_of(m) == APPLICATION)
    assert top_level == [
        "fuzzdce",
        "fuzzdce.__main__",
        "fuzzdce.cli",
        "fuzzdce.pytest_plugin",
        "fuzzdce.testing",
    ]


def test_no_import_points_from_a_lower_wing_to_a_higher_one():
    upward = [
        (module, imported)
        for module, imports in import_graph().items()
        for imported in imports
        if wing_of(imported) > wing_of(module) and imported != "fuzzdce"
    ]
    assert upward == [], "move the code the lower wing needs down, or pass it in"

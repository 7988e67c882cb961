"""The shape of the code: extension points declared below everything else, no import cycles, and
the docs that list every module (each wing's docstring, docs/extending.md's layout table)."""

import ast
import functools
import io
import pathlib

import pytest

from fuzzdce.core.model import CompilePath, Oracle, Placement, ScriptCheck
from fuzzdce.core.program import Domain
from fuzzdce.core.vocabulary import AddResult, CallLabel, FailureKind, Verdict
from fuzzdce.fuzzing.time_plan import Phase
from fuzzdce.oracles import ORACLES
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS
from fuzzdce.running.workers import ReplyStatus

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fuzzdce"


@functools.cache
def parsed(source: str) -> ast.Module:
    """``source``'s tree, parsed once in this process: the tests below read each module's tree, none
    changes it."""
    return ast.parse(source)


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def fuzzdce_imports(path: pathlib.Path) -> list[tuple[str, bool]]:
    """(imported fuzzdce module, imported at module level?) for each import in ``path``."""
    tree = parsed(path.read_text())
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


FOUNDATIONS = {
    "fuzzdce.core.vocabulary": set(),
    "fuzzdce.core.tracebacks": set(),
    "fuzzdce.core.errors": {"fuzzdce.core.vocabulary"},
    "fuzzdce.core.model": {"fuzzdce.core.vocabulary", "fuzzdce.core.tracebacks"},
}


@pytest.mark.parametrize("module", sorted(FOUNDATIONS))
def test_the_foundations_import_nothing_else_of_fuzzdce(module):
    """The vocabulary and the reading of tracebacks import nothing of fuzzdce; the errors only the
    vocabulary; the records only those two (as ``model``'s docstring says)."""
    assert import_graph()[module] <= FOUNDATIONS[module]


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
# (Not CallStage, Standing and driver.GenerationEnd: "inputs", "known", "programs" and "recycled"
# are also the names of record fields.)
VOCABULARY |= {AddResult: "fuzzdce.core.vocabulary", Domain: "fuzzdce.core.program"}
VOCABULARY |= {Phase: "fuzzdce.fuzzing.time_plan", ReplyStatus: "fuzzdce.running.workers"}
# A string equal to a member that does not stand for it: (module, string) -> what it is instead.
NOT_VOCABULARY = {
    ("fuzzdce.oracles.grads", "grad"): "the noun in the grads oracle's messages",
    ("fuzzdce.cli", "timeout"): "the campaign setting (Workers.timeout) that --timeout gives",
}


def string_literals(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, value) of every string constant in ``path`` but docstrings."""
    return string_literals_of(path.read_text())


def string_literals_of(source: str) -> list[tuple[int, str]]:
    """(line, value) of every string constant in ``source`` but docstrings."""
    tree = parsed(source)
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


# --- what a module offers the others: its public names ----------------------------------------------


def is_private(name: str) -> bool:
    """``_x``: a module's own (a dunder such as ``__version__`` is Python's, offered to all)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_names_taken(source: str, module: str) -> list[tuple[int, str]]:
    """(line, fuzzdce name) of each private name ``source`` (the text of ``module``) takes from another
    fuzzdce module: ``from fuzzdce.m import _x``, or ``m._x`` of a module ``m`` imported from fuzzdce."""
    tree = parsed(source)
    modules: dict[str, str] = {}  # the name a fuzzdce module is bound to here -> the module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fuzzdce") and node.module != module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULES:
                    modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif is_private(alias.name):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
        elif isinstance(node, ast.Import):
            modules |= {alias.asname or alias.name: alias.name for alias in node.names if alias.name in MODULES}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            owner = modules.get(ast.unparse(node.value))
            if owner is not None and owner != module:
                found.append((node.lineno, f"{owner}.{node.attr}"))
    return sorted(found)


def test_no_module_takes_a_private_name_of_another():
    """What one module uses of another is public: a ``_name`` is free to change with its module alone."""
    found = {name: taken for name, path in MODULES.items() if (taken := private_names_taken(path.read_text(), name))}
    assert found == {}, "make the name public (or move it to the module that uses it)"


def test_a_private_name_taken_from_another_module_is_found():
    planted = (
        "from fuzzdce import __version__\n"
        "from fuzzdce.running.decisions import Gating, _given\n"
        "from fuzzdce.running import interception\n"
        "import fuzzdce.running.compile_sharing\n"
        "import fuzzdce.running.decisions as d\n"
        "state = interception.TraceState(), interception._hidden, d._without, fuzzdce.running.compile_sharing._differs\n"
    )
    assert private_names_taken(planted, "fuzzdce.results.planted") == [
        (2, "fuzzdce.running.decisions._given"),
        (6, "fuzzdce.running.compile_sharing._differs"),
        (6, "fuzzdce.running.decisions._without"),
        (6, "fuzzdce.running.interception._hidden"),
    ]
    own = "from fuzzdce.running import decisions\nx = decisions._given\n"
    assert private_names_taken(own, "fuzzdce.running.decisions") == []


# --- no class holds state for the whole process -----------------------------------------------------


def class_attributes_assigned(sources: dict[str, str]) -> list[str]:
    """Each assignment to an attribute of a fuzzdce class (``Gate.active = gate``, ``cls.count += 1``)
    in ``sources`` (module name -> its text): what a class holds is shared by every run in the
    process, unseen by whoever calls."""
    trees = {module: parsed(text) for module, text in sources.items()}
    classes = {node.name for tree in trees.values() for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = []
    for module, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
                        if part.value.id in classes or part.value.id == "cls":
                            found.append((module, node.lineno, ast.unparse(part)))
    return [f"{module}:{line}: {name}" for module, line, name in sorted(found)]


def test_no_class_holds_state_for_the_whole_process():
    assert class_attributes_assigned(SOURCES) == [], "hold it on an instance, or in a contextvars.ContextVar"


def test_a_planted_class_wide_state_is_found():
    planted = (
        "class Gate:\n"
        "    count = 0\n"
        "    @classmethod\n"
        "    def more(cls):\n"
        "        cls.count += 1\n"
        "def run(gate):\n"
        "    previous, Gate.active = Gate.active, gate\n"
        "    gate.calls = 0\n"
    )
    assert class_attributes_assigned({"fuzzdce.running.planted": planted}) == [
        "fuzzdce.running.planted:5: cls.count",
        "fuzzdce.running.planted:7: Gate.active",
    ]


# --- dependencies the imports do not show -----------------------------------------------------------
# A lower wing can depend on a higher one without importing it: a parameter annotated with the
# higher wing's class (as a string, or under TYPE_CHECKING), or one that is only ever handed that
# class's objects and reads their attributes (results' report reading a Campaign's ``ledger``).


def defined_attributes(cls: ast.ClassDef) -> set[str]:
    """The names a class defines: class-body assignments and annotations (fields, members), its
    methods and properties, and what its methods assign to ``self.X``."""
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(cls):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        names |= {
            t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
        }
    return names


def wing_classes(trees: dict[str, ast.Module]) -> tuple[dict[str, set[int]], dict[int, set[str]]]:
    """Class name -> the wings defining a class of that name; wing -> the attribute names its classes define."""
    wings_of_class: dict[str, set[int]] = {}
    attributes: dict[int, set[str]] = {wing: set() for wing in range(APPLICATION + 1)}
    for module, tree in trees.items():
        wing = wing_of(module)
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            wings_of_class.setdefault(cls.name, set()).add(wing)
            attributes[wing] |= defined_attributes(cls)
    return wings_of_class, attributes


def annotation_names(annotation: ast.expr | None) -> set[str]:
    """The names an annotation mentions, quoted ones too (``"Campaign | None"``)."""
    if annotation is None:
        return set()
    names = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                names |= annotation_names(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                pass  # a string that is no annotation (a Literal's value)
    return names


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """A function's parameters but ``self`` and ``cls``."""
    a = function.args
    every = [*a.posonlyargs, *a.args, *a.kwonlyargs, *([a.vararg] if a.vararg else []), *([a.kwarg] if a.kwarg else [])]
    return [p for p in every if p.arg not in ("self", "cls")]


# What Python's own objects define (a file's ``write``, a mapping's ``items``): a parameter reading
# one of these may be any such object, whichever wing's class also defines the name.
BUILTIN_ATTRIBUTES = {
    name
    for kind in (object, str, bytes, int, float, list, tuple, dict, set, io.TextIOBase, io.BufferedIOBase, pathlib.Path)
    for name in dir(kind)
}


def typed_outside_fuzzdce(annotation: ast.expr | None, classes: dict[str, set[int]]) -> bool:
    """Does ``annotation`` name a type, none of them fuzzdce's (``Any`` and ``object`` name none)?"""
    names = annotation_names(annotation)
    return not names & set(classes) and bool(names - {"Any", "object", "None"})


def upward_dependencies(sources: dict[str, str]) -> list[str]:
    """Each function of a wing that takes a higher wing's object: a parameter annotated with a class
    only a higher wing defines, or a read ``param.attr`` of an attribute only higher wings' classes
    define (``sources``: module name -> its text). A parameter annotated with no fuzzdce class
    (``BinaryIO``, Thunder's ``BoundSymbol``) is what its annotation says: its reads are that type's."""
    trees = {module: parsed(text) for module, text in sources.items()}
    wings_of_class, attributes = wing_classes(trees)
    found = []
    for module, tree in sorted(trees.items()):
        wing = wing_of(module)
        if wing == APPLICATION:
            continue
        own = set().union(*(attributes[w] for w in range(wing + 1)))
        higher = set().union(*(attributes[w] for w in range(wing + 1, APPLICATION + 1))) - own - BUILTIN_ATTRIBUTES
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            params = parameters(function)
            for p in params:
                for name in sorted(annotation_names(p.annotation)):
                    if name in wings_of_class and min(wings_of_class[name]) > wing:
                        found.append(f"{module}.{function.name}: parameter {p.arg} is a {name}, a class of a higher wing")
            names = {p.arg for p in params if not typed_outside_fuzzdce(p.annotation, wings_of_class)}
            reads = {
                (node.value.id, node.attr)
                for node in ast.walk(function)
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
            }
            found += [
                f"{module}.{function.name}: reads {param}.{attr}, which only a higher wing's classes define"
                for param, attr in sorted(reads)
                if attr in higher
            ]
    return found


SOURCES = {name: path.read_text() for name, path in MODULES.items()}


def test_no_function_of_a_lower_wing_takes_an_object_of_a_higher_one():
    assert upward_dependencies(SOURCES) == [], "pass the lower wing what it owns (a record, a mapping), not the higher object"


def test_a_planted_dependency_on_a_higher_wing_is_found_though_nothing_is_imported():
    planted = '''
def render(campaign):
    """Reads a live Campaign: its ledger is a fuzzing-wing attribute."""
    return campaign.ledger.bugs()


def title(campaign: "Campaign") -> str:
    return "report"
'''
    found = upward_dependencies({**SOURCES, "fuzzdce.results.planted": planted})
    assert found == [
        "fuzzdce.results.planted.render: reads campaign.ledger, which only a higher wing's classes define",
        "fuzzdce.results.planted.title: parameter campaign is a Campaign, a class of a higher wing",
    ]


# --- one concept, one home: faults are values, joining is one module ---------------------------------

# The functions that decide whether two failures are one fault, and what keeps bugs apart.
JOIN_DECISIONS = frozenset(
    {
        "connected",
        "clash",
        "compatible",
        "kept_apart",
        "fault_label",
        "join_keys",
        "cause_key",
        "same_failure",
        "mark",
        "placed_marks",
        "words_site",
        "settled_links",
    }
)


def functions_defined(path: pathlib.Path) -> set[str]:
    """The module's own functions (a method may hand a decision on: ``Finding.cause_key``)."""
    return {node.name for node in parsed(path.read_text()).body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_only_the_joining_module_decides_a_join():
    deciding = {name: sorted(functions_defined(path) & JOIN_DECISIONS) for name, path in MODULES.items()}
    assert {name for name, found in deciding.items() if found} == {"fuzzdce.core.joining"}, deciding


# How code read a fault back from its text, when faults were strings.
FAULT_TEXT_READS = ('split(" | ")', 'startswith("exception |")', "NOT_LOCALISED in", '" | " in', "without_localisation")


@pytest.mark.parametrize("pattern", FAULT_TEXT_READS)
def test_nothing_parses_a_faults_text(pattern):
    assert [name for name, path in MODULES.items() if pattern in path.read_text()] == []


def test_oracles_build_faults_only_through_the_constructors_of_faults():
    """No oracle makes a fault's class itself, nor gives a ``Violation`` a fault written as text."""
    from fuzzdce.core.faults import FAULT_KINDS, Fault

    classes = {cls.__name__ for cls in (*FAULT_KINDS.values(), Fault)}
    wrong = []
    for name, path in MODULES.items():
        if not name.startswith("fuzzdce.oracles"):
            continue
        for node in ast.walk(parsed(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in classes:
                wrong.append((name, node.lineno, node.func.id))
            if (
                isinstance(node, ast.keyword)
                and node.arg == "fault"
                and isinstance(node.value, ast.Constant | ast.JoinedStr | ast.BinOp)
            ):
                wrong.append((name, node.value.lineno, "fault as text"))
    assert wrong == []


def test_every_oracle_declares_what_it_is():
    """Value, exception or observer, whether a script checks it, its minify priority: beside its code."""
    from fuzzdce.core.model import Judges

    assert {o.judges for o in ORACLES.values()} == set(Judges)
    assert [name for name, o in ORACLES.items() if not (o.description and o.holds)] == [], "its words: what it checks, what holds"
    priorities = [o.minify_priority for o in ORACLES.values() if o.minify_priority is not None]
    assert len(priorities) == len(set(priorities)), "two oracles with one minify priority: which wins would be by accident"
    assert all(o.judges == Judges.EXCEPTION for o in ORACLES.values() if o.minify_priority == min(priorities))


# A string equal to an oracle's name outside the oracles wing that does not stand for that oracle:
# (module, string) -> what it is instead.
NOT_AN_ORACLE = {
    **{("fuzzdce.core.model", c.value): "a ScriptCheck: the kind of check a standalone script makes" for c in ScriptCheck},
    ("fuzzdce.core.vocabulary", "timeout"): "a FailureKind, which the timeout oracle reports",
    ("fuzzdce.core.vocabulary", "crash"): "a FailureKind, which the crash oracle reports",
    ("fuzzdce.cli", "timeout"): "the campaign setting (Workers.timeout) that --timeout gives",
}


def oracle_names_written(sources: dict[str, str]) -> list[str]:
    """Each string literal (docstrings aside) equal to an oracle's name in ``sources`` (module name
    -> its text) outside the oracles wing and ``NOT_AN_ORACLE``: a table or an ``if`` keyed by an
    oracle, which belongs on its ``Oracle`` record."""
    return [
        f"{module}:{line}: {value!r}"
        for module, text in sorted(sources.items())
        if not module.startswith("fuzzdce.oracles")
        for line, value in string_literals_of(text)
        if value in ORACLES and (module, value) not in NOT_AN_ORACLE
    ]


def test_an_oracles_facts_live_on_its_record():
    """What fuzzdce knows of an oracle (its words, its script check, what it judges) is set where
    its module declares its ``Oracle``: nothing elsewhere names an oracle to look a fact up."""
    assert oracle_names_written(SOURCES) == []


def test_an_oracle_named_outside_its_module_is_found():
    planted = 'GOES = {"splits": "the graph is not split"}\ndef f(oracle):\n    return oracle == "guards"\n'
    assert oracle_names_written({"fuzzdce.core.planted": planted}) == [
        "fuzzdce.core.planted:1: 'splits'",
        "fuzzdce.core.planted:3: 'guards'",
    ]
    assert oracle_names_written({"fuzzdce.oracles.planted": planted}) == []


# Display code: what writes reports for people may pick text apart; it decides nothing.
DISPLAY_MODULES = frozenset({"fuzzdce.results.report", "fuzzdce.results.html_report", "fuzzdce.results.issue"})
# (module, function) of display code elsewhere: a trace's label made a file name, a message's first
# clause in a reproducer's docstring.
DISPLAY_FUNCTIONS = frozenset({("fuzzdce.results.store", "_file_label"), ("fuzzdce.results.reproducers", "first_clause")})
# What holds a fault's or a label's text (or the text made of one: signatures, keys, join labels).
IDENTITY_TEXT = frozenset(
    {
        "fault", "fault_text", "faults", "signature", "violation_signature", "sig", "key", "cause", "label", "labels",
        "parts", "message_words", "key_words", "identity", "kind", "site",
    }
)  # fmt: skip
STRING_MATCHES = frozenset({"startswith", "endswith", "removeprefix", "removesuffix"})
REGEX_CALLS = frozenset({"match", "fullmatch", "search", "sub", "subn", "findall", "finditer", "split"})


def names_in(node: ast.AST) -> set[str]:
    """The identifiers an expression reads (names and attributes), and the methods it calls."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
    return found


def text_matched(call: ast.Call) -> ast.AST | None:
    """The text a call matches against a prefix, suffix or regex (``x.startswith(..)``,
    ``re.match(p, x)``, ``PATTERN.search(x)``), or None for any other call."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr in STRING_MATCHES:
        return func.value
    if func.attr in REGEX_CALLS:
        regex_module = isinstance(func.value, ast.Name) and func.value.id == "re"
        args = call.args[1:] if regex_module else call.args
        if regex_module or (isinstance(func.value, ast.Name) and func.value.id.isupper()):
            return args[-1] if args else None
    return None


def identity_text_reads(source: str, module: str = "") -> list[tuple[int, str]]:
    """(line, expression) of each prefix, suffix or regex match over a fault's or a label's text,
    outside ``DISPLAY_FUNCTIONS``."""
    tree = parsed(source)
    display = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and (module, f.name) in DISPLAY_FUNCTIONS
        for n in ast.walk(f)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and id(node) not in display and (subject := text_matched(node)) is not None:
            if names_in(subject) & IDENTITY_TEXT:
                found.append((node.lineno, ast.unparse(subject)))
    return found


def test_no_code_but_display_matches_a_faults_or_a_labels_text():
    """A fault, a finding and a bug are known by data (``faults.Fault.identity``): nothing outside
    display code takes a prefix, suffix or regex match of a fault's, a signature's, a key's or a
    label's text to decide anything."""
    reads = {
        name: found
        for name, path in MODULES.items()
        if name not in DISPLAY_MODULES
        if (found := identity_text_reads(path.read_text(), name))
    }
    assert reads == {}


def test_a_planted_match_over_a_faults_text_is_found():
    planted = "def f(fault, label):\n    return str(fault).startswith('exception') or _WORDS.match(label.text)\n"
    assert [line for line, _ in identity_text_reads(planted)] == [2, 2]
    assert identity_text_reads("def f(frame):\n    return frame.startswith('torch/')\n") == []


# What holds a violation's message or a text made to name a failure for people (a signature).
MESSAGE_TEXT = frozenset({"message", "messages", "signature", "violation_signature", "sig", "fault_text"})
# A fault, a violation or a finding: ``str`` of one is its text.
FAILURE_VALUES = frozenset({"fault", "faults", "violation", "finding"})
KEYED_BY = frozenset({"get", "setdefault", "pop"})
SPLITS = frozenset({"split", "rsplit", "partition", "rpartition"})
# (module, function) where a signature keys what people gave or read: a known-findings file names a
# finding by its signature (the user's words), and a bug's reasons are shown by member signature.
TEXT_KEYED_FOR_PEOPLE = frozenset(
    {("fuzzdce.core.findings", "add"), ("fuzzdce.core.findings", "_bug"), ("fuzzdce.results.records", "of")}
)


def bound_names(target: ast.AST) -> set[str]:
    """The names an assignment's target binds (``a``, ``a, (b, *c)``; none for ``d[k]`` or ``o.x``)."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, ast.Tuple | ast.List):
        return {name for t in target.elts for name in bound_names(t)}
    return bound_names(target.value) if isinstance(target, ast.Starred) else set()


def text_names(function: ast.AST) -> set[str]:
    """``MESSAGE_TEXT``, and the local names ``function`` binds to what reads one (``seen = (path,
    v.message)``, ``sig = signature(v)``), through other such names."""
    text = set(MESSAGE_TEXT)
    while True:
        bound = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
                targets, value = (node.targets if isinstance(node, ast.Assign) else [node.target]), node.value
            elif isinstance(node, ast.For | ast.comprehension):
                targets, value = [node.target], node.iter
            else:
                continue
            if names_in(value) & text:
                bound |= {name for t in targets for name in bound_names(t)}
        if bound <= text:
            return text
        text |= bound


def reads_text(node: ast.AST, text: set[str]) -> bool:
    """Does ``node`` read a message or a signature (``text``), or ``str`` of a fault, a violation or a finding?"""
    if names_in(node) & text:
        return True
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id == "str"
        and any(names_in(a) & FAILURE_VALUES for a in n.args)
        for n in ast.walk(node)
    )


def dict_keys(node: ast.AST) -> list[ast.AST]:
    """The keys ``node`` stores or looks up: a subscript's, ``d.get(k)``'s, a dict display's and a
    dict comprehension's."""
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice | ast.Constant):
        return [node.slice]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEYED_BY and node.args:
        return [node.args[0]]
    if isinstance(node, ast.Dict):
        return [k for k in node.keys if k is not None]
    if isinstance(node, ast.DictComp):
        return [node.key]
    return []


def text_used_as_identity(source: str, module: str = "") -> list[tuple[int, str]]:
    """(line, expression) of each dict key, and each ``str.split`` (``partition``), that reads a
    message or a signature, outside display code and ``TEXT_KEYED_FOR_PEOPLE``: text made into a
    key, or picked apart, where a failure's identity (data) says what it is."""
    found = []
    for function in ast.walk(parsed(source)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or (module, function.name) in DISPLAY_FUNCTIONS:
            continue
        text = text_names(function)
        for node in ast.walk(function):
            split = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SPLITS
            if split and (names_in(node.func.value) & IDENTITY_TEXT or reads_text(node.func.value, text)):
                found.append((node.lineno, ast.unparse(node)))
            if (module, function.name) not in TEXT_KEYED_FOR_PEOPLE:
                found += [(node.lineno, ast.unparse(key)) for key in dict_keys(node) if reads_text(key, text)]
    return sorted(set(found))


def test_no_code_but_display_keys_a_dict_by_a_message_or_a_signature_or_splits_one():
    """Failures are grouped, cached and looked up by identity (``faults.identity``): no dict is
    keyed by a message, a signature or a fault's text, and none is split to read a field back."""
    found = {
        name: reads
        for name, path in MODULES.items()
        if name not in DISPLAY_MODULES
        if (reads := text_used_as_identity(path.read_text(), name))
    }
    assert found == {}


def test_text_used_as_identity_is_found_where_planted():
    planted = (
        "def f(v, fault, cache):\n"
        "    seen = (v.path, v.oracle, v.message)\n"
        "    cache[seen] = 1\n"
        "    cache.setdefault(signature(v), [])\n"
        "    groups = {str(fault): v}\n"
        "    return v.message.split(': ')[0], groups\n"
    )
    assert [line for line, _ in text_used_as_identity(planted)] == [3, 4, 5, 6]
    clean = "def f(v, cache):\n    cache[identity(v)] = v.message\n    return v.frame.split(':')[0]\n"
    assert text_used_as_identity(clean) == []


# --- the docs that name every module ------------------------------------------------------------------

EXTENDING = PACKAGE.parent / "docs" / "extending.md"


def modules_of(wing: str) -> set[str]:
    """The modules of ``wing``, by their short name."""
    return {p.stem for p in (PACKAGE / wing).glob("*.py") if p.stem != "__init__"}


def listed_in_docstring(docstring: str) -> set[str]:
    """The modules a wing's docstring lists: the ````name````s opening each item of its "Modules:"
    list, before the item's ": " (one item may name several, joined by ", ")."""
    listing = docstring.split("\nModules:\n", 1)[1] if "\nModules:\n" in docstring else ""
    items = []
    for line in listing.splitlines():
        if line.startswith("- "):
            items.append(line[2:])
        elif items and line.startswith("  "):
            items[-1] += " " + line.strip()
    return {part.strip(" `") for item in items for part in item.split(": ", 1)[0].split(",") if part.strip(" `")}


def outside_parentheses(text: str) -> str:
    """``text`` without what its parentheses hold (nested ones too)."""
    depth, kept = 0, ""
    for char in text:
        depth += char == "("
        kept += char if depth == 0 else ""
        depth -= char == ")" and depth > 0
    return kept


def listed_in_extending(wing: str, text: str) -> set[str]:
    """The modules docs/extending.md's layout table lists for ``wing``: its modules column without
    what parentheses say of each, split at commas and "and"."""
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `fuzzdce/{wing}/` |")]
    cell = outside_parentheses(row.rstrip(" |").split(" | ", 2)[2])
    return {part.strip(" `") for part in cell.replace(" and ", ",").split(",") if part.strip(" `")}


@pytest.mark.parametrize("wing", WINGS)
def test_each_wing_says_its_job_and_lists_every_module(wing):
    import importlib

    docstring = importlib.import_module(f"fuzzdce.{wing}").__doc__ or ""
    assert docstring.startswith(f"fuzzdce's {wing} wing: "), "its first words say which wing and its job"
    assert listed_in_docstring(docstring) == modules_of(wing)


@pytest.mark.parametrize("wing", WINGS)
def test_the_layout_table_of_extending_md_lists_every_module(wing):
    assert listed_in_extending(wing, EXTENDING.read_text()) == modules_of(wing)


def test_a_missing_or_stale_module_in_the_docs_is_found():
    docstring = "fuzzdce's core wing: x.\n\nModules:\n- ``a``: one.\n- ``b``, ``c``: two\n  and more.\n"
    assert listed_in_docstring(docstring) == {"a", "b", "c"}
    row = "| `fuzzdce/core/` | plain | `a` (one, `X`), `b` and `c` (two: `d`, `e`), `gone` |"
    assert listed_in_extending("core", row) == {"a", "b", "c", "gone"}

"""docs/concepts.md's glossary stays true: each term it names a code name for has that name in the
code, and the words issue 26 settled are all there."""

import importlib
import inspect
import pathlib
import re

CONCEPTS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "concepts.md"
# One entry: "- **term** (`dotted.code.name`): ..." (a term without a code name has no brackets).
ENTRY = re.compile(r"^- \*\*(?P<term>[^*]+)\*\*(?: \(`(?P<name>[\w.]+)`\))?:", re.M)
SETTLED = {"finding", "cause", "bug", "joining", "standing", "group", "report"}


def glossary() -> dict[str, str | None]:
    """Term -> its code name (None for a term that has none), from the Glossary section."""
    section = CONCEPTS.read_text().split("## Glossary", 1)[1].split("\n## ", 1)[0]
    return {m["term"]: m["name"] for m in ENTRY.finditer(section)}


def has_attribute(owner: object, name: str) -> bool:
    """``owner.name`` exists, or ``owner`` is a class whose methods assign ``self.name`` (an
    instance attribute, which the class itself does not have)."""
    if hasattr(owner, name):
        return True
    return inspect.isclass(owner) and re.search(rf"\bself\.{name}\b\s*[:=]", inspect.getsource(owner)) is not None


def exists(dotted: str) -> bool:
    """``dotted`` names a module, or an attribute reached from the longest module prefix of it."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for i, name in enumerate(parts[split:], start=split):
            if not has_attribute(owner, name):
                return False
            if i < len(parts) - 1:
                owner = getattr(owner, name)
        return True
    return False


def test_every_glossary_code_name_exists():
    missing = [f"{term}: {name}" for term, name in glossary().items() if name and not exists(name)]
    assert missing == [], "rename the glossary's code name with the code (docs/concepts.md)"


def test_the_glossary_has_the_settled_words():
    assert SETTLED <= set(glossary()), sorted(SETTLED - set(glossary()))

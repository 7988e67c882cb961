"""Reproducers: one bug as a standalone, seeded Python file a Thunder engineer can run.

The script holds the program and its seeded inputs as source (``Program.source``, the very text
fuzzdce executed) and the path's compile function as source (``inspect.getsource`` of the function
fuzzdce calls), and runs each (path, oracle) its findings showed through :func:`reproduce`: the same code
the campaign ran, so a reproducer cannot drift from what found the bug. It exits 1 and prints the
failures while the bug is present, 0 once fixed, 2 when eager itself rejects the program.
``--placement`` reruns it under another placement, e.g. ``stock`` or ``my_module:my_fix``.
"""

from __future__ import annotations

import inspect
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass

from fuzzdce.execution import run_path
from fuzzdce.model import EAGER, STOCK
from fuzzdce.oracles import ORACLES
from fuzzdce.paths import PATHS
from fuzzdce.placements import PLACEMENTS, resolve
from fuzzdce.versions import versions

MAIN_SOURCE = '''
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement to apply (default: {PLACEMENT})")
    placement = parser.parse_args(argv).placement
    from fuzzdce.repro import reproduce_all

    return reproduce_all(program, make_inputs, CHECKS, placement=placement)


if __name__ == "__main__":
    raise SystemExit(main())
'''


def script(bug) -> str:
    """The reproducer of ``bug`` (a ``fuzzdce.findings.Bug``) as Python source: its smallest
    program, and every (path, oracle) its members showed."""
    checks = sorted({(f.violation.path, f.violation.oracle) for f in bug.members})
    versions_line = ", ".join(f"{k} {value}" for k, value in versions().items())
    message = bug.smallest.violation.message.replace("\\", "\\\\").replace('"""', "'''")[:600]
    shown = "\n".join(
        f"- {oracle} on {path}: {ORACLES[oracle].description}"
        + (" (compared with stock Thunder on the same path)" if ORACLES[oracle].needs_stock else "")
        for path, oracle in checks
    )
    header = (
        f'"""fuzzdce bug {bug.id} [{bug.verdict}] under {bug.placement}: {", ".join(bug.oracles())} on {", ".join(bug.paths())}.\n\n'
        f"{message}\n\n"
        f"Checked, each under the placement:\n{shown}\n\n"
        f"Shown under: {', '.join(bug.placements)}. Found with {versions_line}.\n"
        "Exits 1 while any check fails, 0 once fixed (2: eager rejects the program).\n"
        "Try a fix: python repro.py --placement my_module:my_patch\n"
        '"""\n\n'
        "import argparse\n\nimport torch\n\n"
        f"PLACEMENT = {bug.placement!r}\nCHECKS = {checks!r}  # (path, oracle)\n\n\n"
    )
    compile_sources = []
    for name in sorted({path for path, _ in checks}):
        path = PATHS[name]
        compile_sources.append(
            f"# Path {name!r}: fuzzdce.paths.{path.compile.__name__} compiles the program, then makes the "
            f"{', '.join(path.calls)} call(s);\n# reproduce_all() below runs exactly that function:\n"
            + inspect.getsource(path.compile)
        )
    body = f"{bug.program.source()}\n\n{bug.program.inputs_source()}\n\n" + "\n\n".join(compile_sources)
    return header + body + "\n" + MAIN_SOURCE


# --- running reproducers ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptProgram:
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function."""

    fn: Callable
    inputs: Callable

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)


def load_script(path) -> ScriptProgram:
    """The program and inputs of a reproducer file, without running its main."""
    namespace = runpy.run_path(str(path), run_name="fuzzdce_reproducer")
    return ScriptProgram(namespace["program"], namespace["make_inputs"])


def reproduce_all(fn: Callable, make_inputs: Callable, checks, *, placement: str) -> int:
    """Every (path, oracle) check of a bug's reproducer: 1 if any fails, 2 if eager rejects the program, else 0."""
    codes = [reproduce(fn, make_inputs, path=path, placement=placement, oracle=oracle) for path, oracle in checks]
    return 2 if 2 in codes else (1 if 1 in codes else 0)


def reproduce(fn: Callable, make_inputs: Callable, *, path: str, placement: str, oracle: str) -> int:
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``: 1 if it fails, else 0.

    Thunder raising counts as failing for every oracle: a fix that trades a wrong result for an
    exception fixes nothing.
    """
    program = ScriptProgram(fn, make_inputs)
    check = ORACLES[oracle]
    chosen = resolve(placement)
    reference = run_path(EAGER, program, PLACEMENTS[STOCK])
    if reference.error is not None:
        print(f"eager itself fails: {reference.error}", file=sys.stderr)
        return 2
    outcome = run_path(path, program, chosen)
    stock = run_path(path, program, PLACEMENTS[STOCK]) if check.needs_stock and not chosen.is_stock else None
    problems = [v.message for v in check(outcome, reference, stock)]
    if outcome.error is not None and oracle != "raises":
        print(outcome.error.traceback, file=sys.stderr)
        problems.append(f"raises: {outcome.error}")
    for problem in problems:
        print(f"FAIL {oracle}: {problem}")
    if not problems:
        print(f"ok: {oracle} holds on {path} under {placement}")
    return 1 if problems else 0

"""Reproducers: one finding as a standalone, seeded Python file a Thunder engineer can run.

The script holds the program and its seeded inputs as source (``Program.source``, the very text
fuzzdce executed) and the path's compile function as source (``inspect.getsource`` of the function
fuzzdce calls), and runs the path and the oracle through :func:`reproduce`: the same code the
campaign ran, so a reproducer cannot drift from what found the bug. It exits 1 and prints the
failure while the bug is present, 0 once fixed, 2 when eager itself rejects the program.
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
    from fuzzdce.repro import reproduce

    return reproduce(program, make_inputs, path=PATH, placement=placement, oracle=ORACLE)


if __name__ == "__main__":
    raise SystemExit(main())
'''


def script(finding) -> str:
    """The reproducer of ``finding`` (a ``fuzzdce.findings.Finding``) as Python source."""
    v = finding.violation
    path, oracle = PATHS[v.path], ORACLES[v.oracle]
    versions_line = ", ".join(f"{k} {value}" for k, value in versions().items())
    message = v.message.replace("\\", "\\\\").replace('"""', "'''")[:600]
    header = (
        f'"""fuzzdce finding {finding.id} [{finding.verdict}]: {v.oracle} on {v.path} under {finding.placement}.\n\n'
        f"{message}\n\n"
        f"Checked: {oracle.description}"
        + (" (compared with stock Thunder on the same path)" if oracle.needs_stock else "")
        + f".\nShown under: {', '.join(finding.placements)}. Found with {versions_line}.\n"
        "Exits 1 while the bug is present, 0 once fixed (2: eager rejects the program).\n"
        "Try a fix: python repro.py --placement my_module:my_patch\n"
        '"""\n\n'
        "import argparse\n\nimport torch\n\n"
        f"PATH = {v.path!r}\nPLACEMENT = {finding.placement!r}\nORACLE = {v.oracle!r}\n\n\n"
    )
    calls = ", ".join(path.calls)
    compile_source = (
        f"# Path {v.path!r}: fuzzdce.paths.{path.compile.__name__} compiles the program, then makes the "
        f"{calls} call(s);\n# reproduce() below runs exactly that function:\n"
        + inspect.getsource(path.compile)
    )
    body = f"{finding.program.source()}\n\n{finding.program.inputs_source()}\n\n{compile_source}"
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

"""Reproducers: one finding as a standalone, seeded Python file a Thunder engineer can run.

The script holds the program and its seeded inputs as source (``Program.source``, the very text
fuzzdce executed) and the path's compile function as source (``inspect.getsource`` of the function
fuzzdce calls), and runs the path and the oracle through :func:`reproduce`: the same code the
campaign ran, so a reproducer cannot drift from what found the bug. It exits 1 and prints the
failure while the bug is present, 0 once fixed, 2 when eager itself rejects the program.
``--placement`` reruns it under another placement, e.g. ``stock`` or ``my_module:my_fix``. A
finding of another Thunder build selects that build (``PLACEMENT = "NAME=DIR"``): the program then
runs in the build's own process, as in the campaign, and is compared with this one's Thunder.
"""

from __future__ import annotations

import inspect
import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fuzzdce.builds import BUILD_SPECS, BuildRequest, BuildWorker
from fuzzdce.evaluate import portable
from fuzzdce.execution import run_path
from fuzzdce.model import EAGER, STOCK, Outcome, Placement, Violation
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

    return reproduce(program, make_inputs, path=PATH, placement=placement, oracle=ORACLE, script=__file__)


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
        "Try a fix: python repro.py --placement my_module:my_patch (or another build: --placement NAME=DIR)\n"
        '"""\n\n'
        "import argparse\n\nimport torch\n\n"
        f"PATH = {v.path!r}\nPLACEMENT = {BUILD_SPECS.get(finding.placement, finding.placement)!r}\n"
        f"ORACLE = {v.oracle!r}\n\n\n"
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
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function.

    ``script``: the reproducer file defining them; then it pickles as that file's path, and a build's
    process loads the same program from it.
    """

    fn: Callable
    inputs: Callable
    script: str | None = None

    def __reduce__(self):
        if self.script is None:
            raise TypeError("a ScriptProgram crosses processes only when made from a reproducer file")
        return load_script, (self.script,)

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)


def load_script(path) -> ScriptProgram:
    """The program and inputs of a reproducer file, without running its main."""
    namespace = runpy.run_path(str(path), run_name="fuzzdce_reproducer")
    return ScriptProgram(namespace["program"], namespace["make_inputs"], str(Path(path).resolve()))


def run_under(placement: Placement, program, path: str, reference: Outcome, oracle: str) -> tuple[Outcome, list[Violation]]:
    """``program`` on ``path`` under ``placement``, and ``oracle``'s violations found where the
    traces are (in another build's process; none otherwise, the caller checks here)."""
    if placement.build is None:
        return run_path(path, program, placement), []
    worker = BuildWorker(placement.build)
    try:
        result = worker.run(BuildRequest(program, path, placement.name, None, portable(reference, with_traces=False)))
    finally:
        worker.close()
    return result.outcome, [v for v in result.trace_violations if v.oracle == oracle]


def reproduce(
    fn: Callable, make_inputs: Callable, *, path: str, placement: str, oracle: str, script: str | None = None
) -> int:
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``: 1 if it fails, else 0.

    Thunder raising counts as failing for every oracle: a fix that trades a wrong result for an
    exception fixes nothing. ``script``: the reproducer's file, which another build's process
    loads the program from.
    """
    program = ScriptProgram(fn, make_inputs, script)
    check = ORACLES[oracle]
    chosen = resolve(placement)
    reference = run_path(EAGER, program, PLACEMENTS[STOCK])
    if reference.error is not None:
        print(f"eager itself fails: {reference.error}", file=sys.stderr)
        return 2
    outcome, found_there = run_under(chosen, program, path, reference, oracle)
    stock = run_path(path, program, PLACEMENTS[STOCK]) if check.needs_stock and not chosen.is_stock else None
    checked_here = [] if chosen.build is not None and check.reads_traces else check(outcome, reference, stock)
    problems = [v.message for v in found_there + checked_here]
    if outcome.error is not None and oracle != "raises":
        print(outcome.error.traceback, file=sys.stderr)
        problems.append(f"raises: {outcome.error}")
    for problem in problems:
        print(f"FAIL {oracle}: {problem}")
    if not problems:
        print(f"ok: {oracle} holds on {path} under {placement}")
    return 1 if problems else 0

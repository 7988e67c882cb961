"""Reproducers: one bug as a standalone, seeded Python file a Thunder engineer can run.

The script holds the program and its seeded inputs as source (``Program.source``, the very text
fuzzdce executed) and the path's compile function as source (``inspect.getsource`` of the function
fuzzdce calls), and runs each (path, oracle) its findings showed through :func:`reproduce`: the same code
the campaign ran, so a reproducer cannot drift from what found the bug. It exits 1 and prints the
failures while the bug is present, 0 once fixed, 2 when eager itself rejects the program.
``--placement`` reruns it under another placement, e.g. ``stock`` or ``my_module:my_fix``. A
bug of another Thunder build selects that build (``PLACEMENT = "NAME=DIR"``): the program then
runs in the build's own process, as in the campaign. Oracles that compare two Thunders compare
with the campaign's reference (``REFERENCE``: stock, or the build ``--against`` named).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping

from fuzzdce.core.findings import RAISES
from fuzzdce.core.model import EAGER, STOCK, CallLabel, ErrorInfo, Outcome, Placement, Violation
from fuzzdce.core.versions import versions
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles.raises import unexpected_errors
from fuzzdce.running.builds import BuildRequest, BuildWorker
from fuzzdce.running.evaluate import JUDGES_WHERE_EAGER_REJECTS, portable
from fuzzdce.running.execution import ScriptProgram, guard_labels, guard_program, run_path
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS, resolve

MAIN_SOURCE = """
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement to apply (default: {PLACEMENT})")
    parser.add_argument("--reference", default=REFERENCE, help=f"what two-Thunder checks compare with (default: {REFERENCE})")
    args = parser.parse_args(argv)
    from fuzzdce.results.repro import reproduce_all

    guard_inputs = globals().get("GUARD_INPUTS", {})
    return reproduce_all(
        program, make_inputs, CHECKS, placement=args.placement, script=__file__, reference=args.reference, guard_inputs=guard_inputs
    )


if __name__ == "__main__":
    raise SystemExit(main())
"""


def script(bug, builds: Mapping[str, str] | None = None, reference: str = STOCK) -> str:
    """The reproducer of ``bug`` (a ``fuzzdce.core.findings.Bug``) as Python source: its smallest
    program, and every (path, oracle) its members showed; ``builds`` (NAME -> NAME=TARGET) says
    how it selects a placement that is another build; ``reference``: the campaign's reference."""
    reference_spec = (builds or {}).get(reference, reference)
    checks = sorted({(f.violation.path, f.violation.oracle) for f in bug.members})
    versions_line = ", ".join(f"{k} {value}" for k, value in versions().items())
    message = bug.smallest.violation.message.replace("\\", "\\\\").replace('"""', "'''")[:600]
    shown = "\n".join(
        f"- {oracle} on {path}: {ORACLES[oracle].description}"
        + (f" (compared with {reference} on the same path)" if ORACLES[oracle].needs_stock else "")
        for path, oracle in checks
    )
    header = (
        f'"""fuzzdce bug {bug.id} [{bug.verdict}] under {bug.placement}: {", ".join(bug.oracles())} on {", ".join(bug.paths())}.\n\n'
        f"{message}\n\n"
        f"Checked, each under the placement:\n{shown}\n\n"
        f"Shown under: {', '.join(bug.placements)}; the reference: {reference}. Found with {versions_line}.\n"
        "Exits 1 while any check fails, 0 once fixed (2: eager rejects the program).\n"
        "Try a fix: python repro.py --placement my_module:my_patch (or another build: --placement NAME=DIR)\n"
        '"""\n\n'
        "import argparse\n\nimport torch\n\n"
        f"PLACEMENT = {(builds or {}).get(bug.placement, bug.placement)!r}\nREFERENCE = {reference_spec!r}\n"
        f"CHECKS = {checks!r}  # (path, oracle)\n\n\n"
    )
    compile_sources = []
    for name in sorted({path for path, _ in checks}):
        path = PATHS[name]
        compile_sources.append(
            f"# Path {name!r}: fuzzdce.running.paths.{path.compile.__name__} compiles the program, then makes the "
            f"{', '.join(path.calls)} call(s);\n# reproduce_all() below runs exactly that function:\n"
            + inspect.getsource(path.compile)
        )
    body = f"{bug.program.source()}\n\n{bug.program.inputs_source()}\n\n" + "\n\n".join(compile_sources)
    if any(oracle == "guards" for _, oracle in checks):
        body += "\n\n" + guard_inputs_source(bug.program)
    return header + body + "\n" + MAIN_SOURCE


def guard_inputs_source(program) -> str:
    """The inputs of each guard call ``program`` makes, as source: one ``make_inputs`` per varied
    property, and ``GUARD_INPUTS`` naming them (the guards oracle's calls, made after the first)."""
    parts, entries = [], []
    for label in guard_labels(program):
        variant, _ = guard_program(program, label)
        if variant is None:
            continue
        name = f"make_inputs_{label.replace('-', '_')}"
        if label == CallLabel.GUARD_REQUIRES_GRAD:  # the same inputs, requiring grad
            parts.append(f"def {name}(requires_grad=False):\n    return make_inputs(requires_grad=True)\n")
        else:
            parts.append(variant.inputs_source().replace("def make_inputs(", f"def {name}(", 1))
        entries.append(f"    {str(label)!r}: {name},")
    return "\n\n".join(
        [
            *parts,
            "# The guard calls: each varies one property the first call's prologue checks.\nGUARD_INPUTS = {\n"
            + "\n".join(entries)
            + "\n}\n",
        ]
    )


# --- running reproducers ------------------------------------------------------------------------


def reproduce_all(
    fn: Callable,
    make_inputs: Callable,
    checks,
    *,
    placement: str,
    script: str | None = None,
    reference: str = STOCK,
    guard_inputs=None,
) -> int:
    """Every (path, oracle) check of a bug's reproducer: 1 if any fails, 2 if eager rejects the program, else 0.
    ``guard_inputs``: label -> make_inputs of each guard call (the reproducer's ``GUARD_INPUTS``)."""
    codes = [
        reproduce(
            fn,
            make_inputs,
            path=path,
            placement=placement,
            oracle=oracle,
            script=script,
            reference=reference,
            guard_inputs=guard_inputs,
        )
        for path, oracle in checks
    ]
    return 2 if 2 in codes else (1 if 1 in codes else 0)


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
    result.outcome.build = placement.name
    return result.outcome, [v for v in result.trace_violations if v.oracle == oracle]


def raised_where_eager_did_not(outcome: Outcome, eager: Outcome) -> ErrorInfo | None:
    """The first exception Thunder raised on ``outcome``'s path where eager did not (the ``raises``
    oracle's rule, call by call: a grad call eager rejects too is no failure of Thunder's); None
    when there is none."""
    unexpected = unexpected_errors(outcome, eager)
    return unexpected[0][1] if unexpected else None


def reproduce(
    fn: Callable,
    make_inputs: Callable,
    *,
    path: str,
    placement: str,
    oracle: str,
    script: str | None = None,
    reference: str = STOCK,
    guard_inputs=None,
) -> int:
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``: 1 if it fails, else 0.

    Thunder raising counts as failing for every oracle: a fix that trades a wrong result for an
    exception fixes nothing. ``script``: the reproducer's file, which another build's process
    loads the program from. ``reference``: what an oracle comparing two Thunders compares with.
    """
    program = ScriptProgram(fn, make_inputs, script, tuple((guard_inputs or {}).items()))
    check = ORACLES[oracle]
    chosen = resolve(placement)
    eager = run_path(EAGER, program, PLACEMENTS[STOCK])
    if eager.error is not None and oracle not in JUDGES_WHERE_EAGER_REJECTS:
        print(f"eager itself fails: {eager.error}", file=sys.stderr)
        return 2
    outcome, found_there = run_under(chosen, program, path, eager, oracle)
    base = resolve(reference)
    stock = None
    if check.needs_stock and chosen.name != base.name:
        stock, _ = run_under(base, program, path, eager, oracle)
    checked_here = [] if chosen.build is not None and check.reads_traces else check(outcome, eager, stock)
    problems = [v.message for v in found_there + checked_here]
    raised = raised_where_eager_did_not(outcome, eager)
    if raised is not None and oracle != RAISES:
        print(raised.traceback, file=sys.stderr)
        problems.append(f"raises: {raised}")
    for problem in problems:
        print(f"FAIL {oracle}: {problem}")
    if not problems:
        print(f"ok: {oracle} holds on {path} under {placement}")
    return 1 if problems else 0

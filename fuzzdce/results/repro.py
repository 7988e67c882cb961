"""Running a bug's reproducer: ``reproduce_all``, what every ``repro.py`` calls (the script is
written by ``reproducers.repro_script``; this module's path is written into each saved one, so it
stays), and what a check found (``Reproduced``).

Each (path, oracle) is checked by the same code the campaign ran. The reproducer exits 1 and prints
the failures while the bug is present, 0 once fixed, 2 when eager itself rejects the program, and 4
(not verified, its own line) when a check could not be made: a path this machine skips (a
``jit-nvfuser`` bug without CUDA), a time-out, fuzzdce's own failure: that is never "fixed". A bug
of another Thunder build runs in the build's own process, as in the campaign. Oracles that compare
two Thunders compare with the campaign's reference (``REFERENCE``: stock, or the build
``--against`` named).
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from enum import IntEnum

from fuzzdce.core.errors import UsageError, unexpected_exception
from fuzzdce.core.model import EAGER, STOCK, ErrorInfo, Outcome, Placement, Violation
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles.raises import RAISES, unexpected_errors
from fuzzdce.running.builds import BuildRequest, BuildWorker
from fuzzdce.running.evaluate import portable
from fuzzdce.running.path_running import run_path
from fuzzdce.running.paths import PATHS, TRACES
from fuzzdce.running.placements import PLACEMENTS, resolve
from fuzzdce.running.script_program import ScriptProgram


class Reproduced(IntEnum):
    """What a reproducer's check found, and its exit code: the bug ``FAILS`` (1), is ``FIXED`` (0),
    eager rejects the program (``INVALID``, 2), or the check could not be made here (``NOT_VERIFIED``,
    4: its path skipped on this machine, a time-out, a crash, fuzzdce's own failure, a check an oracle
    could not run): never "fixed" for a check nothing made."""

    FIXED = 0
    FAILS = 1
    INVALID = 2
    NOT_VERIFIED = 4


def overall(codes) -> Reproduced:
    """Every check's result as one: eager rejecting the program first, then any failure (the bug is
    there), then any check not made (nothing says it is fixed), else fixed."""
    for code in (Reproduced.INVALID, Reproduced.FAILS, Reproduced.NOT_VERIFIED):
        if code in codes:
            return code
    return Reproduced.FIXED


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
    """Every (path, oracle) check of a bug's reproducer, as one ``Reproduced`` code: 1 if any fails,
    2 if eager rejects the program, else 4 if any could not be made, else 0.
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
    result = overall(codes)
    if result == Reproduced.NOT_VERIFIED:
        unverified = sum(code == Reproduced.NOT_VERIFIED for code in codes)
        print(f"NOT VERIFIED: {unverified} of {len(codes)} checks could not be made here; the others hold (exit 4, not fixed)")
    return int(result)


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


def why_not_verified(outcome: Outcome, oracle: str) -> str:
    """Why ``oracle``'s check on ``outcome`` was not made ("" when it was): the path skipped here,
    a time-out or a crash (unless that is what the oracle checks), fuzzdce's own failure, or a
    check the oracle (or the trace fetch it reads) could not run."""
    if outcome.skipped:
        return f"{outcome.path} skipped on this machine: {outcome.skipped}"
    failure = outcome.failure
    if failure is not None and failure.kind != oracle:  # the timeout and crash oracles check exactly that
        return f"{outcome.path} under {outcome.placement}: {failure.kind}: {failure.message.strip().splitlines()[-1][:300]}"
    unread = sorted({what for who, what in outcome.not_checked if who in (oracle, TRACES)})
    if unread:
        return f"{oracle} on {outcome.path} under {outcome.placement} {'; '.join(unread)}"
    return ""


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
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``: a ``Reproduced`` code,
    with one line saying so (``FAIL``, ``ok``, ``NOT VERIFIED``).

    Thunder raising counts as failing for every oracle: a fix that trades a wrong result for an
    exception fixes nothing. A check that could not be made (``why_not_verified``, or fuzzdce's own
    code raising) is not verified, never fixed. ``script``: the reproducer's file, which another
    build's process loads the program from. ``reference``: what an oracle comparing two Thunders
    compares with.
    """
    try:
        problems, unverified = check_once(fn, make_inputs, path, placement, oracle, script, reference, guard_inputs)
    except UsageError:
        raise
    except EagerRejects as e:
        print(f"eager itself fails: {e}", file=sys.stderr)
        return Reproduced.INVALID
    except Exception as e:  # fuzzdce's own code failed while checking: nothing was verified
        traceback.print_exc(file=sys.stderr)
        problems, unverified = [], f"fuzzdce failed while checking: {unexpected_exception(e)}"
    for problem in problems:
        print(f"FAIL {oracle}: {problem}")
    if problems:
        return Reproduced.FAILS
    if unverified:
        print(f"NOT VERIFIED {oracle} on {path} under {placement}: {unverified}")
        return Reproduced.NOT_VERIFIED
    print(f"ok: {oracle} holds on {path} under {placement}")
    return Reproduced.FIXED


class EagerRejects(Exception):
    """Eager itself fails on the reproducer's program: nothing to reproduce."""


def check_once(fn, make_inputs, path, placement, oracle, script, reference, guard_inputs) -> tuple[list[str], str]:
    """One check: (the failures it shows, why it was not verified, "" when it was)."""
    program = ScriptProgram(fn, make_inputs, script, tuple((guard_inputs or {}).items()))
    check = ORACLES[oracle]
    chosen = resolve(placement)
    compiled = PATHS.get(path)
    device = compiled.device if compiled is not None and not compiled.unavailable() else None
    eager = run_path(EAGER, program, PLACEMENTS[STOCK], device=device)  # on the path's device, where it runs
    if eager.error is not None and not check.judges_where_eager_rejects:
        raise EagerRejects(str(eager.error))
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
    unverified = why_not_verified(outcome, oracle)
    if not unverified and stock is not None:
        unverified = why_not_verified(stock, oracle)
        unverified = f"the reference: {unverified}" if unverified else ""
    return problems, unverified

"""The child process of another Thunder build: ``python -m fuzzdce.running.buildworker MEMORY_LIMIT_MB``.

Started by ``fuzzdce.running.builds.BuildWorker`` with the build's directories first on ``PYTHONPATH``, so
the ``thunder`` imported here (by fuzzdce's modules, below) is the build's. Reads requests from
stdin and answers on the original stdout, framed pickles, in the protocol of every worker child
(``fuzzdce.running.workers.serve``: its limits, Ctrl-C left to the parent, ok / crash / harness replies);
anything Thunder or torch prints goes to stderr instead, so it cannot corrupt an answer. Ends when
stdin closes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback

from fuzzdce.core.errors import harness_message, unexpected_exception
from fuzzdce.core.model import Outcome, Placement, SplitRecord
from fuzzdce.core.portable_trace import portable_trace
from fuzzdce.core.quiet import quiet_library_warnings
from fuzzdce.oracles import ORACLES
from fuzzdce.running.builds import DOCTOR, BuildRequest, BuildResult
from fuzzdce.running.doctor import diagnosis
from fuzzdce.running.evaluate import trace_text
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import stock
from fuzzdce.running.workers import read_frame, serve, write_frame


def answer(request: BuildRequest) -> BuildResult:
    """Run the job under this process's Thunder; the trace oracles here, the rest in the parent."""
    outcome = run_path(request.path, request.program, Placement(request.placement, stock), timeout=request.timeout)
    violations = [v for o in ORACLES.values() if o.reads_traces for v in o(outcome, request.reference, None)]
    return BuildResult(sendable(outcome), violations)


def sendable(outcome: Outcome) -> Outcome:
    """The outcome as the parent can read it: tensors kept (the parent compares them), splits as
    ``SplitRecord``, traces in their portable form (``portable_trace.portable_trace``: structure, names,
    keep-tags, subsymbols and the printed text), which the parent aligns with stock's traces for DCE
    activity and ``dce-sound`` exactly as for a patch placement."""
    splits = [SplitRecord.from_reason(r) for r in outcome.split_reasons]
    return dataclasses.replace(outcome, split_reasons=splits, traces=portable_traces(outcome))


def portable_traces(outcome: Outcome) -> list[tuple[str, object]]:
    """(label, PortableTrace) per trace; a trace that cannot be walked goes as its text (the names
    oracle, run here, says what is wrong with it)."""
    traces = []
    for (label, trace), (_, text) in zip(outcome.traces, trace_text(outcome)):
        try:
            traces.append((label, portable_trace(trace)))
        except Exception:
            traces.append((label, text))
    return traces


def explain(request, error: Exception) -> str:
    """What an exception that escaped a request says: for ``doctor``, the traceback (the build may
    be unable to import fuzzdce's modules at all); for a job, the one-line harness message."""
    if request == DOCTOR:
        return traceback.format_exc(limit=-8)
    return harness_message("a build worker", unexpected_exception(error))


def handle(request: BuildRequest | str) -> BuildResult | str:
    return diagnosis() if request == DOCTOR else answer(request)


def main(argv: list[str]) -> int:
    """Serve requests on stdin until it closes, answers on the original stdout, under the worker's
    limits (``workers.serve``); ``argv``: the memory limit in MB (0: none)."""
    memory_limit_mb = int(argv[0]) if argv else 0
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # prints go to stderr from now on
    requests = sys.stdin.buffer
    quiet_library_warnings()
    serve(
        lambda: read_frame(requests),
        lambda reply: write_frame(answers, reply),
        handle,
        memory_limit_mb=memory_limit_mb,
        explain=explain,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

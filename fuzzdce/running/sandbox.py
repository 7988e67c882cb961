"""Jobs run in a sandboxed child process, one (placement, path) job at a time.

The campaign's driver process runs Hypothesis; a ``Worker`` child does all of Thunder's work
through the same ``LocalJobs`` an in-process evaluation uses. Each job is one program on one path
under one placement, so a hang or a crash is pinned to exactly that and becomes a ``JobFailure``,
which the ``timeout`` and ``crash`` oracles report like any other violation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fuzzdce.core.model import JobFailure, Outcome
from fuzzdce.core.quiet import quiet_library_warnings
from fuzzdce.running.evaluate import Job, LocalJobs, PathResult
from fuzzdce.running.memory import ProcessMemory
from fuzzdce.running.workers import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_RECYCLE_JOBS, DEFAULT_RECYCLE_RSS_MB, GRACE_SECONDS, Worker

# What every job's child imports, which a child forked from a forkserver finds imported
# (``workers.child_context``: installed libraries only; fuzzdce's own modules it imports itself).
CHILD_MODULES = ("torch", "thunder", "thunder.dynamo")

# How long past its limit the parent waits for a job cut at a campaign's time budget (``Job.cut``)
# before it ends the child, where an uncut job gets ``GRACE_SECONDS``: a compile hung in C at the
# budget's end overran it by the whole grace.
CUT_GRACE_SECONDS = 1.0


@functools.cache
def child_jobs() -> LocalJobs:
    """The child's one ``LocalJobs``, made on its first job: it keeps the current program's eager,
    stock and reference outcomes from one job to the next (a fresh child starts a fresh one)."""
    quiet_library_warnings()
    return LocalJobs(portable=True)


def run_job_in_child(job: Job) -> Outcome | PathResult:
    """Child entry point: one job, its result made portable."""
    return child_jobs()(job)


class SandboxedJobs:
    """Runs each job in a ``Worker`` child with a time and memory limit; a ``JobFailure`` when the
    job hung or killed its child (the next job gets a fresh one). The child is recycled between
    jobs after ``recycle_jobs`` jobs or past ``recycle_rss_mb`` resident MB (``Worker``).
    ``uses_device``: whether its jobs may use CUDA (None: where this machine has it), which decides
    how its memory is limited (``workers.memory_limits``). ``waiting``: called about every second
    while a job runs (``ChildWorker.waiting``)."""

    def __init__(
        self,
        *,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        recycle_jobs: int | None = DEFAULT_RECYCLE_JOBS,
        recycle_rss_mb: int | None = DEFAULT_RECYCLE_RSS_MB,
        name: str = "worker",
        log=lambda line: None,
        grace: float = GRACE_SECONDS,
        uses_device: bool | None = None,
        waiting: Callable[[], None] | None = None,
    ) -> None:
        self.grace = grace  # how much longer than a job's limit its parent waits (``workers.GRACE_SECONDS``)
        self.worker = Worker(
            run_job_in_child,
            memory_limit_mb=memory_limit_mb,
            recycle_jobs=recycle_jobs,
            recycle_rss_mb=recycle_rss_mb,
            name=name,
            log=log,
            uses_device=uses_device,
            preload=CHILD_MODULES,
        )
        self.worker.waiting = waiting  # told about every second while a job runs (a lane's progress)

    @property
    def memory(self) -> ProcessMemory:
        """The worker's resident sizes, across its successive children."""
        return self.worker.memory

    @property
    def recycled(self) -> int:
        return self.worker.recycled

    def __call__(self, job: Job) -> Outcome | PathResult | JobFailure:
        # The child acts on the per-path limit at its safe points (watchdog.time_limit); the grace
        # ends, from here, a compile that never reaches one. A job cut at a campaign's time budget
        # is waited for no longer than ``CUT_GRACE_SECONDS`` past it: its result would not be judged.
        grace = min(self.grace, CUT_GRACE_SECONDS) if job.cut else self.grace
        return self.worker.submit(job, job.timeout, grace=grace)

    def starts_fresh(self) -> bool:
        """Will the next job wait for a fresh child's imports (none yet, or the last one gone)?"""
        child = self.worker.child
        return child is None or not child.alive() or self.worker.jobs_in_child == 0

    def start_ahead(self) -> None:
        """Start the worker's child now (``ChildWorker.start_ahead``): its imports overlap other work."""
        self.worker.start_ahead()

    def close(self) -> None:
        self.worker.close()

"""Isolated execution: Thunder's work runs in a child process with a time and memory limit.

A compile that hangs, segfaults, aborts or exhausts memory must become a finding, not the end of a
campaign. ``Worker`` keeps one child process alive across jobs (importing torch and Thunder costs
seconds) and replaces it when a job times out or kills it.

A child's memory grows with the jobs it runs (Thunder's and torch's caches), about 10 MB a minute;
over a night that would reach the memory limit and surface as false ``crash`` findings. So a worker
also *recycles* its child, between jobs only, after ``recycle_jobs`` jobs or once the child's
resident size (read from /proc by the parent, free per job) passes ``recycle_rss_mb``: a normal
event, counted in ``recycled``, never a failure. The next job starts a fresh child.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from typing import Any

from fuzzdce.errors import HARNESS, harness_message, unexpected_exception
from fuzzdce.memory import ProcessMemory, own_peak_mb, resident_mb
from fuzzdce.model import FailureKind, JobFailure

DEFAULT_MEMORY_LIMIT_MB = 8192  # address space; importing torch + Thunder alone maps about 5 GB
STARTUP_SECONDS = 60.0  # a new child imports torch and Thunder before its first job
# A fresh child costs about 5 s of imports (benchmarks/memory.py measures it) and grows fast over
# its first few hundred jobs (to about 750 MB), then 2-4 MB per 100 jobs: 2000 jobs (about 10
# minutes of a lane on 2 cores) bound that to under 100 MB more, for under 1% of the lane's time.
# 2048 MB resident is the safety net for a job that leaves a child much larger.
DEFAULT_RECYCLE_JOBS = 2000
DEFAULT_RECYCLE_RSS_MB = 2048


def _child_main(connection, target: Callable[[Any], Any], memory_limit_mb: int | None) -> None:
    if memory_limit_mb:
        import resource

        limit = memory_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    while True:
        try:
            job = connection.recv()
        except EOFError:
            return
        try:
            result = target(job)
            # The peak resident size rides along, for the parent where it cannot read /proc.
            connection.send(("ok", result, own_peak_mb()))
        except MemoryError:
            connection.send((FailureKind.CRASH, "MemoryError: worker memory limit reached"))
        except Exception as e:  # the job's code records what Thunder raises: this is fuzzdce's own
            connection.send((HARNESS, harness_message("a job worker", unexpected_exception(e))))


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            return f"worker killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with status {exitcode}"


class Worker:
    """Runs ``target(job)`` in a child process; ``submit`` returns its result or a JobFailure.

    ``recycle_jobs`` / ``recycle_rss_mb``: after that many jobs in one child, or once its resident
    size passes that many MB, whichever comes first, the child is retired after handing back its
    result (0 or None: never). ``memory`` records its children's resident sizes; ``log`` hears of
    each recycling, once.
    """

    def __init__(
        self,
        target: Callable[[Any], Any],
        *,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        recycle_jobs: int | None = DEFAULT_RECYCLE_JOBS,
        recycle_rss_mb: int | None = DEFAULT_RECYCLE_RSS_MB,
        name: str = "worker",
        log: Callable[[str], None] = lambda line: None,
    ):
        self.target = target
        self.memory_limit_mb = memory_limit_mb
        self.recycle_jobs = recycle_jobs
        self.recycle_rss_mb = recycle_rss_mb
        self.log = log
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self._connection = None
        self.restarts = 0  # children replaced after a job failed
        self.recycled = 0  # children retired healthy, for their job count or memory
        self.jobs_in_child = 0
        self.memory = ProcessMemory(name, jobs=0)

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_child_main, args=(child, self.target, self.memory_limit_mb), daemon=True)
        self._process.start()
        child.close()
        self._connection = parent

    def _stop(self) -> None:
        self.jobs_in_child = 0
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join(timeout=10)
            self._connection.close()
        self._process = self._connection = None

    def submit(self, job: Any, timeout: float | None) -> Any:
        """Run one job. A result, or JobFailure("timeout"|"crash", why) after which the child is replaced."""
        allowance = 0.0
        if self._process is None or not self._process.is_alive():
            self._stop()
            self._start()
            allowance = STARTUP_SECONDS
        try:
            self._connection.send(job)
            if not self._connection.poll(None if timeout is None else timeout + allowance):
                return self._replace(JobFailure(FailureKind.TIMEOUT, f"no result within {timeout:g} s"))
            status, value, *reported_peak = self._connection.recv()
            reported_peak_mb = reported_peak[0] if reported_peak else None
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            self._process.join(timeout=10)
            return self._replace(JobFailure(FailureKind.CRASH, describe_exit(self._process.exitcode)))
        if status in (FailureKind.CRASH, HARNESS):
            return self._replace(JobFailure(status, value))
        self._after_job(reported_peak_mb)
        return value

    def _after_job(self, reported_peak_mb: float | None) -> None:
        """The job is done and its result received: read the child's memory and retire the child
        if it has run enough jobs or grown too large (the next job starts a fresh one)."""
        self.jobs_in_child += 1
        self.memory.jobs += 1
        rss_mb = self._read_memory(reported_peak_mb)
        reason = self._recycle_reason(rss_mb)
        if reason is not None:
            self._stop()
            self.recycled += 1
            self.log(f"fuzzdce: {self.memory.process} recycled after {reason}; the next job starts a fresh one")

    def _read_memory(self, reported_peak_mb: float | None) -> float | None:
        """The child's resident MB now (its peak where /proc cannot be read), recorded in ``memory``."""
        read = resident_mb(self._process.pid)
        if read is None and reported_peak_mb is None:
            return None
        rss_mb, peak_mb = read if read is not None else (reported_peak_mb, reported_peak_mb)
        self.memory.observe(rss_mb, peak_mb)
        return rss_mb

    def _recycle_reason(self, rss_mb: float | None) -> str | None:
        """Why the child should go now, or None."""
        if self.recycle_jobs and self.jobs_in_child >= self.recycle_jobs:
            return f"{self.jobs_in_child} jobs"
        if self.recycle_rss_mb and rss_mb is not None and rss_mb > self.recycle_rss_mb:
            return f"growing to {rss_mb:.0f} MB resident (over {self.recycle_rss_mb} MB)"
        return None

    def _replace(self, failure: JobFailure) -> JobFailure:
        """Drop the child after a failure; the next job starts a fresh one."""
        self._stop()
        self.restarts += 1
        return failure

    def close(self) -> None:
        self._stop()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

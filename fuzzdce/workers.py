"""Isolated execution: Thunder's work runs in a child process with a time and memory limit.

A compile that hangs, segfaults, aborts or exhausts memory must become a finding, not the end of a
campaign. ``Worker`` keeps one child process alive across jobs (importing torch and Thunder costs
seconds) and replaces it when a job times out or kills it.
"""

from __future__ import annotations

import multiprocessing
import signal
import traceback
from collections.abc import Callable
from typing import Any

from fuzzdce.model import JobFailure

DEFAULT_MEMORY_LIMIT_MB = 8192  # address space; importing torch + Thunder alone maps about 5 GB
STARTUP_SECONDS = 60.0  # a new child imports torch and Thunder before its first job


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
            connection.send(("ok", target(job)))
        except MemoryError:
            connection.send(("crash", "MemoryError: worker memory limit reached"))
        except Exception:
            connection.send(("crash", traceback.format_exc(limit=-8)))


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
    """Runs ``target(job)`` in a child process; ``submit`` returns its result or a JobFailure."""

    def __init__(self, target: Callable[[Any], Any], *, memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB):
        self.target = target
        self.memory_limit_mb = memory_limit_mb
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self._connection = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(
            target=_child_main, args=(child, self.target, self.memory_limit_mb), daemon=True
        )
        self._process.start()
        child.close()
        self._connection = parent

    def _stop(self) -> None:
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
                return self._replace(JobFailure("timeout", f"no result within {timeout:g} s"))
            status, value = self._connection.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            self._process.join(timeout=10)
            return self._replace(JobFailure("crash", describe_exit(self._process.exitcode)))
        if status == "crash":
            return self._replace(JobFailure("crash", value))
        return value

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

"""Isolated execution: Thunder's work runs in a child process with a time and memory limit.

A compile that hangs, segfaults, aborts or exhausts memory must become a finding, not the end of a
campaign. A ``ChildWorker`` keeps one child process alive across jobs (importing torch and Thunder
costs seconds) and replaces it when a job times out or kills it. Two kinds of child share it, and
with it the limits, the Ctrl-C handling, the message protocol and the recycling below:

- ``Worker``: a ``multiprocessing`` child of this Python running ``target(job)`` (the sandbox);
- ``CommandChild``: a command of its own (another Thunder build's Python, ``fuzzdce.running.buildworker``),
  framed pickles on its stdin and stdout (``fuzzdce.running.builds.BuildWorker``).

The protocol, child to parent, one reply per job: ``(ReplyStatus.OK, result, peak MB)``,
``(FailureKind.CRASH, why)`` when the job ran out of memory, ``(FailureKind.HARNESS, why)`` when
an exception escaped the job (fuzzdce's own error). A child that dies or stops answering is a crash or a timeout, seen by the parent.

A ``Worker``'s child starts one of two ways. *Spawned*, it is a fresh Python that imports torch
and Thunder before its first job: seconds of CPU, paid again by every child that replaces one
(recycled, timed out, crashed). *Forked from a forkserver*, it starts from a process of
multiprocessing's that imported the modules its jobs need (``preload``) once, and is otherwise the
same fresh child: its own limits, its own crash. A child forks only where that is safe
(``child_context``): the forkserver must never have run a parallel op (a child would find torch's
OpenMP threads gone, and hang in its first one) nor touched CUDA, and it imported its modules
under the environment its parent has now. The forkserver lives as long as the process that started it
(one per process: each lane has its own), resident beside its children.

Memory is limited one of two ways. A child that runs CPU paths only gets an address-space limit
(``RLIMIT_AS``): running past it raises ``MemoryError`` inside the job, a ``crash``. CUDA cannot
start under such a limit (it maps far more address space than it uses: ``cudaGetDeviceCount()``
fails with "out of memory"), so a child that may use CUDA has none; its parent watches its resident
size instead while a job runs, and kills it past the limit (a ``crash`` too).

A child's memory grows with the jobs it runs (Thunder's and torch's caches), about 10 MB a minute;
over a night that would reach the memory limit and surface as false ``crash`` findings. So a worker
also *recycles* its child, between jobs only, after ``recycle_jobs`` jobs or once the child's
resident size (read from /proc by the parent, free per job) passes ``recycle_rss_mb``: a normal
event, counted in ``recycled``, never a failure. The next job starts a fresh child.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.reduction
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, BinaryIO, Protocol

from fuzzdce.core.errors import DeviceLost, harness_message, unexpected_exception
from fuzzdce.core.model import FailureKind, JobFailure
from fuzzdce.running.memory import ProcessMemory, own_peak_mb, resident_mb

# Address space (importing torch + Thunder alone maps about 5 GB), or resident size for a child that
# may use CUDA; None (``--memory-limit 0``): no limit.
DEFAULT_MEMORY_LIMIT_MB = 8192
# How often a parent reads a CUDA-capable child's resident size while it waits for a job.
RESIDENT_POLL_SECONDS = 0.25
# How often a parent with someone to tell (``ChildWorker.waiting``) looks up from waiting for a job.
WAITING_POLL_SECONDS = 1.0
STARTUP_SECONDS = 60.0  # a new child imports torch and Thunder before its first job
# The child acts on a job's time limit at its own safe points, between Thunder's calls
# (watchdog.time_limit); the parent waits this much longer, then kills the child and records the
# timeout: a compile that never hands control back (a hang in Thunder, torch or C++) ends here.
GRACE_SECONDS = 15.0
# A fresh child pays torch's and Thunder's imports again, and grows fast over its first few hundred
# jobs, then slowly (benchmarks/memory.py measures both): recycling after this many jobs bounds the
# slow growth for a small share of a lane's time. The resident size is the safety net for a job that
# leaves a child much larger.
DEFAULT_RECYCLE_JOBS = 2000
DEFAULT_RECYCLE_RSS_MB = 2048


class ReplyStatus(StrEnum):
    """A reply's status when its job returned. A job that did not says why instead, with the
    ``FailureKind`` the parent records (``CRASH``, ``HARNESS``): one word each, never a second one."""

    OK = "ok"


# What a child that died or sent garbage raises at the parent's end of the channel.
CHILD_GONE = (EOFError, OSError, pickle.UnpicklingError)


# --- the child's side --------------------------------------------------------------------------------


def limit_this_process(memory_limit_mb: int | None) -> None:
    """A worker child's limits: its address space (0 or None: unlimited, as for a child that may
    use CUDA, whose parent watches its resident size instead), and Ctrl-C left to the parent, which
    stops the campaign cleanly and then the children."""
    if memory_limit_mb:
        import resource

        limit = memory_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def default_explanation(who: str) -> Callable[[Any, Exception], str]:
    """The one-line harness message for an exception that escaped a job of ``who``."""
    return lambda job, error: harness_message(who, unexpected_exception(error))


def reply_to(job: Any, handle: Callable[[Any], Any], explain: Callable[[Any, Exception], str]) -> tuple:
    """Run ``handle(job)`` and say how it went, in the protocol's terms."""
    try:
        # The peak resident size rides along, for the parent where it cannot read /proc.
        return (ReplyStatus.OK, handle(job), own_peak_mb())
    except MemoryError:
        return (FailureKind.CRASH, "MemoryError: worker memory limit reached")
    except DeviceLost as e:  # the process's device context is gone: the parent replaces the child
        return (FailureKind.CRASH, str(e))
    except Exception as e:  # a job records what Thunder raises: what escapes is fuzzdce's own error
        return (FailureKind.HARNESS, explain(job, e))


def serve(
    receive: Callable[[], Any],
    send: Callable[[tuple], None],
    handle: Callable[[Any], Any],
    *,
    memory_limit_mb: int | None,
    explain: Callable[[Any, Exception], str],
) -> None:
    """A worker child's main loop: under its limits, answer each job ``receive`` returns until it
    raises EOFError (the parent closed the channel)."""
    limit_this_process(memory_limit_mb)
    while True:
        try:
            job = receive()
        except EOFError:
            return
        send(reply_to(job, handle, explain))


def _child_main(
    connection, target: Callable[[Any], Any], memory_limit_mb: int | None, stderr: int, environment: dict[str, str]
) -> None:
    """A ``Worker``'s child: ``target(job)`` for each job on the pipe. Its stdout becomes its stderr:
    what a job prints past Python's capture (``path_running.captured_output``; a C++ library's printf)
    must not land in the report, the parent's stdout.

    ``stderr`` and ``environment`` are the parent's as they are at the child's start. A spawned child
    has them already; a forked one has its forkserver's, which were its parent's when the forkserver
    started (a test's captured stderr since gone, a variable since set), and takes these on."""
    if os.environ != environment:
        os.environ.clear()
        os.environ.update(environment)
    if stderr != 2:
        os.dup2(stderr, 2)
        os.close(stderr)
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(connection.recv, connection.send, target, memory_limit_mb=memory_limit_mb, explain=default_explanation("a job worker"))


# --- framed pickles, for a child that is a command of its own -----------------------------------------

HEADER = struct.Struct("!Q")  # a frame: its length, then that many bytes of pickle


def write_frame(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Any:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the worker closed its output")
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the worker stopped mid-answer")
    return pickle.loads(data)


# --- the parent's side -------------------------------------------------------------------------------


class Child(Protocol):
    """One running child process, as a ``ChildWorker`` talks to it."""

    pid: int

    def alive(self) -> bool: ...
    def send(self, job: Any) -> None: ...
    def ready(self, timeout: float | None) -> bool: ...
    def receive(self) -> tuple: ...
    def exitcode(self, wait: float) -> int | None: ...
    def stop(self) -> None: ...


# Variables a process sets while it runs and nothing reads on import: pytest's name of the test
# running; the cache folder torch's inductor writes into the environment on its first compile
# (for its own subprocesses; it reads it when it compiles); and the address inductor writes before
# each library it loads, for that library to read (an address in the writing process: a child
# writes its own before it loads one). A forked child still takes on its parent's values
# (``_child_main``), so a change of these alone needs no spawned child.
VOLATILE_ENVIRONMENT = frozenset({"PYTEST_CURRENT_TEST", "TORCHINDUCTOR_CACHE_DIR", "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"})
# fuzzdce's own variables: only fuzzdce's modules read them, and a forked child imports those
# itself, after it took on its parent's environment; the forkserver imports installed libraries only.
OWN_ENVIRONMENT_PREFIX = "FUZZDCE_"


def read_on_import(name: str) -> bool:
    """May the modules a forkserver imports have read variable ``name`` as they were imported?"""
    return name not in VOLATILE_ENVIRONMENT and not name.startswith(OWN_ENVIRONMENT_PREFIX)


@dataclass(frozen=True)
class ForkServerStart:
    """What the modules a forkserver imported depend on, as they were when it started: a child
    forks from it only while its parent's are the same (an environment variable read on import,
    by torch or Thunder, would otherwise differ from a spawned child's)."""

    preload: tuple[str, ...]
    environment: frozenset[tuple[str, str]]

    @classmethod
    def now(cls, preload: tuple[str, ...]) -> ForkServerStart:
        environment = frozenset((k, v) for k, v in os.environ.items() if read_on_import(k))
        return cls(tuple(preload), environment)

    def differences(self, other: ForkServerStart) -> list[str]:
        """What differs from ``other``: the preload, and each variable set, changed or unset."""
        changed = sorted({k for k, _ in self.environment ^ other.environment})
        return (["preload"] if self.preload != other.preload else []) + changed


def forkserver_differences(preload: tuple[str, ...]) -> list[str] | None:
    """Why a child importing ``preload`` would not fork from this process's forkserver now: the
    variables (or "preload") that differ from its start; None before it started."""
    if _forkserver_started is None:
        return None
    return ForkServerStart.now(preload).differences(_forkserver_started)


# What this process's forkserver (multiprocessing keeps one per process) started with, once a
# child asked for it.
_forkserver_started: ForkServerStart | None = None


def child_context(preload: tuple[str, ...]) -> multiprocessing.context.BaseContext:
    """How a child whose jobs import ``preload`` starts: forked from this process's forkserver,
    which imports ``preload`` once, where that is safe; else spawned.

    Spawned where the machine has CUDA: the forkserver's imports ask torch for devices (Thunder's
    do), which initialises the CUDA driver, and a child forked after that cannot use CUDA. Spawned
    where this process's environment differs from the forkserver's at its start, or a child asks
    for other modules than those it imported. The forkserver imports ``preload`` on the path a
    Python started in this environment has (Python 3.11's forkserver does not take this process's
    ``sys.path``): so ``preload`` names installed libraries only, and the child imports
    the rest (fuzzdce's modules, a test's planted placement) on its parent's ``sys.path``."""
    global _forkserver_started
    if not preload or may_use_cuda():
        return multiprocessing.get_context("spawn")
    now = ForkServerStart.now(preload)
    context = multiprocessing.get_context("forkserver")
    if _forkserver_started is None:
        context.set_forkserver_preload(list(preload))
        _forkserver_started = now
    return context if now == _forkserver_started else multiprocessing.get_context("spawn")


class ParentStderr:
    """This process's standard error as it is when a child starts, sent to the child (as a file
    descriptor of its own: ``_child_main`` makes it the child's fd 2)."""

    def __reduce__(self):
        return _detached, (multiprocessing.reduction.DupFd(2),)


def _detached(duplicate) -> int:
    return duplicate.detach()


class SpawnedChild:
    """A ``multiprocessing`` child of this Python running ``target(job)`` over a pipe: spawned, or
    forked from a forkserver that imported ``preload`` (``child_context``)."""

    def __init__(self, target: Callable[[Any], Any], memory_limit_mb: int | None, preload: tuple[str, ...] = ()) -> None:
        context = child_context(preload)
        self.start_method = context.get_start_method()
        parent, child = context.Pipe()
        args = (child, target, memory_limit_mb, ParentStderr(), dict(os.environ))
        self.process = context.Process(target=_child_main, args=args, daemon=True)
        self.process.start()
        child.close()
        self.connection = parent
        self.pid = self.process.pid

    def alive(self) -> bool:
        return self.process.is_alive()

    def send(self, job: Any) -> None:
        self.connection.send(job)

    def ready(self, timeout: float | None) -> bool:
        return self.connection.poll(timeout)

    def receive(self) -> tuple:
        return self.connection.recv()

    def exitcode(self, wait: float) -> int | None:
        self.process.join(timeout=wait)
        return self.process.exitcode

    def stop(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.connection.close()


class CommandChild:
    """A child running ``command`` (which calls ``serve`` over framed pickles on its stdin and
    stdout) in ``environment``."""

    def __init__(self, command: list[str], environment: dict[str, str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=environment)
        self.pid = self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, job: Any) -> None:
        write_frame(self.process.stdin, job)

    def ready(self, timeout: float | None) -> bool:
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        return bool(readable)

    def receive(self) -> tuple:
        return read_frame(self.process.stdout)

    def exitcode(self, wait: float) -> int | None:
        self.process.wait(timeout=wait)
        return self.process.returncode

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # the child's cue to end
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.process.stdout.close()


def describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker vanished"
    if exitcode < 0:
        try:
            return f"worker killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"worker killed by signal {-exitcode}"
    return f"worker exited with status {exitcode}"


class ChildWorker:
    """Runs jobs in a child made by ``start_child()``; ``submit`` returns a job's result or a JobFailure.

    ``recycle_jobs`` / ``recycle_rss_mb``: after that many jobs in one child, or once its resident
    size passes that many MB, whichever comes first, the child is retired after handing back its
    result (0 or None: never). ``resident_limit_mb``: while a job runs, a child past that many MB
    resident is killed and the job is a crash (None: not watched; the limit of a child that may use
    CUDA, which cannot start under an address-space limit). ``memory`` records its children's
    resident sizes; ``log`` hears of each recycling, once.
    """

    def __init__(
        self,
        start_child: Callable[[], Child],
        *,
        recycle_jobs: int | None = DEFAULT_RECYCLE_JOBS,
        recycle_rss_mb: int | None = DEFAULT_RECYCLE_RSS_MB,
        name: str = "worker",
        log: Callable[[str], None] = lambda line: None,
        resident_limit_mb: int | None = None,
    ):
        self.start_child = start_child
        self.resident_limit_mb = resident_limit_mb
        self.recycle_jobs = recycle_jobs
        self.recycle_rss_mb = recycle_rss_mb
        self.log = log
        self.child: Child | None = None
        self.restarts = 0  # children replaced after a job failed
        self.recycled = 0  # children retired healthy, for their job count or memory
        self.jobs_in_child = 0
        self.memory = ProcessMemory(name, jobs=0)
        # Called about every ``WAITING_POLL_SECONDS`` while a job runs (None: nobody): a lane says
        # which job it is inside (``program_cost.ProgramProgress.tick``).
        self.waiting: Callable[[], None] | None = None

    def _stop(self) -> None:
        self.jobs_in_child = 0
        if self.child is not None:
            self.child.stop()
        self.child = None

    def start_ahead(self) -> None:
        """Start a child now, unless one is alive, so that its imports run before the first job
        that needs it instead of in that job's time."""
        if self.child is None or not self.child.alive():
            self._stop()
            self.child = self.start_child()

    def submit(self, job: Any, timeout: float | None, *, grace: float = 0.0) -> Any:
        """Run one job. Its result, or JobFailure(timeout|crash|harness, why) after which the child
        is replaced. ``timeout``: the job's limit, which the child enforces itself; the parent waits
        ``grace`` longer (and a new child's startup) before it gives up on the child."""
        self.start_ahead()
        # A child's first job may wait on its imports (started here, or ahead and not done yet).
        allowance = STARTUP_SECONDS if self.jobs_in_child == 0 else 0.0
        try:
            self.child.send(job)
            waited = self._wait(None if timeout is None else timeout + grace + allowance)
            if waited is not None:
                return self._replace(waited)
            status, value, *reported_peak = self.child.receive()
        except CHILD_GONE:
            return self._replace(JobFailure(FailureKind.CRASH, describe_exit(self.child.exitcode(wait=10))))
        if status != ReplyStatus.OK:
            return self._replace(JobFailure(status, value))
        self._after_job(reported_peak[0] if reported_peak else None)
        return value

    def _wait(self, seconds: float | None) -> JobFailure | None:
        """Wait up to ``seconds`` (None: for ever) for the child's reply: None once it is ready, else
        why the job failed (past its time, or past the resident limit, read every
        ``RESIDENT_POLL_SECONDS`` while watched)."""
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return JobFailure(FailureKind.TIMEOUT, f"no result within {seconds:g} s")
            wait = left  # unwatched: the whole time left at once
            if self.resident_limit_mb is not None:
                wait = RESIDENT_POLL_SECONDS if left is None else min(left, RESIDENT_POLL_SECONDS)
            if self.waiting is not None:
                wait = WAITING_POLL_SECONDS if wait is None else min(wait, WAITING_POLL_SECONDS)
            if self.child.ready(wait):
                return None
            if self.waiting is not None:
                self.waiting()
            if self.resident_limit_mb is None:
                continue
            read = resident_mb(self.child.pid)
            if read is not None and read[0] > self.resident_limit_mb:
                self.memory.observe(*read)
                return JobFailure(
                    FailureKind.CRASH,
                    f"MemoryError: the worker passed its memory limit ({read[0]:.0f} MB resident, over {self.resident_limit_mb} MB)",
                )

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
        read = resident_mb(self.child.pid)
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

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def may_use_cuda() -> bool:
    """Whether a child on this machine may use CUDA (torch sees a device): it then gets no
    address-space limit, which CUDA cannot start under. torch is imported here, in the parent, not
    at this module's import: a worker child imports this module, and must stay small until its job
    imports what it needs (``paths.cuda_unavailable`` says why a path cannot run, for doctor)."""
    import torch

    return torch.cuda.is_available()


def memory_limits(memory_limit_mb: int | None, uses_device: bool) -> tuple[int | None, int | None]:
    """(the child's address-space limit, the parent's resident limit) in MB for a child with
    ``memory_limit_mb`` (None or 0: neither) that may (``uses_device``) or may not use CUDA."""
    if not memory_limit_mb:
        return None, None
    return (None, memory_limit_mb) if uses_device else (memory_limit_mb, None)


class Worker(ChildWorker):
    """A ``ChildWorker`` whose child is a copy of this Python running ``target(job)``, within
    ``memory_limit_mb``: of address space, or of resident size where it may use CUDA
    (``uses_device``; None: where this machine has CUDA). ``preload``: the installed modules its
    jobs import, which a child forked from a forkserver finds imported (``child_context``)."""

    def __init__(
        self,
        target: Callable[[Any], Any],
        *,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        recycle_jobs: int | None = DEFAULT_RECYCLE_JOBS,
        recycle_rss_mb: int | None = DEFAULT_RECYCLE_RSS_MB,
        name: str = "worker",
        log: Callable[[str], None] = lambda line: None,
        uses_device: bool | None = None,
        preload: tuple[str, ...] = (),
    ):
        address_space_mb, resident_mb_limit = memory_limits(
            memory_limit_mb, may_use_cuda() if uses_device is None else uses_device
        )
        super().__init__(
            lambda: SpawnedChild(target, address_space_mb, preload),
            recycle_jobs=recycle_jobs,
            recycle_rss_mb=recycle_rss_mb,
            name=name,
            log=log,
            resident_limit_mb=resident_mb_limit,
        )
        self.target = target
        self.memory_limit_mb = memory_limit_mb

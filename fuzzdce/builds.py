"""Another Thunder build as a placement: ``NAME=DIR`` or ``NAME=PYTHON``.

A build is compared with the Thunder fuzzdce runs under (the reference build, "stock") exactly as a
patch placement is: same jobs, same oracles, same triage ("only under NAME" is placement-induced,
"under both" is baseline), reproducers that select it. Two Thunders cannot share a process, so a
build's jobs run in a child process of its own (``fuzzdce.buildworker``):

- ``NAME=DIR``: this Python, with DIR put first on ``sys.path`` (before fuzzdce, hence before
  anything imports thunder): a directory holding a ``thunder`` package, such as a checkout of a
  Thunder branch or ``pip install --no-deps --target DIR lightning-thunder==0.2.5``.
- ``NAME=PYTHON``: another interpreter, with its own Thunder (and torch); fuzzdce comes from here.

The child runs the job under its Thunder and sends back the outcome with its tensors, so outputs,
gradients and mutated inputs are compared with eager's and stock's here, bit for bit as for any
placement. Only the oracles that read trace objects (``Oracle.reads_traces``) run in the child,
where the traces are; their violations come back with the outcome, the traces as text.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import select
import struct
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fuzzdce
from fuzzdce.errors import HARNESS, UsageError
from fuzzdce.model import Build, JobFailure, Outcome, Placement, Violation
from fuzzdce.workers import DEFAULT_MEMORY_LIMIT_MB, STARTUP_SECONDS, describe_exit

# The child enforces a job's time limit itself (SIGALRM); this much longer, the parent kills it.
GRACE_SECONDS = 15.0
FUZZDCE_ROOT = str(Path(fuzzdce.__file__).resolve().parent.parent)
HEADER = struct.Struct("!Q")  # a frame: its length, then that many bytes of pickle
DOCTOR = "doctor"  # the request for the build's ``fuzzdce doctor`` text


def is_build_spec(name: str) -> bool:
    return "=" in name


def parse_build(spec: str) -> tuple[str, Build]:
    """``NAME=DIR`` or ``NAME=PYTHON`` -> (NAME, Build); UsageError saying what to give instead."""
    name, _, target = spec.partition("=")
    if not name or not target or ":" in name:
        raise UsageError(f"build {spec!r}: give NAME=DIR (a directory holding a thunder package) or NAME=PYTHON")
    where = Path(target).expanduser().absolute()  # not resolved: a venv's python is a symlink to its base
    if where.is_dir():
        if not (where / "thunder" / "__init__.py").is_file():
            raise UsageError(
                f"build {name!r}: {where} holds no thunder/__init__.py; give a lightning-thunder checkout or "
                f"a directory made by `pip install --no-deps --target DIR lightning-thunder==VERSION`"
            )
        return name, Build(sys.executable, (str(where),), target)
    if where.is_file() and os.access(where, os.X_OK):
        return name, Build(str(where), (), target)
    raise UsageError(f"build {name!r}: {target} is neither a directory nor an executable Python")


@contextlib.contextmanager
def runs_in_its_own_process(name: str) -> Iterator[None]:
    """A build's context manager: its Thunder is the child's own, so there is nothing to patch there;
    applied in a process holding another Thunder, it refuses."""
    raise UsageError(f"placement {name!r} is another Thunder build: its jobs run through fuzzdce.evaluate's LocalJobs")
    yield  # pragma: no cover


# Every build resolved in this process, NAME -> NAME=TARGET: a finding names its placements only, and
# its reproducer and finding.json must say how to select the build again.
BUILD_SPECS: dict[str, str] = {}


def build_placement(spec: str) -> Placement:
    """The placement of build ``spec`` (``NAME=DIR`` or ``NAME=PYTHON``), named NAME."""
    name, build = parse_build(spec)
    known = BUILD_SPECS.setdefault(name, spec)
    if parse_build(known)[1] != build:
        raise UsageError(f"build {name!r} is already {known!r}; give the other build another name")
    factory = functools.partial(runs_in_its_own_process, name)
    return Placement(name, factory, f"Thunder build {build}", build=build)


def build_specs(names) -> dict[str, str]:
    """NAME -> NAME=TARGET for the names among ``names`` that are builds."""
    return {name: BUILD_SPECS[name] for name in names if name in BUILD_SPECS}


def child_environment(build: Build) -> dict[str, str]:
    """The child's environment: the build's directories first on its path, then this fuzzdce."""
    entries = [*build.path, FUZZDCE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(entries)}


# --- the parent's side -------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildRequest:
    """One job for a build's child: ``program`` on ``path``, the outcome named ``placement``;
    ``reference`` is eager's outcome (without tensors), which the trace oracles are handed."""

    program: Any
    path: str
    placement: str
    timeout: float | None
    reference: Outcome


@dataclass
class BuildResult:
    """The child's answer: the outcome (tensors kept, traces as text, splits as ``SplitRecord``) and
    the violations of the oracles that read traces."""

    outcome: Outcome
    trace_violations: list[Violation] = field(default_factory=list)


class BuildWorker:
    """One child process running ``fuzzdce.buildworker`` for one build, kept across jobs and
    replaced after a job that hung or killed it (that job's outcome then carries the failure)."""

    def __init__(self, build: Build, *, memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB) -> None:
        self.build = build
        self.memory_limit_mb = memory_limit_mb
        self.process: subprocess.Popen | None = None

    def _start(self) -> None:
        # -P: the working directory does not go first on the path; the build's directories do.
        command = [self.build.python, "-P", "-m", "fuzzdce.buildworker", str(self.memory_limit_mb or 0)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_environment(self.build)
        )

    def run(self, request: BuildRequest) -> BuildResult:
        allowance = 0.0
        if self.process is None or self.process.poll() is not None:
            self.close()
            self._start()
            allowance = STARTUP_SECONDS
        limit = None if request.timeout is None else request.timeout + GRACE_SECONDS + allowance
        try:
            write_frame(self.process.stdin, request)
            ready, _, _ = select.select([self.process.stdout], [], [], limit)
            if not ready:
                return self._failed(request, JobFailure("timeout", f"no result within {request.timeout:g} s"))
            status, value = read_frame(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError, pickle.UnpicklingError):
            self.process.wait(timeout=10)
            return self._failed(request, JobFailure("crash", describe_exit(self.process.returncode)))
        if status in ("crash", HARNESS):
            return self._failed(request, JobFailure(status, value))
        return value

    def _failed(self, request: BuildRequest, failure: JobFailure) -> BuildResult:
        """Drop the child; the job's outcome is the failure, which the timeout and crash oracles report."""
        self.close()
        return BuildResult(Outcome(request.path, request.placement, failure=failure))

    def doctor(self) -> str:
        """The build's ``fuzzdce doctor`` text: its Python, torch, Thunder and placements."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        try:
            write_frame(self.process.stdin, DOCTOR)
            status, value = read_frame(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError) as e:
            raise UsageError(f"build {self.build}: its worker did not start ({type(e).__name__}: {e}); see stderr above") from None
        if status != "ok":
            raise UsageError(f"build {self.build}: its worker failed:\n{value}")
        return value

    def close(self) -> None:
        if self.process is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(timeout=10)
            self.process.stdout.close()
        self.process = None


def write_frame(stream, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream) -> Any:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the build's worker closed its output")
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the build's worker stopped mid-answer")
    return pickle.loads(data)

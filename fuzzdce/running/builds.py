"""Another Thunder build as a placement: ``NAME=DIR`` or ``NAME=PYTHON``.

A build is compared with the campaign's reference Thunder exactly as a patch placement is: same
jobs, same oracles, same triage (against stock, "only under NAME" is a regression, "under both"
shared, "only under stock" fixed; with ``--against REF`` the build is the reference and stock, the
Thunder fuzzdce runs under, is under test), reproducers that select it. Two Thunders cannot share a process, so a
build's jobs run in a child process of its own (``fuzzdce.running.buildworker``):

- ``NAME=DIR``: this Python, with DIR put first on ``sys.path`` (before fuzzdce, hence before
  anything imports thunder): a directory holding a ``thunder`` package, such as a checkout of a
  Thunder branch or ``pip install --no-deps --target DIR lightning-thunder==0.2.5``.
- ``NAME=PYTHON``: another interpreter, with its own Thunder (and torch); fuzzdce comes from here.
- ``NAME=git:REPO_DIR@REF``: the ``thunder/`` package of REF (branch, tag, commit) in the git
  checkout REPO_DIR, extracted once with ``git archive`` (no network) into a cache keyed by the
  commit (``cache_root()``), then a directory build; the build names the commit, not the ref.
  ``fuzzdce run --against REF`` is that build for the checkout of the Thunder imported here.
- ``NAME=ARCHIVE`` (``.tar.gz``, ``.tgz``, ``.tar``): a tarball holding ``thunder/`` at its top or one
  folder down (``thunder-<commit>.tar.gz``), extracted once into the cache keyed by its content.

The child runs the job under its Thunder and sends back the outcome with its tensors, so outputs,
gradients and mutated inputs are compared with eager's and stock's here, bit for bit as for any
placement, and its traces in their portable form (``portable_trace.portable_trace``: bound symbols'
names, arguments, outputs, keep-tags and subsymbols, and the printed text), so DCE activity and
``dce-sound`` align the build's traces with stock's here exactly as for a patch placement. Only the
oracles that read Thunder trace objects (``Oracle.reads_traces``: ``names``, ``idempotent``) run in
the child, where those objects are; their violations come back with the outcome.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fuzzdce
from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import STOCK, Build, FailureKind, JobFailure, Outcome, Placement, Violation
from fuzzdce.running.workers import (
    DEFAULT_MEMORY_LIMIT_MB,
    DEFAULT_RECYCLE_JOBS,
    DEFAULT_RECYCLE_RSS_MB,
    GRACE_SECONDS,
    ChildWorker,
    CommandChild,
    may_use_cuda,
    memory_limits,
)

FUZZDCE_ROOT = str(Path(fuzzdce.__file__).resolve().parent.parent)
DOCTOR = "doctor"  # the request for the build's ``fuzzdce doctor`` text


def is_build_spec(name: str) -> bool:
    return "=" in name


GIT_PREFIX = "git:"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")


def cache_root() -> Path:
    """Where git refs and archives are materialized: ``$FUZZDCE_BUILD_CACHE``, else ``~/.cache/fuzzdce/builds``."""
    return Path(os.environ.get("FUZZDCE_BUILD_CACHE") or Path.home() / ".cache" / "fuzzdce" / "builds")


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=300)
    except FileNotFoundError:
        raise UsageError("git is not installed here: give the build as a directory (NAME=DIR) instead") from None


def git_toplevel(directory: Path) -> Path | None:
    """The top of the git checkout holding ``directory``, or None when it is in none."""
    if not directory.is_dir():
        return None
    found = _git(directory, "rev-parse", "--show-toplevel")
    return Path(found.stdout.decode().strip()) if found.returncode == 0 else None


def materialize_git(repo_text: str, ref: str) -> tuple[Path, str]:
    """The ``thunder/`` package of ``ref`` in git checkout ``repo_text``, extracted once (``git
    archive``, no network) into the cache keyed by its commit: (the directory holding it, the
    commit). UsageError, one line, for a directory that is no git checkout, an unknown ref, or a
    commit without ``thunder/__init__.py``."""
    repo = Path(repo_text).expanduser().absolute()
    if not repo.is_dir():
        raise UsageError(f"git build: {repo} is not a directory (give git:REPO_DIR@REF, REPO_DIR a Thunder git checkout)")
    if _git(repo, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"git build: {repo} is not a git checkout (give git:REPO_DIR@REF, REPO_DIR a Thunder git checkout)")
    found = _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if found.returncode != 0 or not ref:
        raise UsageError(f"git build: {repo} has no commit {ref!r} (a branch, tag or commit of that checkout; fetch it first)")
    commit = found.stdout.decode().strip()
    if _git(repo, "cat-file", "-e", f"{commit}:thunder/__init__.py").returncode != 0:
        raise UsageError(
            f"git build: {ref!r} ({commit[:12]}) of {repo} has no thunder/__init__.py (is it a lightning-thunder checkout?)"
        )
    target = cache_root() / f"git-{commit}"
    if not (target / "thunder" / "__init__.py").is_file():
        scratch = Path(tempfile.mkdtemp(prefix=f".git-{commit[:12]}-", dir=_made(cache_root())))
        archive = _git(repo, "archive", "--format=tar", commit, "thunder")
        if archive.returncode != 0:
            shutil.rmtree(scratch, ignore_errors=True)
            raise UsageError(f"git build: git archive of {commit[:12]} failed: {archive.stderr.decode().strip()[:200]}")
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(scratch, filter="data")
        _publish(scratch, target)
    record_origin(target, f"git {commit[:12]}")
    return target, commit


def materialize_archive(archive: Path) -> Path:
    """The ``thunder/`` package in a tar archive (at its top or one folder down, as in
    ``thunder-<commit>.tar.gz``), extracted once into the cache keyed by the archive's content.
    ``git archive`` writes the commit into the tarball's header (``comment``), which the extraction
    keeps as its origin."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:20]
    target = cache_root() / f"archive-{digest}"
    if not (target / "thunder" / "__init__.py").is_file():
        scratch = Path(tempfile.mkdtemp(prefix=f".archive-{digest}-", dir=_made(cache_root())))
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(scratch, filter="data")
        except (tarfile.TarError, OSError) as e:
            shutil.rmtree(scratch, ignore_errors=True)
            raise UsageError(f"build archive {archive}: cannot be read ({type(e).__name__}: {e})") from None
        tops = [p for p in scratch.iterdir() if (p / "thunder" / "__init__.py").is_file()]
        if not (scratch / "thunder" / "__init__.py").is_file():
            if len(tops) != 1:
                shutil.rmtree(scratch, ignore_errors=True)
                raise UsageError(f"build archive {archive}: holds no thunder/__init__.py (at its top or one folder down)")
            for entry in tops[0].iterdir():
                entry.rename(scratch / entry.name)
        _publish(scratch, target)
    record_origin(target, archive_origin(archive))
    return target


def archive_origin(archive: Path) -> str:
    """``git COMMIT (archive NAME)`` when the tarball's header names the commit, else empty."""
    with contextlib.suppress(tarfile.TarError, OSError), tarfile.open(archive) as tar:
        commit = tar.pax_headers.get("comment", "")
        if re.fullmatch(r"[0-9a-f]{40}", commit):
            return f"git {commit[:12]} (archive {archive.name})"
    return ""


# A materialized Thunder's origin (``git COMMIT``), kept beside its ``thunder/`` package: a directory
# extracted from a commit or an archive is no git checkout, and its commit is what a report must name.
ORIGIN_FILE = ".fuzzdce-origin"


def record_origin(target: Path, origin: str) -> None:
    """Keep ``origin`` beside the extraction at ``target`` (written once, by whichever process is first)."""
    if not origin:
        return
    with contextlib.suppress(OSError):
        if origin_of(target) != origin:
            (target / ORIGIN_FILE).write_text(origin + "\n")


def origin_of(directory: Path) -> str:
    """The origin recorded beside a materialized Thunder (``git COMMIT (archive NAME)``), else empty."""
    try:
        return (directory / ORIGIN_FILE).read_text().strip()
    except OSError:
        return ""


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def _publish(scratch: Path, target: Path) -> None:
    """Move a finished extraction into place atomically; another process may have been first."""
    try:
        os.rename(scratch, target)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)
        if not (target / "thunder" / "__init__.py").is_file():
            raise UsageError(f"build cache {target} exists but holds no thunder package; remove it") from None


def thunder_version(directory: Path) -> str:
    """The ``__version__`` that the ``thunder`` package in ``directory`` declares, read, not imported."""
    for name in ("__about__.py", "__init__.py"):
        try:
            found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)", (directory / "thunder" / name).read_text(), re.M)
        except OSError:
            continue
        if found:
            return found.group(1)
    return "version unknown"


def git_commit_of(directory: Path) -> str:
    """``git COMMIT (BRANCH)`` when ``directory`` is the top of a git checkout, with the commit's
    state of its work tree (``+ changes``), else empty."""
    if git_toplevel(directory) != directory.resolve():
        return ""
    head = _git(directory, "rev-parse", "HEAD")
    if head.returncode != 0:
        return ""
    branch = _git(directory, "rev-parse", "--abbrev-ref", "HEAD").stdout.decode().strip()
    dirty = _git(directory, "status", "--porcelain", "--untracked-files=no", "--", "thunder").stdout.strip()
    named = f" ({branch})" if branch and branch != "HEAD" else ""
    return f"git {head.stdout.decode().strip()[:12]}{named}{' + uncommitted changes' if dirty else ''}"


def describe_thunder(placement: Placement) -> str:
    """Which Thunder ``placement`` runs, in one line: version, path, commit, and how it is chosen."""
    if placement.build is not None:
        build = placement.build
        if not build.path:
            return f"the thunder of {build.python} (build {placement.name}={build})"
        directory = Path(build.path[0])
        origin = git_commit_of(directory) or origin_of(directory)
        return f"thunder {thunder_version(directory)} at {directory / 'thunder'}{', ' + origin if origin else ''} (build {placement.name}={build})"
    import thunder  # this process's Thunder: importing it is what a campaign does anyway

    directory = Path(thunder.__file__).resolve().parent.parent
    commit = git_commit_of(directory) or origin_of(directory)
    here = f"thunder {thunder_version(directory)} at {directory / 'thunder'}{', ' + commit if commit else ''}"
    return here if placement.is_stock else f"{here}, patched by placement {placement.name}"


def against_spec(ref: str, thunder_dir: str | None = None) -> str:
    """``fuzzdce run --against REF``: the build NAME=git:CHECKOUT@REF, CHECKOUT the git checkout of
    the Thunder this process imports (the user's branch), NAME the ref (or ``against``)."""
    if thunder_dir is None:
        import thunder  # the reference Thunder of this process: importing it is what a campaign does anyway

        thunder_dir = str(Path(thunder.__file__).resolve().parent)
    checkout = git_toplevel(Path(thunder_dir).parent)
    if checkout is None:
        raise UsageError(
            f"--against {ref}: the Thunder imported here ({thunder_dir}) is not in a git checkout; "
            f"give --build NAME=git:REPO_DIR@REF instead"
        )
    return f"{against_name(ref)}={GIT_PREFIX}{checkout}@{ref}"


def against_name(ref: str) -> str:
    """The placement name of ``--against REF``: the ref, as a folder may be named (or ``against``)."""
    name = ref.replace("/", "-")  # origin/main -> origin-main: a placement name is also a folder's
    return name if re.fullmatch(r"[\w.\-]+", name) and name != STOCK else "against"


def parse_build(spec: str) -> tuple[str, Build]:
    """``NAME=DIR``, ``NAME=PYTHON``, ``NAME=git:REPO_DIR@REF`` or ``NAME=ARCHIVE`` -> (NAME, Build);
    UsageError saying what to give instead. A git ref's build names its commit (``spec``)."""
    name, _, target = spec.partition("=")
    if not name or not target or ":" in name:
        raise UsageError(
            f"build {spec!r}: give NAME=DIR (a directory holding a thunder package), NAME=PYTHON, "
            f"NAME=git:REPO_DIR@REF or NAME=ARCHIVE.tar.gz"
        )
    if target.startswith(GIT_PREFIX):
        repo, at, ref = target[len(GIT_PREFIX) :].rpartition("@")
        if not at or not repo or not ref:
            raise UsageError(f"build {name!r}: give git:REPO_DIR@REF (a Thunder git checkout and a branch, tag or commit)")
        directory, commit = materialize_git(repo, ref)
        return name, Build(sys.executable, (str(directory),), f"{GIT_PREFIX}{Path(repo).expanduser().absolute()}@{commit}")
    where = Path(target).expanduser().absolute()  # not resolved: a venv's python is a symlink to its base
    if where.is_file() and where.name.endswith(ARCHIVE_SUFFIXES):
        return name, Build(sys.executable, (str(materialize_archive(where)),), str(where))
    if where.is_dir():
        if not (where / "thunder" / "__init__.py").is_file():
            raise UsageError(
                f"build {name!r}: {where} holds no thunder/__init__.py; give a lightning-thunder checkout or "
                f"a directory made by `pip install --no-deps --target DIR lightning-thunder==VERSION`"
            )
        return name, Build(sys.executable, (str(where),), target)
    if where.is_file() and os.access(where, os.X_OK):
        return name, Build(str(where), (), target)
    raise UsageError(f"build {name!r}: {target} is neither a directory, an executable Python, a tar archive nor git:REPO_DIR@REF")


@contextlib.contextmanager
def runs_in_its_own_process(name: str) -> Iterator[None]:
    """A build's context manager: its Thunder is the child's own, so there is nothing to patch there;
    applied in a process holding another Thunder, it refuses."""
    raise UsageError(f"placement {name!r} is another Thunder build: its jobs run through fuzzdce.running.evaluate's LocalJobs")
    yield  # pragma: no cover


def build_placement(spec: str) -> Placement:
    """The placement of build ``spec`` (``NAME=DIR`` or ``NAME=PYTHON``), named NAME."""
    name, build = parse_build(spec)
    factory = functools.partial(runs_in_its_own_process, name)
    return Placement(name, factory, f"Thunder build {build}", build=build)


def build_spec(placement: Placement) -> str:
    """NAME=TARGET selecting the build of ``placement`` again (a git ref's build by its commit, not
    a ref that moves, so that a reproducer selects the same code)."""
    return f"{placement.name}={placement.build.spec}"


def build_specs(placements: Iterable[Placement]) -> dict[str, str]:
    """NAME -> NAME=TARGET for the placements that are builds: a finding names its placements only,
    and its reproducer and bug.json must say how to select each build again. UsageError for two
    different builds under one name."""
    specs: dict[str, str] = {}
    builds: dict[str, Build] = {}
    for placement in placements:
        if placement.build is None:
            continue
        known = builds.setdefault(placement.name, placement.build)
        if known != placement.build:
            raise UsageError(f"build {placement.name!r} is already {specs[placement.name]!r}; give the other build another name")
        specs[placement.name] = build_spec(placement)
    return specs


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
    """One child process running ``fuzzdce.running.buildworker`` for one build, kept across jobs, replaced
    after a job that hung or killed it (that job's outcome then carries the failure) and recycled
    like a sandbox's child (``workers.ChildWorker``: after ``recycle_jobs`` jobs or past
    ``recycle_rss_mb`` resident MB, between jobs)."""

    def __init__(
        self,
        build: Build,
        *,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        recycle_jobs: int | None = DEFAULT_RECYCLE_JOBS,
        recycle_rss_mb: int | None = DEFAULT_RECYCLE_RSS_MB,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.build = build
        # Of address space, or of resident size where the child may use CUDA (``workers.memory_limits``).
        self.memory_limit_mb, resident_limit_mb = memory_limits(memory_limit_mb, may_use_cuda())
        self.worker = ChildWorker(
            self._start,
            recycle_jobs=recycle_jobs,
            recycle_rss_mb=recycle_rss_mb,
            name=f"build {build} worker",
            log=log,
            resident_limit_mb=resident_limit_mb,
        )

    def _start(self) -> CommandChild:
        # -P: the working directory does not go first on the path; the build's directories do.
        command = [self.build.python, "-P", "-m", "fuzzdce.running.buildworker", str(self.memory_limit_mb or 0)]
        return CommandChild(command, child_environment(self.build))

    def run(self, request: BuildRequest) -> BuildResult:
        """The request's outcome under the build; a job that hung or killed the child comes back as
        an outcome carrying the failure, which the timeout and crash oracles report."""
        result = self.worker.submit(request, request.timeout, grace=GRACE_SECONDS)
        if isinstance(result, JobFailure):
            return BuildResult(Outcome(request.path, request.placement, failure=result))
        return result

    def doctor(self) -> str:
        """The build's ``fuzzdce doctor`` text: its Python, torch, Thunder and placements."""
        result = self.worker.submit(DOCTOR, None)
        if isinstance(result, JobFailure) and result.kind == FailureKind.CRASH:
            raise UsageError(f"build {self.build}: its worker did not start ({result.message}); see stderr above")
        if isinstance(result, JobFailure):
            raise UsageError(f"build {self.build}: its worker failed:\n{result.message}")
        return result

    @property
    def recycled(self) -> int:
        return self.worker.recycled

    def close(self) -> None:
        self.worker.close()

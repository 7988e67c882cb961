"""Which shard of a campaign this machine runs: ``--shard I/N``, or what a batch scheduler's array
job says in the environment.

Shards are 0-based: shard ``I`` of ``N`` with ``0 <= I < N``. An explicit ``--shard`` wins over the
environment; among the environment's schemes the first in ``SCHEDULERS`` that is set is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fuzzdce.core.errors import UsageError

SHARD_ENV = "FUZZDCE_SHARD"  # generic: "I/N"
SHARD_COUNT_ENV = "FUZZDCE_SHARD_COUNT"  # N, for schedulers that export only the index


@dataclass(frozen=True)
class Scheduler:
    """Where one scheduler's array jobs say which task this is (``index``), how many there are
    (``count``; None when it does not say), and the first index (``first``; None: 0)."""

    name: str
    index: str
    count: str | None
    first: str | None = None


SCHEDULERS = (
    # Slurm array jobs (sbatch --array=0-3, or --array=1-4: indices are offset by the minimum).
    Scheduler("Slurm", index="SLURM_ARRAY_TASK_ID", count="SLURM_ARRAY_TASK_COUNT", first="SLURM_ARRAY_TASK_MIN"),
    # Kubernetes indexed Jobs export the index only: the count comes from --shard-count or FUZZDCE_SHARD_COUNT.
    Scheduler("Kubernetes indexed Job", index="JOB_COMPLETION_INDEX", count=None),
    Scheduler("AWS Batch array job", index="AWS_BATCH_JOB_ARRAY_INDEX", count="AWS_BATCH_JOB_ARRAY_SIZE"),
)

ENVIRONMENT_HELP = (
    f"{SHARD_ENV}=I/N; Slurm array jobs (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, offset by SLURM_ARRAY_TASK_MIN); "
    f"Kubernetes indexed Jobs (JOB_COMPLETION_INDEX, with N from --shard-count or {SHARD_COUNT_ENV}); "
    "AWS Batch array jobs (AWS_BATCH_JOB_ARRAY_INDEX, AWS_BATCH_JOB_ARRAY_SIZE); in GitHub Actions pass "
    "--shard ${{ strategy.job-index }}/${{ strategy.job-total }}"
)


def parse(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N); UsageError unless ``0 <= I < N``."""
    index, slash, count = text.strip().partition("/")
    try:
        shard, shards = int(index), int(count)
    except ValueError:
        shard, shards = -1, 0
    if not slash or not 0 <= shard < shards:
        raise UsageError(f"--shard expects I/N with 0 <= I < N, got {text!r} (shard 0 of 4 is 0/4)")
    return shard, shards


def _number(environ: Mapping[str, str], name: str) -> int:
    try:
        return int(environ[name])
    except ValueError:
        raise UsageError(f"${name} should be an integer, got {environ[name]!r}") from None


def _from_scheduler(scheduler: Scheduler, environ: Mapping[str, str], count: int | None) -> tuple[int, int]:
    index = _number(environ, scheduler.index)
    if scheduler.first and scheduler.first in environ:
        index -= _number(environ, scheduler.first)
    if count is None and scheduler.count and scheduler.count in environ:
        count = _number(environ, scheduler.count)
    if count is None:
        raise UsageError(
            f"{scheduler.name}: ${scheduler.index} is set but not how many shards there are: "
            f"pass --shard-count N or set {SHARD_COUNT_ENV}=N"
        )
    return parse(f"{index}/{count}")


def resolve(flag: str | None, count: int | None, environ: Mapping[str, str]) -> tuple[int, int] | None:
    """(I, N) from ``--shard`` (``flag``), else from the environment; None when neither says.

    ``count`` is ``--shard-count``; without it ``FUZZDCE_SHARD_COUNT`` stands in, for schedulers
    that export only the index.
    """
    if flag is not None:
        return parse(flag)
    if environ.get(SHARD_ENV):
        return parse(environ[SHARD_ENV])
    known_count = count
    if known_count is None and environ.get(SHARD_COUNT_ENV):
        known_count = _number(environ, SHARD_COUNT_ENV)
    for scheduler in SCHEDULERS:
        if environ.get(scheduler.index):
            return _from_scheduler(scheduler, environ, known_count)
    if count is not None:
        raise UsageError(f"--shard-count {count} without a shard index: pass --shard I/N, or run as an array job")
    return None

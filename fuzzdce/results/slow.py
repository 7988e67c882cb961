"""Slow programs: generated programs that ran past their limit (``fuzzing.program_cost``).

A program's limit bounds what one program may cost a lane; past it, its remaining (placement, path)
jobs are not run and what ran is judged as usual. Being slow is no finding about Thunder (a job that
ran past its own time limit is, the ``timeout`` oracle's); it is recorded so that a person can see
what made the program slow and run it again. In the findings folder::

    slow/<id>/slow.json      ``SlowProgram``: the program's source and inputs, the seconds of each
                             (placement, path) job, the longest, the limit, the jobs not run
    slow/<id>/program.py     the program and its inputs; ``python program.py`` runs each job again, timed

summary.json lists them (``slow_programs``), and the report has a "slow programs" section.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fuzzdce.core.model import EAGER, STOCK
from fuzzdce.running.path_running import run_path
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS, resolve
from fuzzdce.running.script_program import ScriptProgram

SLOW_DIR = "slow"  # under the findings folder: one folder per slow program
SLOW_FILE = "slow.json"
PROGRAM_FILE = "program.py"


@dataclass(frozen=True)
class SlowProgram:
    """One program past its limit: what it is, what each of its jobs cost, and what did not run.

    ``jobs``: {"placement", "path", "seconds", "timed_out"} per (placement, path) that ran, eager's
    as path "eager" (a job's localising runs counted in its own); ``not_run``: the (placement,
    path) jobs left when it stopped, as "placement on path"; ``timed_out``: some job ran past its
    own time limit (that job's ``timeout`` finding is Thunder's; the slowness alone is not)."""

    id: str
    source: str
    inputs_source: str
    n_ops: int
    inputs: tuple[str, ...]  # each input's dtype and shape (or value)
    seconds: float  # the program's whole evaluation
    limit: float  # what it was allowed (``program_cost.ProgramCost.limit``)
    jobs: tuple[dict[str, Any], ...]
    not_run: tuple[str, ...] = ()
    placements: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    first_seen_seconds: float | None = None  # from the campaign's start
    process: str = ""  # which process met it ("driver", "lane 1")
    number: int = 0  # which of that process's programs it was (1: its first)

    @property
    def longest(self) -> dict[str, Any] | None:
        """The job that ran longest."""
        return max(self.jobs, key=lambda j: j["seconds"], default=None)

    @property
    def timed_out(self) -> bool:
        return any(j["timed_out"] for j in self.jobs)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["longest"] = self.longest
        data["timed_out"] = self.timed_out
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SlowProgram:
        names = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in names}
        for name in ("inputs", "jobs", "not_run", "placements", "paths"):
            values[name] = tuple(values.get(name) or ())
        return cls(**values)


def input_text(spec) -> str:
    shape = getattr(spec, "shape", None)
    return f"{spec.dtype}{list(shape)}" if shape is not None else repr(getattr(spec, "value", spec))


def slow_program(
    program,
    job_times: Iterable,
    *,
    seconds: float,
    limit: float,
    placements: Sequence[str],
    paths: Sequence[str],
    first_seen_seconds: float | None = None,
    process: str = "",
    number: int = 0,
) -> SlowProgram:
    """The record of ``program`` (a ``core.program.Program``), its jobs as an ``Evaluator`` timed
    them (``evaluate.JobTime``, summed per placement and path), evaluated under ``placements`` on
    ``paths`` within ``limit`` seconds."""
    per_job: dict[tuple[str, str], dict[str, Any]] = {}
    for t in job_times:
        entry = per_job.setdefault(
            (t.placement, t.path), {"placement": t.placement, "path": t.path, "seconds": 0.0, "timed_out": False}
        )
        entry["seconds"] = round(entry["seconds"] + t.seconds, 3)
        entry["timed_out"] = entry["timed_out"] or t.timed_out
    ran = set(per_job)
    not_run = tuple(f"{p} on {path}" for path in paths for p in placements if (p, path) not in ran)
    source, inputs = program.source(), program.inputs_source()
    return SlowProgram(
        id=hashlib.sha1(f"{source}\n{inputs}".encode()).hexdigest()[:12],
        source=source,
        inputs_source=inputs,
        n_ops=program.n_ops,
        inputs=tuple(input_text(s) for s in program.inputs),
        seconds=round(seconds, 3),
        limit=round(limit, 3),
        jobs=tuple(per_job.values()),
        not_run=not_run,
        placements=tuple(placements),
        paths=tuple(paths),
        first_seen_seconds=None if first_seen_seconds is None else round(first_seen_seconds, 3),
        process=process,
        number=number,
    )


PROGRAM_MAIN = """

if __name__ == "__main__":
    from fuzzdce.results.slow import time_jobs

    raise SystemExit(time_jobs(program, make_inputs, PLACEMENTS, PATHS, __file__))
"""


def program_script(record: SlowProgram) -> str:
    """``program.py``: the program and its inputs, and a main that runs each of its jobs again, timed."""
    header = (
        f'"""fuzzdce slow program {record.id}: {record.n_ops} ops, {record.seconds:.1f} s against a limit of '
        f"{record.limit:.1f} s.\n\n"
        "Run it again (needs fuzzdce installed): python program.py -- each (placement, path) job in turn,\n"
        "in this process, with its seconds.\n"
        '"""\n\n'
        "import torch\n\n"
        f"PLACEMENTS = {list(record.placements)!r}\nPATHS = {list(record.paths)!r}\n\n\n"
    )
    return header + f"{record.source}\n\n{record.inputs_source}" + PROGRAM_MAIN


def time_jobs(fn: Callable, make_inputs: Callable, placements: Sequence[str], paths: Sequence[str], script: str) -> int:
    """A slow program's main: eager, then each path under each placement, each timed and printed; 0."""
    program = ScriptProgram(fn, make_inputs, str(Path(script).resolve()))
    jobs = [(STOCK, EAGER)] + [(p, path) for path in paths if path in PATHS for p in placements]
    for name, path in jobs:
        placement = PLACEMENTS[STOCK] if path == EAGER else resolve(name)
        start = time.perf_counter()
        outcome = run_path(path, program, placement)
        seconds = time.perf_counter() - start
        failed = outcome.failure.kind if outcome.failure is not None else (outcome.error.type if outcome.error else "")
        print(f"{seconds:8.2f} s  {name} on {path}" + (f" ({failed})" if failed else ""), flush=True)
    return 0


def slow_lines(records: Iterable[Mapping[str, Any]], folder: Path | None) -> list[str]:
    """The report's "slow programs" section (empty when there are none): each program, its limit,
    its longest job and each job's seconds, and the command that runs it again."""
    records = [SlowProgram.from_json(r) for r in records]
    if not records:
        return []
    lines = [
        f"== slow programs (past their limit, their remaining jobs not run; no bug unless a job timed out): {len(records)} ==",
    ]
    for r in sorted(records, key=lambda r: -r.seconds):
        longest = r.longest
        stopped = f", {len(r.not_run)} jobs not run" if r.not_run else ""
        timed_out = "; a job ran past its own time limit (its timeout finding is listed with the bugs)" if r.timed_out else ""
        lines.append(
            f"--- slow program {r.id}: {r.n_ops} ops, {r.seconds:.1f} s against a limit of {r.limit:.1f} s{stopped}{timed_out}"
        )
        if longest is not None:
            lines.append(f"    longest: {longest['placement']} on {longest['path']}, {longest['seconds']:.1f} s")
        jobs = ", ".join(f"{j['placement']} on {j['path']} {j['seconds']:.1f}" for j in r.jobs)
        lines.append(f"    jobs (s): {jobs}")
        lines.append(f"    inputs: {', '.join(r.inputs)}")
        if folder is not None:
            lines.append(f"    rerun: python {folder / SLOW_DIR / r.id / PROGRAM_FILE}")
    lines.append("")
    return lines


@dataclass
class SlowPrograms:
    """A campaign's slow programs, each once (by id), in the order met."""

    records: list[SlowProgram] = field(default_factory=list)

    def add(self, record: SlowProgram) -> bool:
        if any(r.id == record.id for r in self.records):
            return False
        self.records.append(record)
        return True

    def merge(self, other: SlowPrograms) -> None:
        for record in other.records:
            self.add(record)

    def summary(self) -> tuple[dict[str, Any], ...]:
        return tuple(r.to_json() for r in self.records)

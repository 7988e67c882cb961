"""Resident memory of a campaign's processes, read from outside the work: the driver, each lane, each
lane's worker (across the successive children a recycled worker runs).

Long campaigns grow (Thunder's and torch's caches, Hypothesis's state), so workers are recycled
past a job count or a resident size (``workers.Worker``); summary.json records each process's
resident size at its start and end and its peak, and how many workers and lanes were recycled:
``{"memory": {"processes": [{"process", "start_rss_mb", "end_rss_mb", "peak_rss_mb"}, ...],
"recycled": {"workers": N, "lanes": N}}}``; a worker's entry also has ``jobs`` (jobs it ran), so
growth can be read per job.
"""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass, field
from typing import Any

PROC_STATUS = "/proc/{pid}/status"


def resident_mb(pid: int | None = None) -> tuple[float, float] | None:
    """(resident MB now, peak resident MB) of process ``pid`` (default: this one), from
    /proc/PID/status (VmRSS, VmHWM); None where there is no /proc or the process is gone."""
    try:
        with open(PROC_STATUS.format(pid=pid or os.getpid())) as status:
            fields = dict(line.split(":", 1) for line in status if line.startswith(("VmRSS", "VmHWM")))
        return kib_to_mb(fields["VmRSS"]), kib_to_mb(fields["VmHWM"])
    except (OSError, KeyError, ValueError):
        return None


def kib_to_mb(text: str) -> float:
    """'  123456 kB' -> MB."""
    return int(text.split()[0]) / 1024


def own_peak_mb() -> float:
    """This process's peak resident MB from getrusage: works where /proc does not (macOS counts bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def own_resident_mb() -> tuple[float, float]:
    """(resident MB now, peak resident MB) of this process; where /proc is missing, the peak for both."""
    read = resident_mb()
    if read is not None:
        return read
    peak = own_peak_mb()
    return peak, peak


@dataclass
class ProcessMemory:
    """One process's resident size (MB) at its first and last reading, and its peak. For a worker,
    the process is the worker, across its successive children: the start is its first child's,
    the end its last child's, the peak the largest of any."""

    process: str
    start_rss_mb: float | None = None
    end_rss_mb: float | None = None
    peak_rss_mb: float = 0.0
    jobs: int | None = None  # a worker's: jobs completed, across its children

    def observe(self, rss_mb: float, peak_mb: float | None = None) -> None:
        """Record a reading: resident MB now and, when known, the process's peak so far."""
        if self.start_rss_mb is None:
            self.start_rss_mb = rss_mb
        self.end_rss_mb = rss_mb
        self.peak_rss_mb = max(self.peak_rss_mb, rss_mb, peak_mb or 0.0)

    def observe_self(self) -> None:
        self.observe(*own_resident_mb())

    def absorb(self, later: ProcessMemory) -> None:
        """Fold in a later run of the same process (a restarted lane): its end and peak."""
        if later.start_rss_mb is None:
            return
        if self.start_rss_mb is None:
            self.start_rss_mb = later.start_rss_mb
        self.end_rss_mb = later.end_rss_mb
        self.peak_rss_mb = max(self.peak_rss_mb, later.peak_rss_mb)
        if later.jobs is not None:
            self.jobs = (self.jobs or 0) + later.jobs

    def entry(self) -> dict[str, Any]:
        rounded = {k: None if v is None else round(v, 1) for k, v in (("start", self.start_rss_mb), ("end", self.end_rss_mb))}
        entry = {
            "process": self.process,
            "start_rss_mb": rounded["start"],
            "end_rss_mb": rounded["end"],
            "peak_rss_mb": round(self.peak_rss_mb, 1),
        }
        if self.jobs is not None:
            entry["jobs"] = self.jobs
        return entry


@dataclass
class CampaignMemory:
    """The processes of a campaign (merged lanes included), by name, and how many workers and lanes
    were recycled."""

    processes: dict[str, ProcessMemory] = field(default_factory=dict)
    recycled_workers: int = 0
    recycled_lanes: int = 0

    def add(self, memory: ProcessMemory) -> None:
        """Record a process; one already recorded under that name (an earlier run of a restarted
        lane, or of its worker) keeps its start and takes the later end and the larger peak."""
        known = self.processes.get(memory.process)
        if known is None:
            self.processes[memory.process] = ProcessMemory(**vars(memory))
        else:
            known.absorb(memory)

    def merge(self, other: CampaignMemory) -> None:
        for memory in other.processes.values():
            self.add(memory)
        self.recycled_workers += other.recycled_workers
        self.recycled_lanes += other.recycled_lanes

    def summary(self) -> dict[str, Any]:
        """summary.json's ``memory`` entry."""
        return {
            "processes": [m.entry() for m in self.processes.values()],
            "recycled": {"workers": self.recycled_workers, "lanes": self.recycled_lanes},
        }

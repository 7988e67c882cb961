"""Parallel campaigns: N lanes, each a process driving its own Hypothesis run and sandbox.

Lanes share the findings folder (each finding is written atomically as it appears) and the example
database, and draw from seeds ``seed, seed+1, ...``. When all lanes are done, their finding stores
are merged (counts add up, the smallest program wins), confirmed once, and written again.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fuzzdce.campaign import Campaign
from fuzzdce.placements import resolve


@dataclass
class LanePlan:
    """Everything a lane needs, as plain data (it crosses into a spawned process)."""

    placements: Sequence[str]
    paths: Sequence[str]
    max_examples: int
    seed: int
    timeout: float | None
    time_budget: float | None
    findings_dir: str | None
    known: dict[str, str] = field(default_factory=dict)
    profile: str | None = None
    database: str | None = None
    memory_limit_mb: int | None = None

    def campaign(self, lane: int, *, log=None, clear_findings: bool = False) -> Campaign:
        from fuzzdce import profiles

        profile = profiles.load(self.profile, self.database)
        prefix = f"[lane {lane}] "
        return Campaign(
            [resolve(name) for name in self.placements],
            paths=self.paths,
            max_examples=self.max_examples,
            seed=self.seed + lane,
            timeout=self.timeout,
            time_budget=self.time_budget,
            findings_dir=self.findings_dir,
            known=self.known,
            profile=profile,
            database=profile.database,
            sandbox=True,
            memory_limit_mb=self.memory_limit_mb,
            clear_findings=clear_findings,
            log=log or (lambda line: print(prefix + line, file=sys.stderr, flush=True)),
        )


def _lane_main(plan: LanePlan, lane: int, results) -> None:
    from fuzzdce.cli import quiet_library_warnings

    quiet_library_warnings()
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    campaign = plan.campaign(lane)
    campaign.confirm = lambda: None  # confirmation happens once, after the merge
    campaign.run()
    results.put((lane, campaign.store, campaign.stats, campaign.interrupted))


def raise_keyboard_interrupt(signum, frame) -> None:
    """SIGTERM handler: stop like Ctrl-C (cleanly, findings already on disk)."""
    raise KeyboardInterrupt


def run_lanes(plan: LanePlan, jobs: int, *, log=None) -> Campaign:
    """Run ``jobs`` lanes and return a campaign holding the merged results (confirmed and written)."""
    merged = plan.campaign(0, log=log, clear_findings=True)
    if merged.folder is not None:
        merged.folder.clear()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_lane_main, args=(plan, lane, results)) for lane in range(jobs)]
    for process in processes:
        process.start()
    collected: list[Any] = []
    try:
        while len(collected) < jobs and any(p.is_alive() for p in processes) or not results.empty():
            try:
                collected.append(results.get(timeout=1))
            except Exception:  # queue.Empty: keep waiting while lanes live
                continue
    except KeyboardInterrupt:
        merged.interrupted = True
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: the lane stops cleanly and reports
        while len(collected) < jobs and any(p.is_alive() for p in processes):
            try:
                collected.append(results.get(timeout=1))
            except Exception:
                continue
    for process in processes:
        process.join(timeout=30)
    for _, store, stats, interrupted in sorted(collected, key=lambda item: item[0]):
        merged.store.merge(store)
        merged.stats.merge(stats)
        merged.interrupted |= interrupted
    if len(collected) < jobs:
        merged.log(f"fuzzdce: {jobs - len(collected)} lane(s) ended without reporting; their findings are on disk")
    merged.finish()
    return merged

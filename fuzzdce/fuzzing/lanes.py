"""Parallel campaigns: N lanes, each a process driving its own Hypothesis run and sandbox.

Lanes share the findings folder (each finding is written atomically as it appears) and the example
database, and run ``config.lane(i)``: seeds ``seed, seed+1, ...``, and the parent's clock
(``budget.started_at``). When all lanes are done, their ledgers are merged into one campaign (counts add
up, the smallest program and earliest sighting win, timelines combine), confirmed once, and
written again.

A lane's process grows, so once it has grown ``config.workers.recycle_lane_growth_mb`` since it
started it stops after its current program and hands back its results as at the end. The parent
starts the lane again, in a fresh process with a seed of its own (``derive_seed(lane_seed,
"restart", k)``), what is left of the lane's programs and time budget, and the results its
predecessor handed back (``Campaign.carry_on``): the fresh process goes on as the same lane, so the
causes waiting to be shrunk are its own, its time plan counts them, and it shrinks them. (Left to
the merged campaign instead, they would wait unseen while every fresh process generated to the end
of generation's time.) The parent keeps a
predecessor's results until its successor hands back its own, which hold them; a successor that
dies without handing back leaves the parent its predecessor's.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuzzdce.core.errors import HarnessError, harness_message, unexpected_exception
from fuzzdce.core.findings import FindingStore
from fuzzdce.core.quiet import quiet_library_warnings
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.ledger import Log, Stats
from fuzzdce.fuzzing.shrinking import Shrinker
from fuzzdce.fuzzing.time_plan import CONFIRM_MOST, Phase, TimePlan
from fuzzdce.running.memory import CampaignMemory

# How long before the lanes' confirming reserve the merged campaign's worker is started: a child's
# imports of torch and Thunder take about 5 s beside two busy lanes on 2 cores.
WORKER_START_SECONDS = 10.0


def raise_keyboard_interrupt(signum, frame) -> None:
    """SIGTERM handler: stop like Ctrl-C (cleanly, findings already on disk)."""
    raise KeyboardInterrupt


@dataclass
class LaneResult:
    """What a lane's process hands back when it ends: its results, its processes' memory, and
    whether it was recycled (it stopped early; the lane goes on in a fresh process)."""

    lane: int
    store: FindingStore
    stats: Stats
    interrupted: bool
    memory: CampaignMemory
    recycled: bool
    programs_left: int
    shrinker: Shrinker | None = None  # its settled programs (the campaign it points to stays behind)


@dataclass
class HarnessStop:
    """A lane's word that it stopped on a harness error (``errors.HarnessError``'s line)."""

    lane: int
    message: str


def _lane_main(config: CampaignConfig, lane: int, results, predecessor: LaneResult | None = None) -> None:
    quiet_library_warnings()
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    prefix = f"[lane {lane}] "
    campaign = Campaign(
        config,
        log=lambda line: print(prefix + line, file=sys.stderr, flush=True),
        process=f"lane {lane}",
        recycle_growth_mb=config.workers.recycle_lane_growth_mb,
    )
    if predecessor is not None:
        campaign.carry_on(predecessor.store, predecessor.stats, predecessor.memory, predecessor.shrinker)
    try:
        campaign.run()
    except HarnessError as e:  # fuzzdce's own error: the parent stops every lane and says so
        results.put(HarnessStop(lane, str(e)))
        return
    except Exception as e:  # the same, escaped from outside the campaign's phases
        results.put(HarnessStop(lane, harness_message(f"lane {lane}", unexpected_exception(e))))
        return
    memory = campaign.memory()
    memory.recycled_lanes += int(campaign.recycled)
    left = campaign.max_examples - campaign.full_evaluations
    shrinker = campaign.shrinker
    shrinker.campaign = None  # only its state crosses to the parent
    results.put(LaneResult(lane, campaign.store, campaign.stats, campaign.interrupted, memory, campaign.recycled, left, shrinker))


class Lanes:
    """The lanes' processes: started, restarted when recycled, and their results collected."""

    def __init__(self, config: CampaignConfig, jobs: int) -> None:
        # The time plan counts from the campaign's start, which every lane process keeps.
        self.config = config if config.budget.started_at else config.replaced(started_at=time.time())
        self.context = multiprocessing.get_context("spawn")
        self.results = self.context.Queue()
        self.running: dict[int, Any] = {}  # lane -> its current process
        self.restarts: dict[int, int] = {lane: 0 for lane in range(jobs)}
        self.finished: list[LaneResult] = []
        self.handed_over: dict[int, LaneResult] = {}  # lane -> its recycled process's results, until its successor's
        self.lost = 0  # lane processes that ended without handing back their results (killed)
        self.jobs = jobs
        for lane in range(jobs):
            self.start(lane, self.config.lane(lane, jobs))

    def start(self, lane: int, config: CampaignConfig, predecessor: LaneResult | None = None) -> None:
        process = self.context.Process(target=_lane_main, args=(config, lane, self.results, predecessor))
        process.start()
        self.running[lane] = process

    def collect(self, *, restart: bool, ahead: Callable[[], None] | None = None, ahead_at: float | None = None) -> None:
        """Take results until every lane is done; restart recycled lanes when ``restart``; call
        ``ahead`` once, when ``time.time()`` passes ``ahead_at`` (None: never) if a lane still runs."""
        while self.running or not self.results.empty():
            if ahead is not None and ahead_at is not None and time.time() >= ahead_at and self.running:
                ahead()
                ahead = None
            try:
                result = self.results.get(timeout=1)
            except Exception:  # queue.Empty: see whether a lane died without handing back
                self.forget_dead()
                continue
            if isinstance(result, HarnessStop):
                self.running.pop(result.lane).join(timeout=30)
                self.terminate()
                raise HarnessError(result.message)
            self.running.pop(result.lane).join(timeout=30)
            self.handed_over.pop(result.lane, None)  # its successor's results hold its predecessors'
            if not (restart and result.recycled and self.restart(result)):
                self.finished.append(result)

    def restart(self, result: LaneResult) -> bool:
        """Start the lane again in a fresh process that goes on from ``result`` (its findings, counts
        and settled programs), with what is left of its programs and time (the campaign's time plan
        counts from its start, which the lane keeps). None starts once shrinking's time is over.
        Returns whether one started."""
        lane_config = self.config.lane(result.lane, self.jobs)
        if TimePlan(lane_config.budget.time_budget, lane_config.budget.started_at).over(Phase.SHRINKING):
            return False
        self.restarts[result.lane] += 1
        restarted = lane_config.restarted(self.restarts[result.lane], max(result.programs_left, 0))
        self.handed_over[result.lane] = result
        self.start(result.lane, restarted, result)
        return True

    def forget_dead(self) -> None:
        """Lanes whose process ended without handing back its results (killed): their findings are on
        disk; what its predecessor handed back, if any, is what the parent knows of the lane."""
        for lane, process in list(self.running.items()):
            if not process.is_alive() and self.results.empty():
                process.join(timeout=1)
                del self.running[lane]
                self.lost += 1
                if lane in self.handed_over:
                    self.finished.append(self.handed_over.pop(lane))

    def terminate(self) -> None:
        for process in self.running.values():
            if process.is_alive():
                process.terminate()  # SIGTERM: the lane stops cleanly and hands back its results


def run_lanes(config: CampaignConfig, jobs: int, *, log: Log | None = None) -> Campaign:
    """Run ``jobs`` lanes of ``config`` and return a campaign holding the merged results (confirmed and written)."""
    # One clock for every lane: their findings' first sightings and timelines compare.
    config = config.with_seed().replaced(started_at=config.budget.started_at or time.time())
    # Confirmation replays findings, crashes included: in a sandboxed worker, like the lanes' work.
    merged = Campaign(config.replaced(sandbox=True), log=log or (lambda line: print(line, file=sys.stderr, flush=True)))
    if merged.folder is not None and merged.settings.output.clear_findings:
        merged.folder.clear()
    lanes = Lanes(config, jobs)
    interrupted = False
    # The merged campaign's worker imports torch and Thunder while the lanes confirm, not after they
    # end: with a time budget, the lanes leave it the last few seconds to join and confirm in.
    plan = TimePlan(config.budget.time_budget, config.budget.started_at)
    shrinking_end = plan.end(Phase.SHRINKING)
    warm_at = None if shrinking_end is None else shrinking_end - CONFIRM_MOST * plan.budget - WORKER_START_SECONDS
    try:
        lanes.collect(restart=True, ahead=merged.start_worker_ahead, ahead_at=warm_at)
    except KeyboardInterrupt:
        interrupted = True
        lanes.terminate()
        lanes.collect(restart=False)
    for result in sorted(lanes.finished, key=lambda r: r.lane):
        merged.absorb(result.store, result.stats, result.interrupted, result.memory, result.shrinker)
    if interrupted:
        merged.mark_interrupted()
    if lanes.lost:
        merged.log(f"fuzzdce: {lanes.lost} lane process(es) ended without handing back their results; their findings are on disk")
    merged.finish()
    return merged

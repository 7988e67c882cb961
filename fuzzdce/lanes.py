"""Parallel campaigns: N lanes, each a process driving its own Hypothesis run and sandbox.

Lanes share the findings folder (each finding is written atomically as it appears) and the example
database, and run ``config.lane(i)``: seeds ``seed, seed+1, ...``. When all lanes are done, their
ledgers are merged into one campaign (counts add up, the smallest program wins), confirmed once,
and written again.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import signal
import sys
from typing import Any

from fuzzdce.campaign import Campaign
from fuzzdce.config import CampaignConfig
from fuzzdce.ledger import Log
from fuzzdce.quiet import quiet_library_warnings


def raise_keyboard_interrupt(signum, frame) -> None:
    """SIGTERM handler: stop like Ctrl-C (cleanly, findings already on disk)."""
    raise KeyboardInterrupt


def _lane_main(config: CampaignConfig, lane: int, results) -> None:
    quiet_library_warnings()
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    prefix = f"[lane {lane}] "
    campaign = Campaign(
        config.lane(lane), log=lambda line: print(prefix + line, file=sys.stderr, flush=True), process=f"lane {lane}"
    )
    campaign.run()
    results.put((lane, campaign.store, campaign.stats, campaign.interrupted, campaign.memory()))


def _collect(results, processes, jobs: int, collected: list[Any]) -> None:
    while len(collected) < jobs and any(p.is_alive() for p in processes) or not results.empty():
        try:
            collected.append(results.get(timeout=1))
        except Exception:  # queue.Empty: keep waiting while lanes live
            continue


def run_lanes(config: CampaignConfig, jobs: int, *, log: Log | None = None) -> Campaign:
    """Run ``jobs`` lanes of ``config`` and return a campaign holding the merged results (confirmed and written)."""
    config = config.with_seed()
    # Confirmation replays findings, crashes included: in a sandboxed worker, like the lanes' work.
    merged = Campaign(dataclasses.replace(config, sandbox=True), log=log or (lambda line: print(line, file=sys.stderr, flush=True)))
    if merged.folder is not None and config.clear_findings:
        merged.folder.clear()
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=_lane_main, args=(config, lane, results)) for lane in range(jobs)]
    for process in processes:
        process.start()
    collected: list[Any] = []
    interrupted = False
    try:
        _collect(results, processes, jobs, collected)
    except KeyboardInterrupt:
        interrupted = True
        for process in processes:
            if process.is_alive():
                process.terminate()  # SIGTERM: the lane stops cleanly and reports
        _collect(results, processes, jobs, collected)
    for process in processes:
        process.join(timeout=30)
    for _, store, stats, lane_interrupted, memory in sorted(collected, key=lambda item: item[0]):
        merged.absorb(store, stats, lane_interrupted, memory)
    if interrupted:
        merged.mark_interrupted()
    if len(collected) < jobs:
        merged.log(f"fuzzdce: {jobs - len(collected)} lane(s) ended without reporting; their findings are on disk")
    merged.finish()
    return merged

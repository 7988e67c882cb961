"""A campaign over time: summary.json's ``timeline``, samples of programs evaluated and distinct
bugs found so far, ``{"seconds": ..., "programs": ..., "bugs": ...}``, seconds from the campaign's
start. A campaign samples at each progress line and at its end; a lanes run combines its lanes'
timelines (``combine``), which share the parent's clock (``CampaignConfig.budget.started_at``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Sample = dict[str, Any]


def sample(seconds: float, programs: int, bugs: int) -> Sample:
    """One point of a timeline."""
    return {"seconds": round(seconds, 3), "programs": programs, "bugs": bugs}


def programs_at(timeline: Sequence[Sample], seconds: float) -> int:
    """Programs a timeline had evaluated at ``seconds``: its last sample at or before then (0 before its first)."""
    before = [s["programs"] for s in timeline if s["seconds"] <= seconds]
    return before[-1] if before else 0


def combine(timelines: Sequence[Sequence[Sample]], first_seen: Iterable[float | None]) -> list[Sample]:
    """Lanes' timelines as one: at each time any lane sampled, the programs every lane had evaluated
    by then, and the merged bugs first seen by then (``first_seen``: each merged bug's seconds; a bug
    with no time counts from the start)."""
    seen = sorted(0.0 if t is None else t for t in first_seen)
    times = sorted({s["seconds"] for timeline in timelines for s in timeline})
    return [sample(t, sum(programs_at(timeline, t) for timeline in timelines), sum(1 for f in seen if f <= t)) for t in times]


def campaign_timeline(
    own: Sequence[Sample], lanes: Sequence[Sequence[Sample]], first_seen: Iterable[float | None]
) -> list[Sample]:
    """summary.json's ``timeline``: a campaign's own samples, or for one that merged lanes the
    lanes' combined, followed by its own samples taken after them (its end)."""
    if not lanes:
        return list(own)
    combined = combine(lanes, first_seen)
    last = combined[-1]["seconds"] if combined else float("-inf")
    return combined + [s for s in own if s["seconds"] > last]

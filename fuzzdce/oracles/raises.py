"""Exceptions agree: Thunder must not raise where eager did not."""

from __future__ import annotations

from fuzzdce.execution import Outcome


def check(outcome: Outcome, reference: Outcome, baseline: Outcome | None = None) -> list:
    from fuzzdce.oracles import Violation

    if reference.error is not None or outcome.error is None:
        return []
    e = outcome.error
    return [Violation("raises", outcome.path, f"{e.type}: {e.message}", e.type, e.frame)]

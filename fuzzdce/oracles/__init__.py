"""Oracles: each module defines one check over a path's ``Outcome`` and eager's.

An oracle is a ``check(outcome, reference, baseline) -> list[Violation]`` function registered in
``ORACLES`` with its name: ``outcome`` is a path's result under a placement, ``reference`` eager's,
``baseline`` stock Thunder's on the same path (None when the placement is stock itself). It returns no violation when it does not apply (for example when eager itself
raised: such a program is invalid, not a finding). Adding an oracle is adding one module and one
line below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fuzzdce.execution import Outcome


@dataclass(frozen=True)
class Violation:
    """One oracle failing on one path's outcome."""

    oracle: str
    path: str
    message: str
    error_type: str = ""  # the exception type behind it, when there is one
    frame: str = ""  # where in Thunder it was raised, when known
    # The part of the message that identifies the bug, for deduplication (default: the message).
    # A split's key leaves out which FX node it hit; the exception is what matters.
    key: str = ""

    @property
    def identity(self) -> str:
        return self.key or self.message

    def __str__(self) -> str:
        return f"[{self.path}/{self.oracle}] {self.message}"


Check = Callable[[Outcome, Outcome, Outcome | None], list[Violation]]

from fuzzdce.oracles import dce_idempotent, grads, mutations, names, outputs, raises, split_set, splits  # noqa: E402

ORACLES: dict[str, Check] = {
    "raises": raises.check,
    "outputs": outputs.check,
    "grads": grads.check,
    "mutations": mutations.check,
    "splits": splits.check,
    "split-set": split_set.check,
    "names": names.check,
    "idempotent": dce_idempotent.check,
}

__all__ = ["ORACLES", "Check", "Violation"]

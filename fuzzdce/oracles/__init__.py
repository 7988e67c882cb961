"""The oracles: one module each, declaring one ``model.Oracle`` as ``ORACLE``, registered below.

An oracle reads a path's ``Outcome`` under a placement, eager's, and stock Thunder's on the same
path (handed in by the caller; an oracle never compiles). Adding an oracle is adding one module and
one entry in ``ORACLES``; the module is named after its oracle (``-`` written ``_``).
"""

from __future__ import annotations

from fuzzdce.core.model import Oracle
from fuzzdce.oracles import (
    crash,
    dce_sound,
    exact,
    grads,
    guards,
    idempotent,
    metadata,
    mutations,
    names,
    outputs,
    raises,
    rejects,
    split_set,
    splits,
    timeout,
)

ORACLES: dict[str, Oracle] = {
    o.name: o
    for o in (
        raises.ORACLE,
        outputs.ORACLE,
        grads.ORACLE,
        mutations.ORACLE,
        splits.ORACLE,
        split_set.ORACLE,
        names.ORACLE,
        idempotent.ORACLE,
        dce_sound.ORACLE,
        metadata.ORACLE,
        exact.ORACLE,
        guards.ORACLE,
        rejects.ORACLE,
        timeout.ORACLE,
        crash.ORACLE,
    )
}

__all__ = ["ORACLES"]

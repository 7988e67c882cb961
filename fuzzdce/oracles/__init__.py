"""fuzzdce's oracles wing: one module per oracle, each declaring one ``model.Oracle`` as ``ORACLE``,
registered below.

An oracle reads a path's ``Outcome`` under a placement, eager's, and stock Thunder's on the same
path (handed in by the caller; an oracle never compiles). Adding an oracle is adding one module and
one entry in ``ORACLES``; the module is named after its oracle (``-`` written ``_``).

Modules:
- ``raises``: Thunder raises no exception where eager did not.
- ``outputs``: outputs agree with eager.
- ``grads``: gradients agree with eager's, and each output's ``requires_grad``.
- ``mutations``: inputs mutated in place end as in eager.
- ``splits``: no thunderfx split caused by an exception.
- ``split_set``: thunderfx's splits under a placement are stock's.
- ``names``: every trace well-formed, each name defined once.
- ``idempotent``: DCE again removes nothing.
- ``dce_sound``: every subsymbol removed was dead; nothing kept differs from stock's.
- ``metadata``: what a trace states each tensor is, it is when it runs.
- ``exact``: two Thunders that ran the same execution trace give the same bits.
- ``guards``: a call differing in one property the prologue checks gives eager's result.
- ``rejects``: a Thunder under test rejects what the reference rejects.
- ``timeout``: a compile path finishes within its time limit.
- ``crash``: a compile path does not kill the process running it.
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

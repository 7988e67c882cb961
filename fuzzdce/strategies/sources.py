"""Where a program came from: the catalog, Thunder's OpInfos, or a block of the models Thunder ships.

A program is counted under one source, the most specific it holds: a model block's steps
(``model_blocks.PREFIX``) make it a block program, else an OpInfo step (``opinfo.PREFIX``) an OpInfo
program (whose other steps are the catalog's), else it is a catalog program. The report gives the
programs, grad rules and bugs of each (``running.grad_rules.source_lines``).
"""

from __future__ import annotations

from collections.abc import Iterable

from fuzzdce.strategies.model_blocks import PREFIX as BLOCK_PREFIX
from fuzzdce.strategies.opinfo import PREFIX as OPINFO_PREFIX

CATALOG_PROGRAMS, OPINFO_PROGRAMS, BLOCK_PROGRAMS = "catalog programs", "OpInfo programs", "model blocks"
SOURCES = (CATALOG_PROGRAMS, OPINFO_PROGRAMS, BLOCK_PROGRAMS)


def source_of(ops: Iterable[str]) -> str:
    """The source of a program with steps ``ops`` (``Step.op`` each)."""
    ops = list(ops)
    if any(op.startswith(BLOCK_PREFIX) for op in ops):
        return BLOCK_PROGRAMS
    if any(op.startswith(OPINFO_PREFIX) for op in ops):
        return OPINFO_PROGRAMS
    return CATALOG_PROGRAMS

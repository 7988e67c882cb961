"""Was a removed subsymbol dead where it stood? The liveness rule ``dce-sound`` and decision
bisection judge a DCE's removal by (``why_live``), read from a comparison's ``Change``."""

from __future__ import annotations

from fuzzdce.core.portable_trace import KEEP_TAGS, free_reads
from fuzzdce.core.subsymbols import Change


def why_live(change: Change) -> list[tuple[str, str]]:
    """Why the removed subsymbol was not dead where it was removed, as (kind, explanation) pairs:
    kinds "parent output", "read by kept", and the names of ``KEEP_TAGS``. Empty: it was dead.

    Thunder's scoping decides (``check_subsymbols``): a subsymbol reads its parent's arguments,
    its earlier siblings' outputs and, under symbolic values, names defined further out. The
    removed one was live only where a kept sibling after it reads one of its outputs *freely*
    (not defined first inside that sibling's own decomposition, and not available already from
    the parent's arguments, an earlier kept sibling or an enclosing scope), or where it produced
    its parent's output and no kept sibling does.
    """
    child, reasons = change.child, []
    forward = dict(change.renaming)
    outs = {forward.get(n, n) for n in child.out_names}  # in the placement's names
    kept_outs = set().union(*(k.out_names for k in change.kept))
    parent_outs = (outs & change.parent.out_names) - kept_outs - change.outer
    if parent_outs:
        reasons.append(("parent output", f"it produces {change.symbol}'s output {', '.join(sorted(parent_outs))}"))
    available = set(change.outer)
    for k in change.kept[: change.position]:
        available |= k.out_names
    readers, read = [], set()
    for k in change.kept[change.position :]:
        used = (free_reads(k) & outs) - available
        if used:
            readers.append(k.sym)
            read |= used
        available |= k.out_names
    if read:
        reasons.append(("read by kept", f"kept {', '.join(dict.fromkeys(readers))} read(s) {', '.join(sorted(read))}"))
    for tag in KEEP_TAGS:
        if tag in child.keep_tags:
            reasons.append((tag, f"it is tagged {tag}"))
    return reasons

"""What each call of Thunder's ``dce`` did to the decompositions it kept, on every path.

``dce-sound`` compares the traces a path records (``thunder.last_traces``, a subgraph's) with
stock's. Thunder also runs ``dce`` on traces nobody records: the grad transform's trace of a
symbol it differentiates through its decomposition (``decomposed_fn_aug_fwd_rule``), and the one
thunderfx's splitter builds when it tries a node under Thunder (``value_and_grad`` of its symbol).
A DCE that edits a kept subsymbol there makes the splitter reject the node with whatever error the
edited subsymbol's meta raises, one message per op, and nothing any trace shows. So while a path
runs, each ``dce(trace)`` call is observed: the bound symbols it kept are compared with the same
bound symbols of the trace it was given (one call, one set of names: an outer value is read by its
own name, ``Renaming.fixed``, so reading another is an edit), and what differs in their
decompositions is recorded as ``subsymbols.Change`` (plain data: it crosses processes) for
``dce-sound`` to judge as it judges a trace's.

Cheap for a DCE that keeps its bound symbols as they are: Thunder's own ``dce`` keeps each kept
one's object (or copies it with the same subsymbol objects), so nothing is converted or aligned.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from fuzzdce.core.model import Outcome
from fuzzdce.core.portable_trace import portable_node
from fuzzdce.core.subsymbols import Change, Renaming, align_children
from fuzzdce.oracles.dce_sound import ORACLE_NAME as DCE_SOUND
from fuzzdce.running.compile_sharing import in_shadow
from fuzzdce.running.patching import patch_everywhere

LABEL = "dce call"  # "dce call 12": the 13th call of ``dce`` while the path ran


def _proxy_names(values) -> set[str]:
    return {v.name for v in values if hasattr(v, "name")}


def _same_decomposition(kept, given) -> bool:
    """Do two bound symbols decompose alike, object for object: the same subsymbols, or copies of
    them with the same symbol, argument and output objects, at every depth? (Thunder's own ``dce``
    keeps them so, or copies a bound symbol around them; a DCE that rebuilds every decomposition
    leaves the unedited parts so.) Only where not is the decomposition converted and aligned."""
    if kept is given:
        return True
    a, b = kept.subsymbols, given.subsymbols
    return len(a) == len(b) and all(x is y or _same_bound_symbol(x, y) for x, y in zip(a, b))


def _same_objects(a, b) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _same_bound_symbol(a, b) -> bool:
    return (
        a.sym is b.sym
        and _same_objects(a.args, b.args)
        and a.kwargs == b.kwargs
        and _same_objects(a.flat_outs, b.flat_outs)
        and _same_decomposition(a, b)
    )


def _head(bsym) -> tuple:
    """What pairs a kept bound symbol with the one it was in the given trace: its symbol and its
    arguments, proxies by name (a DCE edits decompositions and prunes outputs, not these)."""
    return (bsym.sym.name, tuple(a.name if hasattr(a, "name") else repr(a) for a in bsym.flat_args))


def _given_twin(kept, candidates: list):
    """The bound symbol of the given trace that ``kept`` is, among ``candidates`` (same head),
    taken off the list: the one defining the same names, else the first (a pruned output)."""
    outs = _proxy_names(kept.flat_proxy_outs)
    for i, candidate in enumerate(candidates):
        if _proxy_names(candidate.flat_proxy_outs) == outs:
            return candidates.pop(i)
    return candidates.pop(0) if candidates else None


def decomposition_changes(given, result) -> list[Change]:
    """The subsymbol changes between the bound symbols ``result`` (a ``dce`` call's output) kept and
    the same bound symbols of ``given`` (its input), at every depth; top-level removals are DCE's
    job and not judged here."""
    ids = {id(bsym) for bsym in given.bound_symbols}
    if all(id(kept) in ids for kept in result.bound_symbols):
        return []  # every kept bound symbol is the given one, as Thunder's own dce keeps most
    by_head: dict[tuple, list] = {}
    for bsym in given.bound_symbols:
        by_head.setdefault(_head(bsym), []).append(bsym)
    out: list[Change] = []
    defined: set[str] = set()
    for kept in result.bound_symbols:
        if id(kept) not in ids:
            given_bsym = _given_twin(kept, by_head.get(_head(kept), []))
            if given_bsym is not None and not _same_decomposition(kept, given_bsym):
                stock_node, node = portable_node(given_bsym), portable_node(kept)
                outer = frozenset(defined)
                names = outer | stock_node.arg_names | node.arg_names
                align_children(stock_node.subsymbols, node.subsymbols, 0, node, outer, Renaming.fixed(names), out)
        defined |= _proxy_names(kept.flat_proxy_outs)
    return out


@contextlib.contextmanager
def observed_dce(outcome: Outcome) -> Iterator[None]:
    """While active, every call of ``thunder.core.transform_common.dce`` (whichever a placement
    installed) appends what it changed in the decompositions it kept to ``outcome.dce_calls``, as
    ("dce call N", change). Enter it inside the placement, so that it wraps the placement's ``dce``.

    fuzzdce's own failure here is never Thunder's: it is noted on the outcome and the call's result
    returned as it was."""
    from thunder.core import transform_common

    current = transform_common.dce
    calls = [0]

    def dce(trace, *args, **kwargs):
        result = current(trace, *args, **kwargs)
        if in_shadow():  # another placement's call, probed beside stock's (``compile_sharing``): not this run's
            return result
        label = f"{LABEL} {calls[0]}"
        calls[0] += 1
        try:
            outcome.dce_calls += [(label, change) for change in decomposition_changes(trace, result)]
        except Exception as e:  # a trace fuzzdce cannot read: say so, and leave Thunder's result alone
            note = f"fuzzdce could not compare a dce call's trace: {type(e).__name__}: {e}"
            if note not in outcome.notes:
                outcome.notes.append(note)
            # dce-sound judges the dce calls: one it cannot see is a check not made, counted.
            outcome.could_not_check(DCE_SOUND, "could not compare a dce call with the trace it was given", e)
        return result

    with patch_everywhere(transform_common, "dce", dce):
        yield

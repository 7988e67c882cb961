"""Wrong DCE placements, each with exactly one defect: what decision bisection must pin down.

Each function is a placement (a zero-argument callable returning a context manager that patches
Thunder while active and restores it exactly afterwards), importable as ``planted_dce:NAME`` when
``tests/`` is on the path. ``symcall_correct`` is the control: right everywhere.

Each wrong one errs on one kind of subsymbol (``prims.convert_element_type``, ``prims.copy_``, ...):
one defect is one decision, the removal of that symbol for one reason, which a campaign must list as
one bug (a DCE that errs on every kind makes one decision per kind, and as many bugs).

The ``symcall_*`` faults sit inside ``Symbol.__call__`` beside the thunderfx splitter fix, as
``symcall-fixed`` does: without it symcall alone already differs from stock under thunderfx, and
a fault would then carry two defects there.
"""

from __future__ import annotations

import contextlib

from fuzzdce.running.patching import patch_everywhere
from fuzzdce.running.placements import dce_in_symbol_call, dce_subsymbols


@contextlib.contextmanager
def _symcall_with_splitter_fix(dce):
    """``dce_in_symbol_call(dce)`` plus the splitter fix of ``symcall_fixed``: only ``dce`` differs."""
    from thunder.dynamo import utils as dynamo_utils

    from fuzzdce.running.installed_thunder import splitter_fix_native
    from fuzzdce.running.splitter_fix import try_execute_thunder_symbol_in_one_trace

    with contextlib.ExitStack() as stack:
        stack.enter_context(dce_in_symbol_call(dce))
        if not splitter_fix_native():
            stack.enter_context(
                patch_everywhere(dynamo_utils, "try_execute_thunder_symbol", try_execute_thunder_symbol_in_one_trace)
            )
        yield


def _names(proxies) -> set[str]:
    return {p.name for p in proxies}


def _carries_dce_tags(bsym) -> bool:
    """Tagged in a way a DCE must heed (``DONT_DCE``, ``IN_PLACE``), itself or in its decomposition."""
    from thunder.core import prims
    from thunder.core.symbol import has_tags

    return has_tags(bsym, {prims.OpTags.DONT_DCE, prims.OpTags.IN_PLACE})


def _is(sub, symbol: str) -> bool:
    return sub.sym.name == symbol


def symcall_drops_output_producer(symbol: str = "convert_element_type"):
    """Subsymbol DCE in ``Symbol.__call__`` that drops the last producer of the parent's output
    when it is a ``prims.convert_element_type`` (``to``, ``type_as``, a dtype's promotion).

    In a decomposition of two or more subsymbols, the last one producing one of the parent's
    outputs is dropped where it is ``symbol`` and untagged (not ``DONT_DCE`` nor in-place); every
    other decomposition, and every other subsymbol, is left as it was (no dead code is removed either)."""

    def drop_last_producer(bsym):
        subs = list(bsym.subsymbols)
        if len(subs) < 2:
            return bsym
        outputs = _names(bsym.flat_proxy_outs)
        for i in reversed(range(len(subs))):
            if _names(subs[i].flat_proxy_outs) & outputs:
                if _carries_dce_tags(subs[i]) or not _is(
                    subs[i], symbol
                ):  # an in-place op's copy_: dropping it would break a tag too
                    return bsym
                # The parent's output is now never computed by its decomposition: whoever
                # flattens the parent (grad rules, fusion executors) reads an undefined name.
                return bsym.from_bsym(subsymbols=subs[:i] + subs[i + 1 :])
        return bsym

    return _symcall_with_splitter_fix(drop_last_producer)


def rdnp_ignores_dont_dce(symbol: str = "copy_"):
    """``rdnp`` (subsymbol DCE inside ``remove_duplicate_number_proxies``) with a DCE ignoring
    ``DONT_DCE`` on ``prims.copy_``.

    Thunder's ``transform_common.dce`` but for the tag of ``symbol``: such a tagged subsymbol is
    kept only where a later sibling reads it, so an in-place op's ``copy_`` (whose output is its
    parent's) is removed.

    Adjusted: honouring the parent's output, as Thunder's dce does for any subsymbol, left the tag
    without effect a run can see (Thunder 0.2.6's only tagged subsymbols whose outputs nothing needs
    are the prologue's ``check_*`` under the executors' own checks, which are what runs); here the
    tag is what decides, and it is ignored.
    """
    from thunder.core import prims, transform_common
    from thunder.core.proxies import variableify
    from thunder.core.symbol import has_tags
    from thunder.core.utils import producers

    original = transform_common.remove_duplicate_number_proxies

    def dce_ignoring_tag(bsym):
        if not bsym.subsymbols:
            return bsym
        subs = list(bsym.subsymbols)
        producer = producers(subs)
        # As dce_subsymbols' scratch trace: the parent's outputs are what its return reads.
        needed = {variableify(o) for o in bsym.flat_proxy_outs}
        read = set()  # what kept siblings read: all a tagged subsymbol is judged by here
        kept = []
        for sub in reversed(subs):
            # The defect: Thunder's dce keeps ``has_tags(sub, {DONT_DCE})`` whatever it produces.
            tagged = has_tags(sub, {prims.OpTags.DONT_DCE})
            wanted = read if tagged and _is(sub, symbol) else needed
            kept_for_tag = tagged and not _is(sub, symbol)  # as Thunder's dce keeps every other tagged one
            if kept_for_tag or any(variableify(o) in wanted and producer[o] == sub for o in sub.flat_proxy_outs):
                transform_common._remove_noop_subsymbols(sub)  # as dce does, in place
                kept.append(sub)
                args = {variableify(a) for a in sub.flat_proxy_args}
                needed |= args
                read |= args
        # dce ends with remove_duplicate_number_proxies, patched here: the DCE recurses, as rdnp's does.
        return bsym.from_bsym(subsymbols=remove_duplicate_number_proxies_with_dce(kept[::-1]))

    def remove_duplicate_number_proxies_with_dce(bsyms):
        return [dce_ignoring_tag(bsym) for bsym in original(bsyms)]

    return patch_everywhere(transform_common, "remove_duplicate_number_proxies", remove_duplicate_number_proxies_with_dce)


def user_dce_drops_read_by_kept(symbol: str = "broadcast_in_dim"):
    """A user's patch of ``transform_common.dce`` that drops a read ``prims.broadcast_in_dim`` from
    long ``ltorch`` decompositions.

    After Thunder's DCE, in every decomposition of an ``ltorch`` symbol with at least three
    subsymbols, the first untagged ``symbol`` whose output a later sibling reads is dropped. Written
    as a user writes one: Thunder's function wrapped, no fuzzdce help but ``patch_everywhere``."""
    from thunder.core import transform_common

    original_dce = transform_common.dce

    def drop_first_read(subs):
        for i, sub in enumerate(subs):
            outs = _names(sub.flat_proxy_outs)
            if (
                outs
                and _is(sub, symbol)
                and not _carries_dce_tags(sub)
                and any(outs & _names(later.flat_proxy_args) for later in subs[i + 1 :])
            ):
                return subs[:i] + subs[i + 1 :]
        return subs

    def edit(bsym):
        if not bsym.subsymbols:
            return bsym
        subs = [edit(s) for s in bsym.subsymbols]
        if getattr(bsym.sym.module, "__name__", "") == "thunder.torch" and len(subs) >= 3:
            subs = drop_first_read(subs)
        if len(subs) == len(bsym.subsymbols) and all(a is b for a, b in zip(subs, bsym.subsymbols)):
            return bsym
        # A new bound symbol: the traces before this DCE keep their decompositions.
        return bsym.from_bsym(subsymbols=subs)

    def dce_then_drop(trace, *args, **kwargs):
        result = original_dce(trace, *args, **kwargs)
        result.bound_symbols = [edit(b) for b in result.bound_symbols]
        return result

    return patch_everywhere(transform_common, "dce", dce_then_drop)


def symcall_folds_number_proxy(symbol: str = "convert_element_type"):
    """Subsymbol DCE in ``Symbol.__call__`` that removes read producers of number proxies made by
    ``prims.convert_element_type`` (a Python number's conversion: ``f0 = prims.convert_element_type(alpha, float)``).

    Right but for one thing: a ``symbol`` subsymbol whose outputs are all number proxies is taken
    for a constant already folded in, and removed even where a kept sibling reads it (one producing
    the parent's own output stays)."""
    from thunder.core.proxies import NumberProxy

    def number_only(sub) -> bool:
        outs = sub.flat_proxy_outs
        return bool(outs) and _is(sub, symbol) and all(isinstance(o, NumberProxy) for o in outs)

    def fold(bsym):
        bsym = dce_subsymbols(bsym)  # right so far: what survives a number-only producer is read
        outputs = _names(bsym.flat_proxy_outs)
        kept = [s for s in bsym.subsymbols if not (number_only(s) and not _names(s.flat_proxy_outs) & outputs)]
        return bsym if len(kept) == len(bsym.subsymbols) else bsym.from_bsym(subsymbols=kept)

    return _symcall_with_splitter_fix(fold)


def symcall_dce_raises_on_broadcast():
    """Subsymbol DCE in ``Symbol.__call__`` that raises on decompositions holding ``broadcast_in_dim``.

    Right otherwise (``dce_subsymbols``), it raises on a well-formed bound symbol whose decomposition
    holds a ``prims.broadcast_in_dim`` (``expand``, broadcasting binary ops, ``broadcast_to``, the
    backward of ``sum``): Thunder raises while tracing where stock compiles."""
    from thunder.core import prims

    def dce_or_raise(bsym):
        if any(s.sym.id is prims.PrimIDs.BROADCAST_IN_DIM for s in bsym.subsymbols):
            raise RuntimeError(f"planted: DCE of {bsym.sym.name} cannot handle broadcast_in_dim")
        return dce_subsymbols(bsym)

    return _symcall_with_splitter_fix(dce_or_raise)


def symcall_correct():
    """The control, right on every path: ``symcall-fixed``.

    Subsymbol DCE in ``Symbol.__call__`` plus the thunderfx splitter fix. Bisection over it must
    find no wrong decision."""
    from fuzzdce.running.placements import symcall_fixed

    return symcall_fixed()


def symcall_dce_raises_on_neg():
    """Subsymbol DCE in ``Symbol.__call__`` that raises on ``ltorch.neg``'s decomposition.

    Right otherwise (``dce_subsymbols``): under it a program holding ``neg`` raises while tracing
    where stock compiles, before any trace of it is checked (a failure of stock's there is masked)."""

    def dce_or_raise(bsym):
        if bsym.sym.name == "neg" and bsym.subsymbols:
            raise RuntimeError("planted: DCE of neg cannot handle its decomposition")
        return dce_subsymbols(bsym)

    return _symcall_with_splitter_fix(dce_or_raise)

"""Hypothesis strategies for straight-line torch programs.

Shrinking is the design constraint. Every choice that refers to something whose count can change
while shrinking (live values, candidates) is drawn from a fixed range and taken modulo the count,
so deleting an op or an input leaves the other choices meaningful; the length of the program is
a "continue?" draw before each op, which Hypothesis deletes cheaply.
"""

from __future__ import annotations

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import torch

from fuzzdce.program import DTYPES, Program, Ref, Step, TensorInput
from fuzzdce.strategies.catalog import CATALOG, FLOATS, Meta, OpSpec

# Large enough that "index modulo count" is close to uniform for any count we create.
INDEX_RANGE = 255


def index_choice() -> st.SearchStrategy[int]:
    """An index to be taken modulo a count not known when drawing (shrinks towards 0)."""
    return st.integers(0, INDEX_RANGE)


def keep_going(p_stop_in_4: int = 1) -> st.SearchStrategy[bool]:
    """The "continue?" draw before each optional element; shrinks to False (stop)."""
    return st.integers(0, 3).map(lambda k: k >= p_stop_in_4)


@st.composite
def tensor_inputs(draw, *, max_inputs: int = 3, dtypes: tuple[str, ...] = FLOATS, max_side: int = 4):
    """1..max_inputs input tensor specs with mutually broadcastable shapes (0-3 dims)."""
    n = draw(st.integers(1, max_inputs))
    shapes = draw(
        hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3, min_side=1, max_side=max_side)
    ).input_shapes
    return tuple(TensorInput(tuple(shape), draw(st.sampled_from(dtypes))) for shape in shapes)


def meta_of(value) -> Meta | None:
    if isinstance(value, torch.Tensor):
        dtype = next((k for k, v in DTYPES.items() if v == value.dtype), None)
        return None if dtype is None else Meta(tuple(value.shape), dtype)
    return None


def infer_metas(step: Step, metas: list[Meta | None]) -> list[Meta | None] | None:
    """Run ``step`` on meta tensors: its output metas, or None when torch rejects it."""
    env = {"torch": torch}
    for i, meta in enumerate(metas):
        if meta is not None:
            env[f"v{i}"] = torch.empty(meta.shape, dtype=DTYPES[meta.dtype], device="meta")
    try:
        result = eval(step.expression(), env)  # noqa: S307 - our own generated source
    except Exception:
        return None
    results = tuple(result) if step.n_out > 1 else (result,)
    if len(results) != step.n_out:
        return None
    return [meta_of(r) for r in results]


@st.composite
def steps_for(draw, spec: OpSpec, metas: list[Meta | None]):
    """Draw one application of ``spec`` to live values, or None if no live value fits it."""
    firsts = [i for i, m in enumerate(metas) if m is not None and m.dtype in spec.dtypes]
    if not firsts:
        return None
    # Count back from the newest value, so shrinking the index makes ops use the latest result.
    first = firsts[-1 - draw(index_choice()) % len(firsts)]
    chosen = [first]
    for rule in spec.operands[1:]:
        fits = [i for i, m in enumerate(metas) if m is not None and m.dtype in spec.dtypes and rule(metas[first], m)]
        chosen.append(fits[-1 - draw(index_choice()) % len(fits)])
    params = draw(spec.params(*(metas[i] for i in chosen)))
    return Step(spec.name, spec.template, tuple(Ref(i) for i in chosen), tuple(sorted(params.items())), spec.n_out)


@st.composite
def programs(draw, *, catalog: tuple[OpSpec, ...] = CATALOG, max_ops: int = 8, max_outputs: int = 3, **input_options):
    """Straight-line torch programs over 1-3 inputs, with dead code and one or more outputs.

    Steps that torch rejects on meta tensors are dropped rather than rejected, so every drawn
    program is valid in eager (shape-wise) and no example is discarded.
    """
    inputs = draw(tensor_inputs(**input_options))
    metas: list[Meta | None] = [Meta(i.shape, i.dtype) for i in inputs]
    steps: list[Step] = []
    # The first op needs no "continue?" draw: a program without ops compiles nothing.
    attempts = 0
    while len(steps) < max_ops and (attempts == 0 or draw(keep_going())):
        attempts += 1
        spec = draw(st.sampled_from(catalog))
        step = draw(steps_for(spec, metas))
        if step is None:
            continue
        out_metas = infer_metas(step, metas)
        if out_metas is None:
            continue
        steps.append(step)
        metas.extend(out_metas)
    tensors = [i for i, m in enumerate(metas) if m is not None]
    outputs = [tensors[-1 - draw(index_choice()) % len(tensors)]]
    while len(outputs) < max_outputs and draw(keep_going(p_stop_in_4=2)):
        candidate = tensors[-1 - draw(index_choice()) % len(tensors)]
        if candidate not in outputs:
            outputs.append(candidate)
    seed = draw(st.integers(0, 2**16))
    return Program(tuple(inputs), tuple(steps), tuple(outputs), seed)

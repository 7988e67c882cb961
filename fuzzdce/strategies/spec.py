"""The op catalog's vocabulary: what a live value is, what an op needs of its operands, what an entry states.

Each ``OpSpec`` states, next to its source template, the rule that makes it valid:
- ``dtypes``: dtypes its first operand may have;
- ``operands``: one ``Operand`` per value it reads: allowed dtypes, the value domain it needs
  (``program.Domain.POSITIVE`` for ``log``, ``program.ANY`` for ops defined on any value), relation
  to the first operand (``broadcastable``, ``last_dims_match``...), and whether it is written in place;
- ``params``: a function from the operand metas to a Hypothesis strategy of keyword values
  substituted into the template (dims in range, scalars, flags, literal index lists);
- ``edges``: where the op is special (``Edges``: kinks and bounds, saturation, ties), as data: an
  input the op reads draws part of its values exactly there (``strategies.edges``).
Output shapes, dtypes and tuple arity are not written by hand: the program strategy runs each drawn
step on small CPU tensors, so eager itself is the shape rule (meta kernels accept more and
sometimes infer other shapes), and a step eager rejects is simply not added.

The entries themselves live in ``ops_*.py`` modules by family; ``catalog.CATALOG`` joins them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import hypothesis.strategies as st

from fuzzdce.core.program import STRING_DTYPE, Domain, Literal

T = TypeVar("T")

FLOATS = ("float32", "float64")
HALF = ("bfloat16", "float16")
ALL_FLOATS = FLOATS + HALF
INTS = ("int32", "int64")
BOOL = ("bool",)
NUMERIC = ALL_FLOATS + INTS
ALL = NUMERIC + BOOL
NUMBER = ("pyint",)  # a Python int flowing through the program (``x.shape[0]``, ``x.numel()``, an int input)
# Any Python number: an int as above, or a float or bool input (``program.NumberInput``), for ops taking a scalar.
SCALARS = ("pyint", "pyfloat", "pybool")
STRING = (STRING_DTYPE,)  # a Python string input (``program.StringInput``), for ops taking one (``rounding_mode``)

# What ``OpSpec.yields`` says for an op whose result lies in its first operand's domain.
SAME = "same"


@dataclass(frozen=True)
class Meta:
    """What the generator knows of a live value: shape, dtype, domain, and whether it may be mutated."""

    shape: tuple[int, ...]
    dtype: str  # a key of ``program.DTYPES``, or one of ``SCALARS`` for a Python number
    domain: Domain = Domain.REAL
    # Owns its storage (computed by a non-view op, never viewed since): in-place ops may write it
    # without touching an input that requires grad or aliasing another live value.
    writable: bool = False
    value: int | float | bool | str | None = None  # a Python number's or string's value
    # A string input's choices (``StringInput.choices``): an op takes it only if it accepts every one.
    choices: tuple[str, ...] = ()
    # The tensor's strides when not contiguous (a transposed or strided input, a view, an expand):
    # validation must meet the layout eager will see, or ``view`` on a transposed value slips through.
    strides: tuple[int, ...] | None = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_number(self) -> bool:
        return self.dtype in SCALARS

    @property
    def is_python(self) -> bool:
        """A Python value (a number or a string), not a tensor."""
        return self.is_number or self.dtype in STRING


# --- operand relations: (first operand, candidate) -> bool -------------------------------------------


def any_value(first: Meta, candidate: Meta) -> bool:
    return True


def broadcastable(first: Meta, candidate: Meta) -> bool:
    """Shapes that broadcast together (numpy's rule, which torch shares)."""
    return all(a == b or a == 1 or b == 1 for a, b in zip(reversed(first.shape), reversed(candidate.shape)))


def broadcasts_to_first(first: Meta, candidate: Meta) -> bool:
    """``candidate`` broadcasts to ``first``'s shape exactly (in-place ops, ``expand_as``)."""
    return candidate.ndim <= first.ndim and all(
        b == a or b == 1 for a, b in zip(reversed(first.shape), reversed(candidate.shape))
    )


def same_shape(first: Meta, candidate: Meta) -> bool:
    return first.shape == candidate.shape


def last_dims_match(first: Meta, candidate: Meta) -> bool:
    """``first @ candidate.mT`` is valid: both at least 1-D and the last dims agree."""
    return first.ndim >= 1 and candidate.ndim >= 1 and first.shape[-1] == candidate.shape[-1]


def matmul_fits(first: Meta, candidate: Meta) -> bool:
    """``first @ candidate``: the contraction dims agree (torch checks batch broadcasting)."""
    if first.ndim == 0 or candidate.ndim == 0:
        return False
    k = candidate.shape[0] if candidate.ndim == 1 else candidate.shape[-2]
    return first.shape[-1] == k


def linear_weight(first: Meta, candidate: Meta) -> bool:
    return first.ndim >= 1 and candidate.ndim == 2 and candidate.shape[1] == first.shape[-1]


def conv_weight(first: Meta, candidate: Meta) -> bool:
    """A conv weight (O, C, k...) for a batched input (N, C, L...): channels agree, kernel fits."""
    return (
        candidate.ndim == first.ndim >= 3
        and candidate.shape[0] >= 1
        and candidate.shape[1] == first.shape[1] >= 1
        and all(1 <= k <= n for k, n in zip(candidate.shape[2:], first.shape[2:]))
    )


def divides_numel(first: Meta, candidate: Meta) -> bool:
    return candidate.value is not None and candidate.value > 0 and first.numel % candidate.value == 0


def normalized_shape_of(first: Meta, candidate: Meta) -> bool:
    """``candidate`` is a layer_norm weight for ``first``: a 1-D tensor of its last dim's size."""
    return first.ndim >= 1 and candidate.shape == first.shape[-1:]


# --- where an op is special ------------------------------------------------------------------------

# A point where an op is special: a value, the name of one of the step's numeric parameters (clamp's
# ``lo``), or a function of the operand dtype's ``torch.finfo`` (where exp overflows: ``log(max)``).
Point = float | str | Callable[[object], float]


@dataclass(frozen=True)
class Edges:
    """Where an op is special, as data: the operand values at which its result or its gradient
    changes rule, and so where a compiler's rewrite of it is most often wrong.

    - ``kinks``: kinks, bounds and jumps (relu and abs at 0, clamp at ``lo`` and ``hi``, round at .5);
    - ``saturates``: where the result saturates, overflows or its derivative vanishes or blows up
      (exp at ``log(finfo.max)``, sigmoid at +-20, log near 0), both signs written out;
    - ``ties``: the op is special where values repeat (max, sort, median): an input it reads is
      sometimes drawn from its points alone, so that values tie;
    - ``subgradient``: at its points the op has no derivative and its gradient is a choice among
      subgradients (which of tied maxima takes it, or all of them in shares): torch and Thunder may
      rightly choose differently (torch gives ``max(x, dim)``'s gradient to the index it returns,
      Thunder shares it among the ties). An input drawn at them, or from the ``ties`` domain, is
      drawn not requiring grad (``strategies.edges.with_edges``): its outputs are compared, its
      gradient is not, so that no convention is reported as a wrong gradient.

    Each point is drawn exactly and one unit in the last place either side, in the input's dtype
    (``strategies.edges.edge_values``): what ``hypothesis.strategies.floats`` does at its bounds, for
    an op. Points outside an input's domain are left out (log's points are positive)."""

    kinks: tuple[Point, ...] = ()
    saturates: tuple[Point, ...] = ()
    ties: bool = False
    subgradient: bool = False

    @property
    def points(self) -> tuple[Point, ...]:
        return self.kinks + self.saturates

    def union(self, other: Edges) -> Edges:
        """Both edges' points (each once) and what either says of ties: how what Thunder's OpInfos
        know of an op joins what its catalog entry says (``strategies.edges.with_known_edges``)."""
        return Edges(
            kinks=self.kinks + tuple(k for k in other.kinks if k not in self.points),
            saturates=self.saturates + tuple(p for p in other.saturates if p not in self.points),
            ties=self.ties or other.ties,
            subgradient=self.subgradient or other.subgradient,
        )


def overflow(inverse: Callable[[float], float]) -> Callable[[object], float]:
    """The point where a function overflows a dtype: ``inverse`` of its largest finite value
    (exp: ``overflow(math.log)``)."""
    return lambda finfo: inverse(finfo.max)


def tiny(finfo) -> float:
    """The dtype's smallest normal positive value: where log, reciprocal, rsqrt blow up."""
    return finfo.tiny


# The points where values tie: few, so that a slice of values drawn from them repeats one. ``TIES``
# for ops whose value or gradient is singular where values tie (var, norms: zero spread), ``ORDER``
# for the order statistics (max, sort, topk, median, max_pool), whose gradient there is a choice.
TIES = Edges(kinks=(0.0, 1.0), ties=True)
ORDER = Edges(kinks=(0.0, 1.0), ties=True, subgradient=True)
# Where softmax-like ops saturate: logits far apart (exp under- and overflows), and one far beyond the rest.
LOGITS = Edges(kinks=(0.0,), saturates=(100.0, -100.0, 1e4))


Relation = Callable[[Meta, Meta], bool]
ParamsRule = Callable[..., st.SearchStrategy[dict]]


@dataclass(frozen=True)
class Operand:
    """What one operand may be: dtypes (None: the op's), domain, relation to the first, mutability."""

    dtypes: tuple[str, ...] | None = None
    relation: Relation = any_value
    domain: str = Domain.REAL  # a requirement: a Domain its values must satisfy, or ``ANY``
    written: bool = False  # the op writes it in place
    same_dtype: bool = False  # must have the first operand's dtype (matmul, linear, conv: no promotion)
    # The values a string operand may take (the op's accepted set): it reads a string input only if
    # each of the input's choices is among them, so a guard call's other choice stays valid.
    values: tuple[str, ...] = ()

    def accepts(self, spec_dtypes: tuple[str, ...], first: Meta | None, candidate: Meta) -> bool:
        return (
            candidate.dtype in (self.dtypes or spec_dtypes)
            and (not self.values or set(candidate.choices or (candidate.value,)) <= set(self.values))
            and self.domain in Domain(candidate.domain).satisfies
            and (candidate.writable or not self.written)
            and (first is None or (self.relation(first, candidate) and (not self.same_dtype or candidate.dtype == first.dtype)))
        )


def no_params(*metas: Meta) -> st.SearchStrategy[dict]:
    return st.just({})


@dataclass(frozen=True)
class OpSpec:
    name: str
    family: str
    template: str
    dtypes: tuple[str, ...] = FLOATS
    operands: tuple[Operand, ...] = (Operand(),)
    params: ParamsRule = field(default=no_params, repr=False)
    # The torch callable this entry exercises, as a dotted path ("torch.Tensor.add_"); derived
    # from the template when it starts with one. None for Python-level ops (``n * m``).
    torch_op: str | None = None
    # Domain of the result: a Domain, or ``SAME`` (the first operand's).
    yields: str = Domain.REAL
    view: bool = False  # the result may alias the first operand
    edges: Edges | None = None  # where the op is special (its operands' values), or None

    @property
    def torch_name(self) -> str | None:
        """The dotted torch callable this entry exercises."""
        if self.torch_op is not None:
            return self.torch_op or None
        head = self.template.split("(", 1)[0]
        if head.startswith("torch.") and head.replace(".", "").replace("_", "").isalnum():
            return head
        if head.startswith("{0}.") and head[4:].replace("_", "").isalnum():
            return "torch.Tensor." + head[4:]
        return None


# --- parameter rules shared by the op modules -------------------------------------------------------


# A rule's strategies are made once per set of arguments (``functools.cache``): Hypothesis validates
# a strategy object on its first draw, and one made anew per draw was validated every time.


@functools.cache
def small_floats() -> st.SearchStrategy[float]:
    """Python scalars that keep values in a comparable range (no inf, no NaN)."""
    return st.sampled_from([1.0, 2.0, 0.5, -1.0, -2.5, 3.0])


@functools.cache
def one_of_range(low: int, high: int) -> st.SearchStrategy[int]:
    """An integer in [low, high], drawn from a fixed range and folded in (shrinks towards ``low``).

    The bounds of a parameter depend on its operand's shape, which changes when the shrinker
    deletes an earlier op; a draw whose bounds never change keeps the choices after it aligned.
    """
    return st.integers(0, 255).map(lambda k: low + k % (high - low + 1))


def choose(options: Sequence[T]) -> st.SearchStrategy[T]:
    """``st.sampled_from(options)`` for options that depend on a shape: a fixed-range draw, folded."""
    options = list(options)
    if not options:
        raise ValueError("choose() needs at least one option")
    return one_of_range(0, len(options) - 1).map(options.__getitem__)


@functools.cache
def permutation_of(n: int) -> st.SearchStrategy[tuple[int, ...]]:
    """A permutation of ``range(n)`` from one fixed-range draw (its Lehmer code); the identity when shrunk."""

    def decode(code: int) -> tuple[int, ...]:
        rest, order = list(range(n)), []
        for k in range(n, 0, -1):
            code, i = divmod(code, k)
            order.append(rest.pop(i))
        return tuple(order)

    return st.integers(0, 2**16 - 1).map(lambda code: decode(code % math.factorial(n)))


def dim(x: Meta) -> st.SearchStrategy[int]:
    """A valid dimension index of ``x`` (0-dim tensors accept -1 and 0), 0 when shrunk."""
    return dim_of_rank(max(x.ndim, 1))


@functools.cache
def dim_of_rank(n: int) -> st.SearchStrategy[int]:
    return one_of_range(0, 2 * n - 1).map(lambda k: k if k < n else k - 2 * n)


def new_dim(x: Meta) -> st.SearchStrategy[int]:
    return one_of_range(-x.ndim - 1, x.ndim)


def params(**strategies: Callable[..., st.SearchStrategy]) -> ParamsRule:
    """A params rule from per-keyword functions of the first operand's meta: ``params(dim=dim)``."""

    def rule(first: Meta, *rest: Meta) -> st.SearchStrategy[dict]:
        return st.fixed_dictionaries({k: f(first) for k, f in strategies.items()})

    return rule


def const(strategy: st.SearchStrategy) -> Callable[..., st.SearchStrategy]:
    """A keyword strategy that does not depend on the operands."""
    return lambda *metas: strategy


def source(text: str) -> Literal:
    """Python source substituted verbatim into a template (a plain str would be quoted)."""
    return Literal(text)


def tensor_literal(values: list):
    return source(f"torch.tensor({values!r})")


def in_range_indices(size: int, max_len: int = 4) -> st.SearchStrategy:
    """A literal int64 index tensor with values in [0, size), as source."""
    if size == 0:
        return st.just(source("torch.tensor([], dtype=torch.int64)"))
    return st.lists(one_of_range(0, size - 1), min_size=1, max_size=max_len).map(tensor_literal)

"""Straight-line torch programs: a flat, printable IR that renders to Python source.

Values are numbered: inputs are ``v0 .. v{n-1}``, then each step defines the next ``n_out`` values.
The rendered source is the single source of truth: fuzzdce executes exactly the text it prints.

Program arithmetic lives here too, each a program made from another with every reference
renumbered and every view following its base (``views_follow_bases``): steps or inputs dropped
(``rebuilt``, ``without_range``), a step replaced (``with_step``), an input changed (``with_input``,
``with_tensor_shapes``). The shrinker's passes (``fuzzing.shrink_passes``) and the guard calls'
variants (``running.variants``) are made of these.
"""

from __future__ import annotations

import functools
import linecache
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, NamedTuple

import torch

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}


# An operand requirement every domain meets: ops whose result IEEE rules define for any value.
ANY = "any"


class Draw(NamedTuple):
    """How a domain's values are drawn: torch source for floating tensors, a range for integer ones."""

    floating: str  # formatted with the input's ``shape`` and ``dtype``; ``g`` is the seeded generator
    low: int  # integer tensors: ``torch.randint(low, high, ...)``
    high: int


class Domain(StrEnum):
    """What an input's values are drawn from, so that ops with a restricted domain (log, asin) see
    meaningful values and compilers' rewrite rules meet the values where they break.

    Each domain is declared here once, with everything fuzzdce knows of it:
    - ``draw``: how its values are drawn (``make_inputs``);
    - ``satisfies``: the requirements (``Operand.domain``) its values meet: itself, ``ANY``, and the
      domains it lies inside (``prob``, 0 < x < 1, is ``positive`` and ``unit``);
    - ``on_integers``: what an integer input of it is (no integer lies strictly inside (-1, 1) but
      0, so a restricted domain means positive; none is infinite or NaN, so nonfinite means ties).
    The member order is the generator's: inputs shrink towards the first, and steering weights tie
    in this order (``strategies.programs``). Values are the names ``TensorInput.domain`` records.

    Besides the ranges, the domains where compilers' rewrite rules break are finite, so any op
    taking ``real`` takes them: ``ties`` (repeated values, ties, zeros), ``signed_zeros`` (half the
    values +0.0 or -0.0), ``large`` (magnitudes where tanh, sigmoid and erf saturate and float16's
    exp overflows). ``nonfinite`` (inf, -inf, NaN among +-0, +-1, 0.5) meets only ``ANY``, and what
    is computed from it stays ``nonfinite`` (NaN propagates).
    """

    draw: Draw
    satisfies: frozenset[str]

    def __new__(cls, value: str, draw: Draw, inside: tuple[str, ...] = (), on_integers: str | None = None):
        member = str.__new__(cls, value)
        member._value_ = value
        member.draw = draw
        member.satisfies = frozenset({ANY, value, *inside})
        member._on_integers = on_integers or value
        return member

    def holds(self, value: float) -> bool:
        """Whether ``value`` may be drawn in this domain: what its requirements (``satisfies``) say
        of a value (an op's edge point outside it is never drawn there)."""
        if self is Domain.NONFINITE:
            return True
        positive = Domain.POSITIVE not in self.satisfies or value > 0
        unit = Domain.UNIT not in self.satisfies or -1 < value < 1
        return math.isfinite(value) and positive and unit

    @property
    def on_integers(self) -> Domain:
        """The domain an integer input drawn in this one is."""
        return Domain(self._on_integers)

    # name, how it is drawn, the domains it lies inside, what integers drawn in it are (default: itself)
    REAL = "real", Draw("torch.randn({shape}, generator=g, dtype={dtype})", -5, 6)
    POSITIVE = "positive", Draw("torch.rand({shape}, generator=g, dtype={dtype}) + 0.5", 1, 6), ("real",)
    UNIT = "unit", Draw("torch.rand({shape}, generator=g, dtype={dtype}) * 1.8 - 0.9", -1, 2), ("real",), "positive"
    PROB = (
        "prob",
        Draw("torch.rand({shape}, generator=g, dtype={dtype}) * 0.9 + 0.05", 0, 2),
        ("real", "positive", "unit"),
        "positive",
    )
    TIES = "ties", Draw("torch.randint(-2, 3, {shape}, generator=g).to({dtype})", -2, 3), ("real",)
    SIGNED_ZEROS = (
        "signed_zeros",
        Draw("torch.randn({shape}, generator=g, dtype={dtype}) * torch.randint(0, 2, {shape}, generator=g).to({dtype})", 0, 2),
        ("real",),
    )
    LARGE = "large", Draw("torch.randn({shape}, generator=g, dtype={dtype}) * 30", -100, 101), ("real",)
    NONFINITE = (
        "nonfinite",
        Draw(
            "torch.tensor([0.0, -0.0, float('inf'), float('-inf'), float('nan'), 1.0, -1.0, 0.5], dtype={dtype})"
            "[torch.randint(0, 8, {shape}, generator=g)]",
            -2,
            3,
        ),
        (),
        "ties",
    )


@dataclass(frozen=True)
class Ref:
    """A reference to value ``v{index}`` of the program."""

    index: int

    def __repr__(self) -> str:
        return f"v{self.index}"


@dataclass(frozen=True)
class Literal:
    """A Python expression inserted verbatim (``torch.float32``, a slice, ...)."""

    source: str

    def __repr__(self) -> str:
        return self.source


@dataclass(frozen=True)
class TensorInput:
    shape: tuple[int, ...]
    dtype: str = "float32"
    # Non-contiguous inputs are made by transposing a contiguous tensor of the reversed shape
    # (``transposed``) or by taking every other element of a last dim twice as long (``strided``).
    transposed: bool = False
    domain: Domain = Domain.REAL  # the values drawn (a plain name reads as its Domain)
    strided: bool = False
    # This input is a view of input ``view_of`` (an earlier one, of the same shape, dtype and layout):
    # ``inputs[view_of][...]``, so a write through either shows in both. The pair is what in-place
    # ops may write among the inputs (``strategies.programs.tensor_inputs`` marks it writable).
    view_of: int | None = None
    # Whether a grad call's inputs make this one require grad (only floating tensors can; a view
    # follows its base), drawn per input as PyTorch's OpInfo samples do: programs mix inputs that
    # require grad with inputs that do not, and outputs that require grad with outputs that do not.
    requires_grad: bool = True
    # The exact values a user's input held (its elements in order, as Python numbers), which
    # ``make_inputs`` builds it from instead of drawing it (``fuzzdce minify`` keeps a user's values:
    # a failure may need a clamp at its bound, a tie, a NaN); None: drawn from ``domain``.
    values: tuple[int | float | bool, ...] | None = None
    # Values where the ops reading this input are special (``spec.Edges``), exact in its dtype:
    # half its elements are drawn among them (all of them with ``edges_only``, so that values tie),
    # the others in its domain. Empty: the domain alone.
    edges: tuple[float, ...] = ()
    edges_only: bool = False

    @property
    def can_require_grad(self) -> bool:
        """A grad call makes it require grad: a floating tensor drawn to."""
        return self.requires_grad and self.dtype.startswith(("float", "bfloat"))


# What a Python number input is, by its type: the name ``Meta.dtype`` and ``NumberInput.dtype`` give it.
NUMBER_DTYPES = {bool: "pybool", int: "pyint", float: "pyfloat"}


@dataclass(frozen=True, eq=False)
class NumberInput:
    """A Python number argument (an int, a float or a bool), passed to the program as it is.

    Thunder's prologue checks such an argument's type and (outside symbolic values) its value
    before it reuses a compiled computation, so a second call with another number must miss the
    cache. Its domain follows its value, as for the ints a program computes (``x.shape[0]``).
    """

    value: int | float | bool
    view_of: None = None  # no number aliases another input

    # Equal by type and value: 2, 2.0 and True are three inputs (Python calls them equal), and
    # Thunder's prologue tells them apart.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, NumberInput) and (type(self.value), self.value) == (type(other.value), other.value)

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))

    @property
    def dtype(self) -> str:
        return NUMBER_DTYPES[type(self.value)]

    @property
    def domain(self) -> Domain:
        return Domain.POSITIVE if self.value > 0 else Domain.REAL


# What a string input is: the name ``Meta.dtype`` and ``StringInput.dtype`` give it.
STRING_DTYPE = "pystr"


@dataclass(frozen=True)
class StringInput:
    """A Python string argument (``rounding_mode``, ``approximate``), passed to the program as it is.

    ``choices`` are the values it was drawn from, one op's accepted set, ``value`` among them: the ops
    reading it accept each, so a guard call may pass another. Thunder's prologue checks its value
    (``check_string_value``) before it reuses a computation that folded the string in.
    """

    value: str
    choices: tuple[str, ...] = ()
    view_of: None = None  # no string aliases another input
    domain: Domain = Domain.REAL  # no values to draw: the domain every input has

    @property
    def dtype(self) -> str:
        return STRING_DTYPE


Input = TensorInput | NumberInput | StringInput

# What a view input (``TensorInput.view_of``) has of its base: ``inputs[view_of][...]`` makes it,
# so whatever changes its base's spec changes its own.
VIEW_KEEPS = ("shape", "dtype", "transposed", "strided")


def views_follow_bases(inputs: Sequence[Input]) -> tuple[Input, ...]:
    """``inputs`` with each view given its base's shape, dtype and layout (``VIEW_KEEPS``): what a
    program whose inputs were changed must hold, so that its specs say what ``make_inputs`` builds."""
    followed: list[Input] = []
    for spec in inputs:  # a base comes before its views, so it is followed already
        if isinstance(spec, TensorInput) and spec.view_of is not None:
            spec = replace(spec, **{name: getattr(followed[spec.view_of], name) for name in VIEW_KEEPS})
        followed.append(spec)
    return tuple(followed)


@dataclass(frozen=True)
class Step:
    """One operation: ``outs = template.format(*args, **kwargs)``."""

    op: str  # catalog name, used for coverage counts and readable reprs
    template: str  # e.g. "torch.add({0}, {1}, alpha={alpha})"
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    n_out: int = 1
    # Unpack the result as a tuple even when n_out == 1 (``v3, = torch.split(...)``).
    unpack: bool = False

    def expression(self, out: str = "_") -> str:
        return self.template.format(*map(_source, self.args), **{k: _source(v) for k, v in self.kwargs}, out=out)

    def line(self, first_out: int) -> str:
        """The statement defining this step's values, the first being ``v{first_out}``.

        A template mentioning ``{out}`` is a statement itself (``{0}[...] = {1}; {out} = {0}``,
        how ``setitem`` is written); any other is an expression assigned to the outputs.
        """
        outs = ", ".join(f"v{j}" for j in range(first_out, first_out + self.n_out))
        if self.n_out > 1 or self.unpack:
            outs += ","
        if "{out}" in self.template:
            return self.expression(out=outs)
        return f"{outs} = {self.expression()}"

    def refs(self) -> list[int]:
        return [a.index for a in (*self.args, *(v for _, v in self.kwargs)) if isinstance(a, Ref)]


def _source(value: Any) -> str:
    if isinstance(value, (Ref, Literal)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else f"float({str(value)!r})"
    if isinstance(value, (tuple, list)):
        inner = ", ".join(map(_source, value))
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    return repr(value)


@dataclass(frozen=True)
class Program:
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...]
    outputs: tuple[int, ...]
    seed: int = 0
    name: str = field(default="program", compare=False)
    # Ops the generator drew but dropped (no live value fitted, or torch rejected the step): counted
    # in campaign and generator statistics, never part of the program.
    dropped: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def n_ops(self) -> int:
        return len(self.steps)

    @property
    def ops(self) -> list[str]:
        return [s.op for s in self.steps]

    def producers(self) -> dict[int, int]:
        """Value index -> the index of the step defining it (inputs are defined by no step)."""
        producer, index = {}, len(self.inputs)
        for i, step in enumerate(self.steps):
            for _ in range(step.n_out):
                producer[index] = i
                index += 1
        return producer

    def steps_reaching(self, values: Iterable[int]) -> set[int]:
        """Indices of the steps whose results reach ``values`` (value indices), directly or through
        other steps."""
        producer = self.producers()
        found, todo = set(), list(values)
        while todo:
            value = todo.pop()
            if value in producer and producer[value] not in found:
                found.add(producer[value])
                todo.extend(self.steps[producer[value]].refs())
        return found

    def live_steps(self) -> set[int]:
        """Indices of steps whose results reach an output (the rest is dead code)."""
        return self.steps_reaching(self.outputs)

    def source(self) -> str:
        """The program as a Python function definition."""
        return self._source_text

    @functools.cached_property
    def _source_text(self) -> str:
        # Computed once per program: joining findings into bugs orders them by size, source included,
        # hundreds of thousands of times in a long campaign.
        params = ", ".join(f"v{i}" for i in range(len(self.inputs)))
        lines = [f"def {self.name}({params}):"]
        index = len(self.inputs)
        live = self.live_steps()
        for i, step in enumerate(self.steps):
            comment = "" if i in live else "  # dead"
            lines.append(f"    {step.line(index)}{comment}")
            index += step.n_out
        lines.append(f"    return {_source(tuple(Ref(i) for i in self.outputs))}")
        return "\n".join(lines) + "\n"

    def first_value(self, step: int) -> int:
        """The index of the first value step ``step`` defines (``v{index}``); with ``n_ops``, one past
        the program's last value."""
        return len(self.inputs) + sum(s.n_out for s in self.steps[:step])

    def prefix(self, last: int) -> Program:
        """The program up to step ``last``, returning what that step defines (the values before it
        keep their numbers): a reduction's cut (``shrink_passes.truncations``)."""
        first = self.first_value(last)
        return replace(self, steps=self.steps[: last + 1], outputs=tuple(range(first, first + self.steps[last].n_out)))

    def read_prefix(self, last: int) -> Program:
        """The program up to step ``last``, returning only the values that step defines which the
        rest of the program reads (a later live step, or an output): what localising a wrong value
        compares (``running.localise``). Returning a value the program drops changes what Thunder
        compiles: an empty second part of ``tensor_split`` loses ``requires_grad`` only when
        returned alone, so the prefix returning both parts hid the op at fault."""
        first = self.first_value(last)
        defined = range(first, first + self.steps[last].n_out)
        live = self.live_steps()
        read = set(self.outputs).union(*(self.steps[i].refs() for i in live if i > last))
        return replace(self, steps=self.steps[: last + 1], outputs=tuple(v for v in defined if v in read))

    def every_value(self) -> Program:
        """The program returning every value its steps define, in order (its dead code live): what
        an eager run reads each intermediate's shape and dtype from (``shrink_passes.value_specs``)."""
        return replace(self, outputs=tuple(range(len(self.inputs), self.first_value(self.n_ops))))

    def statement(self, step: int) -> str:
        """Step ``step`` as the program's source writes it (``v3 = torch.sigmoid(v2)``)."""
        return self.steps[step].line(self.first_value(step))

    def inputs_source(self) -> str:
        """A ``make_inputs(requires_grad=False)`` function building this program's (seeded) inputs;
        with ``requires_grad``, the floating inputs drawn to require grad do (the others say so)."""
        lines = [
            "def make_inputs(requires_grad=False):",
            f"    g = torch.Generator().manual_seed({self.seed})",
        ]
        if any(spec.view_of is not None for spec in self.inputs):  # built in order: views need their base
            lines.append("    inputs = []")
            for spec in self.inputs:
                lines.append(f"    inputs.append({_input_expression(spec)}){_grad_note(spec)}")
            lines.append("    return inputs")
            return "\n".join(lines) + "\n"
        lines.append("    return [")
        for spec in self.inputs:
            lines.append(f"        {_input_expression(spec)},{_grad_note(spec)}")
        lines.append("    ]")
        return "\n".join(lines) + "\n"

    def function(self):
        """Compile the rendered source into a function (registered with linecache for tracebacks)."""
        source = self.source()
        filename = f"<fuzzdce-{abs(hash(source)):x}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict[str, Any] = {"torch": torch}
        exec(compile(source, filename, "exec"), namespace)
        return namespace[self.name]

    def make_inputs(self, *, requires_grad: bool = False) -> list[torch.Tensor]:
        namespace: dict[str, Any] = {"torch": torch}
        exec(self.inputs_source(), namespace)
        return namespace["make_inputs"](requires_grad)

    def __repr__(self) -> str:
        shapes = ", ".join(
            f"v{i}: {s.dtype}{list(s.shape)}{_grad_note(s) and ' (no grad)'}"
            if isinstance(s, TensorInput)
            else f"v{i}: {s.value!r}"
            for i, s in enumerate(self.inputs)
        )
        return f"Program(seed={self.seed}; {shapes})\n{self.source()}"


def _layout(spec: TensorInput) -> tuple[tuple[int, ...], str]:
    """The shape an input is drawn in, and the view (source) that gives it its layout.

    Strided: the final last dim is drawn twice as long and every other element kept.
    Transposed: the base is made in reversed dim order and permuted back.
    """
    final = (*spec.shape[:-1], 2 * spec.shape[-1]) if spec.strided and spec.shape else spec.shape
    shape = tuple(reversed(final)) if spec.transposed else final
    view = ""
    if spec.transposed and len(shape) > 1:
        view += ".mT" if len(shape) == 2 else f".permute({tuple(reversed(range(len(shape))))!r})"
    if spec.strided and shape:
        view += "[..., ::2]"
    return shape, view


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def input_strides(spec: TensorInput) -> tuple[int, ...] | None:
    """The strides of the input ``make_inputs`` makes, when it is not contiguous."""
    shape, view = _layout(spec)
    if not view:
        return None
    tensor = eval(f"torch.empty({shape!r}, device='meta'){view}", {"torch": torch})  # noqa: S307 - our own source
    return None if tensor.is_contiguous() else tuple(tensor.stride())


def input_expression(spec: Input) -> str:
    """The source ``make_inputs`` builds one input with (``g``: its seeded generator; ``inputs``: the
    inputs before it)."""
    return _input_expression(spec)


# What a floating input drawn not to require grad says on its line of ``make_inputs``: a reader of
# the script is told, and ``program_source`` reads it back so.
NEVER_REQUIRES_GRAD = "# never requires grad"


def _grad_note(spec: Input) -> str:
    """A comment on a floating input drawn not to require grad, which a grad call leaves so."""
    floating = isinstance(spec, TensorInput) and spec.dtype.startswith(("float", "bfloat"))
    return f"  {NEVER_REQUIRES_GRAD}" if floating and not spec.requires_grad and spec.view_of is None else ""


def _input_expression(spec: Input) -> str:
    if isinstance(spec, (NumberInput, StringInput)):
        return repr(spec.value)
    if spec.view_of is not None:  # a view of an earlier input: requires grad through its base
        return f"inputs[{spec.view_of}][...]"
    shape, view = _layout(spec)
    dtype = f"torch.{spec.dtype}"
    floating, low, high = Domain(spec.domain).draw
    if spec.values is not None and _numel(spec.shape) == len(spec.values):  # the user's own values, as given
        shape, view = spec.shape, ""
        expr = f"torch.tensor({_source(list(spec.values))}, dtype={dtype}).reshape({shape!r})"
    elif spec.dtype == "bool":
        expr = f"torch.randint(0, 2, {shape!r}, generator=g).bool()"
    elif spec.dtype.startswith("int"):
        expr = f"torch.randint({low}, {high}, {shape!r}, generator=g, dtype={dtype})"
    else:
        expr = floating.format(shape=repr(shape), dtype=dtype)
    if spec.edges and spec.values is None and spec.dtype != "bool":  # a user's own values stay exactly theirs
        expr = _edges_expression(spec, expr, shape, dtype)
    if view:
        expr = f"({expr}){view}" if " " in expr else expr + view
    if spec.can_require_grad:  # only floating tensors can require grad; the others drawn not to
        # detach(): a view (or a sum) is not a leaf, and only leaves may be made to require grad.
        expr = f"({expr}).detach()" if (view or " " in expr) else expr
        expr += ".requires_grad_(requires_grad)"
    return expr


def _edges_expression(spec: TensorInput, expr: str, shape: tuple[int, ...], dtype: str) -> str:
    """``expr`` with half its elements (all, with ``edges_only``) replaced by ones among ``spec.edges``."""
    values = [int(v) for v in spec.edges] if spec.dtype.startswith("int") else [float(v) for v in spec.edges]
    picked = f"torch.tensor({_source(values)}, dtype={dtype})[torch.randint(0, {len(values)}, {shape!r}, generator=g)]"
    if spec.edges_only:
        return picked
    return f"torch.where(torch.rand({shape!r}, generator=g) < 0.5, {picked}, {expr})"


# --- program arithmetic: programs made from others, every reference renumbered ----------------------


def _renumbered(value: Any, mapping: dict[int, int]) -> Any:
    return Ref(mapping[value.index]) if isinstance(value, Ref) else value


def rebuilt(
    program: Program,
    kept_inputs: list[int],
    kept_steps: list[int],
    outputs: tuple[int, ...],
    fresh: tuple[tuple[int, TensorInput], ...] = (),
) -> Program | None:
    """A program of the old inputs ``kept_inputs``, then one new input per ``fresh`` entry (the old
    value it stands for, and its spec), the old steps ``kept_steps``, returning the old values
    ``outputs``: every reference renumbered. None when a kept step or output reads a value no
    longer defined, or a kept input is a view of a dropped one."""
    mapping = {old: new for new, old in enumerate(kept_inputs)}
    mapping |= {value: len(kept_inputs) + j for j, (value, _) in enumerate(fresh)}
    inputs = []
    for old in kept_inputs:
        spec = program.inputs[old]
        if spec.view_of is not None:
            if spec.view_of not in mapping:
                return None
            spec = replace(spec, view_of=mapping[spec.view_of])
        inputs.append(spec)
    inputs += [spec for _, spec in fresh]
    index, steps = len(inputs), []
    for i in kept_steps:
        step = program.steps[i]
        if any(r not in mapping for r in step.refs()):
            return None
        steps.append(
            replace(
                step,
                args=tuple(_renumbered(a, mapping) for a in step.args),
                kwargs=tuple((k, _renumbered(v, mapping)) for k, v in step.kwargs),
            )
        )
        for offset in range(step.n_out):
            mapping[program.first_value(i) + offset] = index
            index += 1
    if not outputs or any(o not in mapping for o in outputs):
        return None
    return replace(program, inputs=tuple(inputs), steps=tuple(steps), outputs=tuple(mapping[o] for o in outputs))


def without_steps(program: Program, dropped: set[int]) -> Program | None:
    """The program without the steps ``dropped`` (None when something kept reads their results)."""
    kept = [i for i in range(program.n_ops) if i not in dropped]
    return rebuilt(program, list(range(len(program.inputs))), kept, program.outputs)


def read_inputs(program: Program) -> set[int]:
    """Inputs some step or output reads, or that another input is a view of."""
    read = {r for step in program.steps for r in step.refs()} | set(program.outputs)
    read |= {spec.view_of for spec in program.inputs if spec.view_of is not None}
    return {i for i in range(len(program.inputs)) if i in read}


def without_range(program: Program, dropped: range, specs: dict[int, TensorInput]) -> Program | None:
    """The program without the steps in ``dropped``: each of their results that a kept step or the
    return reads becomes a fresh input of its shape and dtype (``specs``). None when one cannot."""
    owner = program.producers()
    kept_steps = [i for i in range(program.n_ops) if i not in dropped]
    read = {r for i in kept_steps for r in program.steps[i].refs()} | set(program.outputs)
    needed = sorted(v for v in read if owner.get(v) in dropped)
    if any(v not in specs for v in needed):
        return None
    fresh = tuple((v, specs[v]) for v in needed)
    return rebuilt(program, list(range(len(program.inputs))), kept_steps, program.outputs, fresh)


def with_step(program: Program, index: int, step: Step) -> Program | None:
    """``program`` with step ``index`` replaced by ``step``, and whatever it alone read gone with
    it: statements it left dead, inputs it left unread (None when it cannot be rebuilt)."""
    changed = replace(program, steps=program.steps[:index] + (step,) + program.steps[index + 1 :])
    was_live, live = program.live_steps(), changed.live_steps()
    kept_steps = [i for i in range(program.n_ops) if i in live or i not in was_live]
    read = read_inputs(replace(changed, steps=tuple(changed.steps[i] for i in kept_steps)))
    kept_inputs = [i for i in range(len(program.inputs)) if i in read or i not in read_inputs(program)]
    return rebuilt(changed, kept_inputs, kept_steps, program.outputs)


def with_input(program: Program, index: int, **changes: Any) -> Program:
    """``program`` with input ``index``'s spec changed by ``changes``, and each view of it alike
    (``views_follow_bases``)."""
    inputs = list(program.inputs)
    inputs[index] = replace(inputs[index], **changes)
    return replace(program, inputs=views_follow_bases(inputs))


def with_tensor_shapes(program: Program, shape_of: Callable[[tuple[int, ...]], tuple[int, ...]]) -> Program:
    """``program`` with each tensor input that is no view given the shape ``shape_of(its shape)``,
    each view following its base (``views_follow_bases``)."""
    inputs = tuple(
        replace(s, shape=shape_of(s.shape)) if isinstance(s, TensorInput) and s.view_of is None else s for s in program.inputs
    )
    return replace(program, inputs=views_follow_bases(inputs))


def with_step_inserted(program: Program, before: int, step: Step, replacing: int) -> Program:
    """``program`` with ``step`` inserted before step ``before`` (``n_ops``: at the end), its first
    result read instead of value ``replacing`` by every later step and by the return: ``x`` becomes
    ``f(x)`` from there on. Every value after the insertion is renumbered; ``step`` reads values
    defined before it, by their numbers in ``program``."""
    first = program.first_value(before)
    shifted = {index: index + step.n_out for index in range(first, program.first_value(program.n_ops))}
    after = {**shifted, replacing: first}

    def renumbered(value: Any, mapping: dict[int, int]) -> Any:
        return Ref(mapping.get(value.index, value.index)) if isinstance(value, Ref) else value

    def moved(old: Step, mapping: dict[int, int]) -> Step:
        args = tuple(renumbered(a, mapping) for a in old.args)
        return replace(old, args=args, kwargs=tuple((k, renumbered(v, mapping)) for k, v in old.kwargs))

    steps = (*program.steps[:before], step, *(moved(s, after) for s in program.steps[before:]))
    outputs = tuple(after.get(o, o) for o in program.outputs)
    return replace(program, steps=steps, outputs=outputs)

"""OpInfo steps: the samples of Thunder's own OpInfos (``thunder.tests.opinfos``) as program steps.

Thunder ships, beside its code, what it knows of each op it implements: an ``OpInfo`` with the
dtypes it supports, sample inputs (shapes, arguments, keywords that are valid together), for some
reference inputs and the points where the op is singular. Here each OpInfo whose op is a plain
torch call becomes a source of steps that a program draws as it draws the catalog's (``programs``):

- an **entry** (``Entry``): an OpInfo whose ``torch_reference`` (or, for a Thunder symbol, the torch
  function Thunder maps to it) is a public torch callable: ``torch.digamma``,
  ``torch.nn.functional.rrelu``, a ``Tensor`` method (``x.view(...)``) or ``x[...]``. Others (a
  lambda, a helper of the test suite, a Thunder prim) are skipped and counted (``SKIPPED``);
- a **sample** (``OpInfoSample``): one of its sample, reference or singularity inputs in one dtype,
  written as the source of one call (``torch.topk({0}, 2, dim=1, largest=False)``) and one
  ``TensorInput`` per tensor it holds. A floating tensor is drawn from the value domain its sample's
  values lie in (so a program's seed varies it); integer and boolean tensors (indices, masks), and
  every tensor of a reference or singularity input, keep the sample's values (``TensorInput.values``).
  Each sample is run in eager, twice, on the inputs the program will make: one eager rejects is
  left out, as is one whose result is random (two runs differ), and an OpInfo none of whose samples
  eager takes at a dtype is *rejected* there: the step is dropped and counted (``rejected``), never
  reported.

A program holding one (``programs(opinfo_rate=...)``) gets its sample's tensors as inputs of its
own, and places the call among its catalog steps: the catalog ops before it may compute from those
inputs, and each tensor argument may be any live value of the same shape, dtype and domain (chained);
the catalog ops after it may read what it returns. Its source is plain torch, so the standalone
script, ``fuzzdce minify`` and shrinking read it like any step. Its ``Step.op`` is the OpInfo's name
after ``PREFIX`` (``opinfo:digamma``): what a campaign's ops reached count by source.

Importing ``thunder.tests.opinfos`` costs seconds: it is imported once per process, on the first
program drawn with OpInfo steps on (``source()``), and only where the installed Thunder ships it
(``available()``; ``fuzzdce doctor`` says so).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import itertools
import math
import operator
import random
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch

from fuzzdce.core.errors import UsageError
from fuzzdce.core.grad_rule_names import rule_of_call
from fuzzdce.core.program import DTYPES, Domain, TensorInput, input_expression
from fuzzdce.core.program_source import DTYPE_NAMES, step_of, value_domain
from fuzzdce.strategies.catalog import CATALOG
from fuzzdce.strategies.spec import ORDER, Edges

# The share of programs holding OpInfo steps, by default (docs/extending.md, "OpInfo steps"): with
# steps drawn in a floating dtype where they can reach a grad rule, more OpInfo steps reach more of
# Thunder's grad rules, up to the point where their programs' cost outweighs it; a quarter of
# programs stay the catalog's alone.
DEFAULT_OPINFO_RATE = 0.75
PREFIX = "opinfo:"  # an OpInfo step's ``Step.op``: PREFIX + the OpInfo's name
MODULE = "thunder.tests.opinfos"
# The two suites OpInfos come from: Thunder's own (its symbols), and torch's (``op_db``) for the ops
# Thunder runs through its automatic registration (``thunder.torch.default_torch_ops``), as Thunder's
# own ``test_auto_register_torchops.py`` picks them.
THUNDER_SUITE, TORCH_SUITE = "thunder", "torch"
SUITES = (THUNDER_SUITE, TORCH_SUITE)
TORCH_MODULE = "torch.testing._internal.common_methods_invocations"
AUTO_REGISTERED = "thunder.torch.default_torch_ops"

# Which inputs of an OpInfo a sample is drawn from: its sample inputs, its reference inputs (where
# it has them), and its sample inputs moved onto the points where it is singular (where it says).
SAMPLE, REFERENCE, SINGULARITY = "sample", "reference", "singularity"
MAX_SAMPLES = 48  # the first samples of each generator are taken
MAX_NUMEL = 1024  # a sample holding a larger tensor is left out (the catalog's tensors have at most 256)
MAX_VALUES = 128  # a tensor whose values are kept has at most this many
MAX_RESULTS = 6  # as ``programs.MAX_TUPLE``
# How much likelier an OpInfo calling an op no catalog entry calls is drawn (``in_catalog``): about a
# third of the draws for the eighth of the OpInfos (26 of 211 in 0.2.6); the catalog draws the others.
BEYOND_CATALOG = 3

# Why an OpInfo is skipped before anything is drawn (``OpInfoSource.skipped``), and why a drawn one
# is dropped (``rejected``): every sample of it at the drawn dtype and kind is one of these.
NO_TORCH_CALL = "no plain torch call"
NO_DTYPE = "no dtype fuzzdce draws"
NO_TENSOR = "a tensor property: no tensor result"  # the suite's ``tensor_properties`` (is_complex, numel)
MOVES = "moves to a device"  # x.cuda(), x.cpu(): a program's device is its path's (``CompilePath.device``)
DEVICE_CALLS = frozenset({"torch.Tensor.cuda", "torch.Tensor.cpu"})
IN_PLACE = "in place"
EAGER_REJECTS = "eager rejects its samples"
RANDOM = "random results"
UNWRITABLE = "no sample fuzzdce writes"  # devices, sizes past MAX_NUMEL, complex numbers, callables
NO_RESULT = "no tensor result"  # x.item(): nothing a program returns or a later step reads
REJECTED_NOTE = " rejected: "  # a dropped step's name: ``opinfo:NAME rejected: WHY`` (``Program.dropped``)

# The torch namespaces a reference is looked for in, the first that has it naming it.
NAMESPACES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft")
GETITEM = "operator.getitem"


class Unwritable(Exception):
    """A sample holds a value no program source writes (a device, a complex number, a callable)."""


@dataclass(frozen=True)
class Entry:
    """An OpInfo that draws: its name (unique), the torch call it makes (dotted: ``torch.digamma``,
    ``torch.Tensor.view`` for a method, ``operator.getitem`` for ``x[...]``), the dtypes fuzzdce
    draws that it supports (``INPUT_DTYPES``' order) and the kinds of inputs it has."""

    name: str
    call: str
    dtypes: tuple[str, ...]
    kinds: tuple[str, ...]
    opinfo: Any = field(compare=False, repr=False, default=None)
    domain: tuple[float | None, float | None] = (None, None)
    suite: str = THUNDER_SUITE
    # The grad rule Thunder has for the symbol its call maps to (``grad_rule_names.rule_of_call``):
    # None where Thunder differentiates it through its decomposition (its prims' rules), or not at all.
    rule: str | None = None

    @property
    def op(self) -> str:
        return PREFIX + self.name


@dataclass(frozen=True)
class OpInfoSample:
    """One sample of an entry as a step: its template (``{k}``: the tensor ``order[k]``), and one
    input spec per tensor it holds, with whether its values are the sample's own (never chained)."""

    template: str
    order: tuple[int, ...]
    leaves: tuple[TensorInput, ...]
    exact: tuple[bool, ...]


def available() -> str | None:
    """None when this Thunder ships ``thunder.tests.opinfos`` and what it imports, else why not."""
    try:
        if importlib.util.find_spec(MODULE) is None:
            return "this Thunder has no thunder.tests (its wheel or checkout ships no test suite)"
    except ModuleNotFoundError:
        return "this Thunder has no thunder.tests (its wheel or checkout ships no test suite)"
    missing = [name for name in ("pytest", "numpy", "looseversion") if importlib.util.find_spec(name) is None]
    if missing:
        return f"{MODULE} imports {', '.join(missing)}, not installed here"
    return None


def torch_available() -> str | None:
    """None when torch's OpInfos (``op_db``) import here and this Thunder lists the ops it registers
    automatically, else why not: torch's suite imports ``expecttest``, a test dependency."""
    try:
        if importlib.util.find_spec(AUTO_REGISTERED) is None:
            return "this Thunder registers no torch ops automatically"
    except ModuleNotFoundError:
        return "this Thunder registers no torch ops automatically"
    missing = [name for name in ("expecttest", "numpy") if importlib.util.find_spec(name) is None]
    if missing:
        return f"{TORCH_MODULE} imports {', '.join(missing)}, not installed here"
    return None


# --- torch's OpInfos, for the ops Thunder registers automatically ----------------------------------------


@dataclass(frozen=True)
class SuiteSample:
    """A sample as Thunder's suite gives one: the op's arguments, its input first."""

    args: tuple
    kwargs: dict


class TorchSuiteOpInfo:
    """One of torch's OpInfos (``op_db``) read as Thunder's are (``OpInfoSource``), for one torch
    callable Thunder registers automatically: Thunder has no rule of its own for it, so it runs
    through torch's (a symbol per callable, and a VJP rule from torch's autograd). Its ``call`` is
    that callable's dotted name (``torch.Tensor.absolute`` for ``abs``'s alias): the name Thunder
    registered, which a program must call to reach it, not another name of the same function. Its
    samples put the input first, as Thunder's do; it has no ``singularity_fn``."""

    def __init__(self, opinfo: Any, call: str) -> None:
        self.suite_opinfo = opinfo
        self.call = call
        variant = opinfo.variant_test_name
        self.name = call + (f"_{variant}" if variant else "")
        self.domain = tuple(getattr(opinfo, "domain", None) or (None, None))
        self.singularity_fn = None
        self.singularity_fn_producer = lambda sample: None
        self.reference_input_generator = getattr(opinfo, "reference_inputs_func", None)

    def dtypes(self) -> set:
        return set(self.suite_opinfo.dtypes)

    def _samples(self, generator: Any, device: str, dtype: Any, requires_grad: bool) -> Iterator[SuiteSample]:
        from thunder.core.dtypes import to_torch_dtype  # noqa: PLC0415

        for sample in generator(device, to_torch_dtype(dtype), requires_grad=requires_grad):
            yield SuiteSample((sample.input, *sample.args), dict(sample.kwargs))

    def sample_inputs(self, device: str, dtype: Any, requires_grad: bool = False) -> Iterator[SuiteSample]:
        return self._samples(self.suite_opinfo.sample_inputs, device, dtype, requires_grad)

    def reference_inputs(self, device: str, dtype: Any, requires_grad: bool = False) -> Iterator[SuiteSample]:
        return self._samples(self.suite_opinfo.reference_inputs, device, dtype, requires_grad)


def auto_registered_calls() -> dict[str, str]:
    """The torch callables this Thunder registers automatically, by the name Thunder's own test of
    them matches OpInfos with (``linalg.matmul``, ``Tensor.absolute``, ``torch.lobpcg``) -> dotted."""
    from thunder.torch import _get_torch_function_name  # noqa: PLC0415
    from thunder.torch.default_torch_ops import torch_auto_registered_ops  # noqa: PLC0415

    calls: dict[str, str] = {}
    for module, functions in torch_auto_registered_ops.items():
        prefix = module.__name__.removeprefix("torch.")
        dotted = "torch.Tensor" if module is torch.Tensor else module.__name__
        for function in functions:
            name = _get_torch_function_name(module, function)
            calls.setdefault(f"{prefix}.{name}", f"{dotted}.{name}")
    return calls


def torch_suite_opinfos(op_db: Iterable[Any], calls: Mapping[str, str]) -> list[TorchSuiteOpInfo]:
    """One ``TorchSuiteOpInfo`` per OpInfo of ``op_db`` and automatically registered callable its
    name or an alias's names (a function, ``torch.``'s, or a ``Tensor`` method: each is its own
    symbol in Thunder, with its own rule), as Thunder's ``test_auto_register_torchops`` matches them."""
    found = []
    for opinfo in op_db:
        names = [opinfo.name, *(alias.name for alias in opinfo.aliases)]
        keys = dict.fromkeys(k for n in names for k in (f"torch.{n}", n, f"Tensor.{n}") if k in calls)
        found.extend(TorchSuiteOpInfo(opinfo, calls[key]) for key in keys)
    return found


# --- torch calls -------------------------------------------------------------------------------------


def public_callables() -> tuple[dict[int, str], dict[int, str]]:
    """(id -> dotted name) of the public torch functions, the first namespace of ``NAMESPACES``
    naming each; (id -> name) of ``torch.Tensor``'s public methods."""
    functions: dict[int, str] = {}
    for dotted in NAMESPACES:
        module = torch
        for part in dotted.split(".")[1:]:
            module = getattr(module, part)
        for name in dir(module):
            if name.startswith("_"):
                continue
            value = getattr(module, name, None)
            if callable(value) and not isinstance(value, type):
                functions.setdefault(id(value), f"{dotted}.{name}")
    methods = {id(getattr(torch.Tensor, n)): n for n in dir(torch.Tensor) if not n.startswith("_")}
    return functions, methods


def torch_call(opinfo: Any, functions: Mapping[int, str], methods: Mapping[int, str], thunder_map: Mapping) -> str | None:
    """The public torch callable an OpInfo's op is, dotted, or None.

    Its ``torch_reference`` unwrapped (the suite wraps some to take numbers), when torch names it;
    a reference of ``torch._refs`` as the torch function of its name; ``operator.getitem``; else,
    for a Thunder symbol, the torch function Thunder maps to it (``_torch_to_thunder_function_map``)."""
    reference = opinfo.torch_reference
    if reference is not None:
        unwrapped = inspect.unwrap(reference)
        if unwrapped is operator.getitem:
            return GETITEM
        if id(unwrapped) in functions:
            return functions[id(unwrapped)]
        if id(unwrapped) in methods:
            return f"torch.Tensor.{methods[id(unwrapped)]}"
        module = getattr(unwrapped, "__module__", "") or ""
        name = getattr(unwrapped, "__name__", "")
        if module.startswith("torch._refs") and callable(getattr(torch, name, None)):
            return f"torch.{name}"
        if module.startswith(("thunder", "__main__")) or name == "<lambda>":
            pass  # the suite's own helper: what the op's symbol maps to, below
        else:
            return None
    mapped = [t for t, symbol in thunder_map.items() if symbol is opinfo.op]
    names = sorted((functions[id(t)] for t in mapped if id(t) in functions), key=lambda n: (n.count("."), n))
    return names[0] if names else None


# --- writing a sample as source ------------------------------------------------------------------------


def is_device(text: str) -> bool:
    """Whether a string names a device (``"cpu"``, ``"cuda:0"``)."""
    try:
        torch.device(text)
    except (RuntimeError, ValueError):
        return False
    return True


class _Writer:
    """Writes a sample's arguments as source, each tensor a name ``a{k}`` (the same tensor once)."""

    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.ids: dict[int, int] = {}

    def write(self, value: Any, keyword: str | None = None) -> str:
        if isinstance(value, torch.Tensor):
            if id(value) not in self.ids:
                self.ids[id(value)] = len(self.tensors)
                self.tensors.append(value)
            return f"a{self.ids[id(value)]}"
        if keyword == "device" or isinstance(value, torch.device) or (isinstance(value, str) and is_device(value)):
            raise Unwritable("a device")  # a program runs on its path's device: a sample naming one is left out
        if value is None or value is Ellipsis or isinstance(value, (bool, int, str)):
            return "..." if value is Ellipsis else repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        if isinstance(value, slice):
            return self.write_slice(value)
        if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
            text = str(value)
            if not text.startswith("torch.") or eval(text, {"torch": torch}) != value:  # noqa: S307 - torch's own name
                raise Unwritable(type(value).__name__)
            return text
        if isinstance(value, (tuple, list)):  # torch.Size too
            inner = ", ".join(self.write(v) for v in value)
            if isinstance(value, list):
                return f"[{inner}]"
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        raise Unwritable(type(value).__name__)

    def write_slice(self, piece: slice) -> str:
        return f"slice({self.write(piece.start)}, {self.write(piece.stop)}, {self.write(piece.step)})"

    def call(self, call: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
        """The source of ``call(*args, **kwargs)``: a function, a method of the first argument, ``x[i]``."""
        if call == GETITEM:
            if len(args) != 2 or kwargs or not isinstance(args[0], torch.Tensor):
                raise Unwritable("getitem's arguments")
            return f"{self.write(args[0])}[{self.write(args[1])}]"
        written = [self.write(a) for a in args] + [f"{k}={self.write(v, k)}" for k, v in kwargs.items()]
        if call.startswith("torch.Tensor."):
            if not args or not isinstance(args[0], torch.Tensor):
                raise Unwritable("a method without a tensor")
            return f"{written[0]}.{call.removeprefix('torch.Tensor.')}({', '.join(written[1:])})"
        return f"{call}({', '.join(written)})"


# The values each domain draws from (``Domain.draw``): a sample's floating tensor is drawn from its
# domain only where those draws lie within the OpInfo's declared domain (else its values are kept).
DRAWN_RANGE = {
    Domain.REAL: (-math.inf, math.inf),
    Domain.POSITIVE: (0.5, 1.5),
    Domain.UNIT: (-0.9, 0.9),
    Domain.PROB: (0.05, 0.95),
}


def leaf_spec(tensor: torch.Tensor, keep: bool, declared: tuple[float | None, float | None]) -> tuple[TensorInput, bool]:
    """The input spec of one tensor of a sample, and whether its values are kept (``keep``: a
    reference or singularity input's; integers, booleans, and floating values no domain draws
    within the OpInfo's declared one). It may require grad where the sample's does (the suite makes
    those its op differentiates require grad: not batch_norm's running statistics). ``Unwritable``
    when fuzzdce has no such tensor."""
    if tensor.dtype not in DTYPE_NAMES:
        raise Unwritable(f"a {tensor.dtype} tensor")
    if tensor.numel() > MAX_NUMEL or tensor.layout != torch.strided:
        raise Unwritable("a large tensor")
    dtype = DTYPE_NAMES[tensor.dtype]
    domain = value_domain(tensor)
    low, high = DRAWN_RANGE.get(domain, (None, None))
    declared_low = -math.inf if declared[0] is None else declared[0]
    declared_high = math.inf if declared[1] is None else declared[1]
    drawn = tensor.is_floating_point() and low is not None and declared_low <= low and high <= declared_high
    if drawn and not keep:
        return TensorInput(tuple(tensor.shape), dtype, domain=domain, requires_grad=tensor.requires_grad), False
    if tensor.numel() > MAX_VALUES:
        raise Unwritable("too many values to keep")
    values = tuple(tensor.detach().cpu().flatten().tolist())
    return TensorInput(tuple(tensor.shape), dtype, domain=domain, values=values, requires_grad=tensor.requires_grad), True


def made(spec: TensorInput, seed: int = 0) -> torch.Tensor:
    """The tensor a program makes for ``spec`` (seeded), not requiring grad (as a plain call makes it)."""
    namespace = {"torch": torch, "g": torch.Generator().manual_seed(seed), "inputs": [], "requires_grad": False}
    return eval(input_expression(spec), namespace)  # noqa: S307 - our own source


def results_of(value: Any) -> list[Any]:
    """A call's results as a program unpacks them: a tuple's (or list's) items, else the value."""
    return list(value) if isinstance(value, (tuple, list)) else [value]


def same_results(first: Any, second: Any) -> bool:
    """Whether two runs' results are equal, NaN where NaN (what tells a random op)."""
    a, b = results_of(first), results_of(second)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if x.is_floating_point() or x.is_complex():
                if not torch.equal(torch.nan_to_num(x, nan=0.5), torch.nan_to_num(y, nan=0.5)):
                    return False
            elif not torch.equal(x, y):
                return False
        elif x != y and not (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
            return False
    return True


@contextlib.contextmanager
def seeded(seed: int = 0) -> Iterator[None]:
    """torch's (CPU), Python's and numpy's global generators seeded, and restored after: the suite's
    sample generators draw from them, and one OpInfo must give the same samples in every process."""
    import numpy as np  # noqa: PLC0415 - the suite's dependency, present where it imports

    state, numpy_state, torch_state = random.getstate(), np.random.get_state(), torch.get_rng_state()
    torch.default_generator.manual_seed(seed)  # not torch.manual_seed: it seeds every device, slowly
    random.seed(seed)
    np.random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)
        np.random.set_state(numpy_state)
        torch.set_rng_state(torch_state)


def written(entry: Entry, args: Sequence[Any], kwargs: Mapping[str, Any], keep: bool) -> OpInfoSample | str:
    """One sample as an ``OpInfoSample``, or why not (``UNWRITABLE``, ``EAGER_REJECTS``, ``RANDOM``,
    ``NO_RESULT``)."""
    writer = _Writer()
    try:
        text = writer.call(entry.call, args, kwargs)
        specs = [leaf_spec(t, keep, entry.domain) for t in writer.tensors]
    except Unwritable:
        return UNWRITABLE
    names = {f"a{k}": k for k in range(len(specs))}
    try:
        step = step_of(ast.parse(text, mode="eval").body, names, 1, unpack=False, line=0)
    except (SyntaxError, UsageError):
        return UNWRITABLE
    tensors = {f"a{k}": made(spec) for k, (spec, _) in enumerate(specs)}
    runs, draws = [], False
    for seed in (1, 2):
        try:
            with seeded(seed), torch.no_grad():
                before = torch.default_generator.get_state()
                runs.append(eval(text, {"torch": torch, **tensors}))  # noqa: S307 - our own source
                # An op that draws from the generator is random, though two seeds may give the same
                # result (fractional_max_pool2d's random windows on a small input often coincide).
                draws = draws or not torch.equal(before, torch.default_generator.get_state())
        except Exception:  # eager rejects it: no program holds it
            return EAGER_REJECTS
    results = results_of(runs[0])
    if not any(isinstance(r, torch.Tensor) and r.dtype in DTYPE_NAMES for r in results) or len(results) > MAX_RESULTS:
        return NO_RESULT
    if any(isinstance(r, torch.Tensor) and (r.layout != torch.strided or r.dtype not in DTYPE_NAMES) for r in results):
        return UNWRITABLE  # a sparse or complex result: nothing the oracles compare, nor a later step reads
    if draws or not same_results(*runs):
        return RANDOM
    return OpInfoSample(
        template=step.template,
        order=tuple(arg.index for arg in step.args),
        leaves=tuple(spec for spec, _ in specs),
        exact=tuple(exact for _, exact in specs),
    )


def singular(opinfo: Any, sample: Any) -> Any | None:
    """``sample`` with half of each floating tensor's elements moved onto the nearest point where
    the op is singular (``singularity_fn``: the signed distance to it), or None where it has none."""
    distance = opinfo.singularity_fn_producer(sample)
    if distance is None:
        return None
    generator = torch.Generator().manual_seed(0)

    def move(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            with torch.no_grad():
                onto = value - distance(value)
                half = torch.rand(value.shape, generator=generator) < 0.5
                moved = torch.where(half & torch.isfinite(onto), onto, value).to(value.dtype)
            return moved.requires_grad_(value.requires_grad)
        if isinstance(value, (tuple, list)):
            return type(value)(move(v) for v in value)
        return value

    return type(sample)(*move(sample.args), **{k: move(v) for k, v in sample.kwargs.items()})


# Where singular points are looked for (``singular_points``): a grid of float64 values, and how many
# of the points found, nearest 0 first, are kept (floor-like functions are singular at every integer).
SINGULAR_GRID = (-10.0, 10.0, 2001)
MAX_SINGULAR_POINTS = 6
# Order statistics no catalog entry calls: their OpInfo steps draw ties as the catalog's do (``ORDER``).
ORDER_BEYOND_CATALOG = frozenset({"max_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"})


def singular_points(opinfo: Any) -> tuple[float, ...]:
    """Where an OpInfo says its op is special, as edge points (``spec.Edges.kinks``): the finite ends
    of its ``domain`` (the suite draws its samples inside them: acos's +-1, rsqrt's 0.1), and the
    points where its ``singularity_fn`` (the signed distance to the nearest singularity, which the
    suite pushes samples away from) is zero.

    The singularity function is asked of its op's defaults (a producer is given a sample of one
    tensor and no keywords: softplus's threshold 20, hardtanh's +-1; one that needs more, min and
    max's, gives none): each value ``x`` of a grid is moved onto ``x - distance(x)``, and a point is
    kept where the distance there is zero, nearest 0 first. Points are exact in float64; the
    catalog's ``edge_values`` rounds them to each dtype and adds their neighbours."""
    low, high = (tuple(opinfo.domain) + (None, None))[:2]
    points = [float(end) for end in (low, high) if end is not None and math.isfinite(end)]
    grid = torch.linspace(*SINGULAR_GRID, dtype=torch.float64)
    try:
        with torch.no_grad():
            distance = opinfo.singularity_fn_producer(SimpleNamespace(args=(grid,), kwargs={}))
            onto = grid - distance(grid) if distance is not None else grid[:0]
            again = distance(onto) if distance is not None else onto
        zeros = onto[torch.isfinite(onto) & (again.abs() <= 1e-9 * (1 + onto.abs()))]
    except Exception:  # a producer that needs a real sample (two tensors, a keyword): no points
        zeros = grid[:0]
    found = sorted({round(float(v), 12) + 0.0 for v in zeros.tolist()}, key=lambda v: (abs(v), v))  # + 0.0: no -0.0
    return tuple(points + [v for v in found[:MAX_SINGULAR_POINTS] if v not in points])


NAMES = {spec.name for spec in CATALOG}


def op_name(dotted: str) -> str:
    """An op's name for comparing sources: the last part of its call, no trailing ``_``
    (``torch.nn.functional.relu`` and ``torch.Tensor.relu_`` are ``relu``)."""
    return dotted.rsplit(".", 1)[-1].strip("_") or dotted


# The ops the catalog's entries call, by ``op_name``.
CATALOG_OPS = frozenset(op_name(spec.torch_name) for spec in CATALOG if spec.torch_name)


def in_catalog(call: str) -> bool:
    """Whether some catalog entry calls the op ``call`` names (by ``op_name``)."""
    return op_name(call) in CATALOG_OPS


# --- the source ----------------------------------------------------------------------------------------


class OpInfoSource:
    """The OpInfos of a Thunder as steps: ``entries`` (those that draw), ``skipped`` (name -> why
    not), and each entry's samples per dtype and kind, made on first use (``samples``). The suite's
    ``properties`` (``tensor_properties``: is_complex, numel) return no tensor: skipped."""

    def __init__(self, opinfos: Iterable[Any], input_dtypes: Sequence[str], properties: Iterable[Any] = ()) -> None:
        from thunder.core.dtypes import to_torch_dtype  # noqa: PLC0415 - Thunder's, imported with the suite
        from thunder.torch import _torch_to_thunder_function_map  # noqa: PLC0415

        functions, methods = public_callables()
        self.total = 0
        self.entries: list[Entry] = []
        self.skipped: dict[str, str] = {}
        self._samples: dict[tuple[str, str, str], tuple[OpInfoSample, ...] | str] = {}
        self._known_edges: dict[str, Edges] | None = None
        seen: dict[str, int] = {}
        properties = {id(p) for p in properties}
        for opinfo in opinfos:
            self.total += 1
            seen[opinfo.name] = seen.get(opinfo.name, 0) + 1
            name = opinfo.name if seen[opinfo.name] == 1 else f"{opinfo.name}_{seen[opinfo.name]}"
            if id(opinfo) in properties:
                self.skipped[name] = NO_TENSOR
                continue
            suite = TORCH_SUITE if isinstance(opinfo, TorchSuiteOpInfo) else THUNDER_SUITE
            if suite == TORCH_SUITE:
                call = opinfo.call
            else:
                call = torch_call(opinfo, functions, methods, _torch_to_thunder_function_map)
            if call is None:
                self.skipped[name] = NO_TORCH_CALL
                continue
            if call.endswith("_") and not call.endswith("__"):
                self.skipped[name] = IN_PLACE
                continue
            if call in DEVICE_CALLS:
                self.skipped[name] = MOVES
                continue
            try:
                supported = {DTYPE_NAMES.get(to_torch_dtype(d)) for d in opinfo.dtypes()}
            except Exception:
                supported = set()
            dtypes = tuple(d for d in input_dtypes if d in supported)
            if not dtypes:
                self.skipped[name] = NO_DTYPE
                continue
            kinds = (SAMPLE,)
            if opinfo.reference_input_generator is not None:
                kinds += (REFERENCE,)
            if opinfo.singularity_fn is not None or getattr(opinfo.singularity_fn_producer, "__name__", "") != "<lambda>":
                kinds += (SINGULARITY,)
            self.entries.append(Entry(name, call, dtypes, kinds, opinfo, tuple(opinfo.domain), suite, rule_of_call(call)))
        # name -> weight of its draw (``programs.weighted``; missing: 1)
        self.weights = {e.name: BEYOND_CATALOG for e in self.entries if not in_catalog(e.call)}

    def known_edges(self) -> dict[str, Edges]:
        """What the OpInfos say of where their ops are special (``singular_points``), as edges by op
        name, made once: for each catalog entry calling an OpInfo's op (by ``op_name``), that OpInfo's
        points; for each OpInfo step (``Entry.op``), its points and the edges of the catalog entries
        calling its op (an order statistic's ties among them), so that a sample's drawn tensors meet
        both. ``strategies.edges.with_known_edges`` merges them into a program's catalog."""
        if self._known_edges is None:
            by_op: dict[str, Edges] = {}
            for entry in self.entries:
                name = op_name(entry.call)
                by_op[name] = by_op.get(name, Edges()).union(Edges(kinks=singular_points(entry.opinfo)))
            from_catalog: dict[str, Edges] = {}
            for spec in CATALOG:
                if spec.edges is not None and spec.torch_name:
                    name = op_name(spec.torch_name)
                    from_catalog[name] = from_catalog.get(name, Edges()).union(spec.edges)
            known: dict[str, Edges] = {}
            for entry in self.entries:
                name = op_name(entry.call)
                edges = by_op[name].union(from_catalog.get(name, Edges()))
                if name in ORDER_BEYOND_CATALOG:
                    edges = edges.union(ORDER)
                if edges.points:
                    known[entry.op] = edges
            for spec in CATALOG:
                edges = by_op.get(op_name(spec.torch_name)) if spec.torch_name else None
                if edges is not None and edges.points:
                    known[spec.name] = edges
            self._known_edges = known
        return self._known_edges

    def samples(self, entry: Entry, dtype: str, kind: str) -> tuple[OpInfoSample, ...] | str:
        """The samples of ``entry`` at ``dtype`` from its ``kind`` of inputs that eager runs, the
        same in every process; or, where there is none, why (the commonest reason among them)."""
        key = (entry.name, dtype, kind)
        if key not in self._samples:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # torch's deprecation notes (torch.cholesky, torch.lu), per sample
                self._samples[key] = self._made(entry, dtype, kind)
        return self._samples[key]

    def _made(self, entry: Entry, dtype: str, kind: str) -> tuple[OpInfoSample, ...] | str:
        from thunder.core.dtypes import to_dtype  # noqa: PLC0415

        opinfo = entry.opinfo
        why: dict[str, int] = {}
        kept: list[OpInfoSample] = []
        try:
            with seeded(0):
                generator = opinfo.reference_inputs if kind == REFERENCE else opinfo.sample_inputs
                # Floating samples as a grad test makes them: the tensors its op differentiates require grad.
                grad = DTYPES[dtype].is_floating_point
                raw = list(itertools.islice(generator("cpu", to_dtype(DTYPES[dtype]), requires_grad=grad), MAX_SAMPLES))
                if kind == SINGULARITY:
                    raw = [s for s in (singular(opinfo, sample) for sample in raw) if s is not None]
        except Exception:  # the suite's generator fails here (a CUDA-only sample, a missing package)
            return UNWRITABLE
        for sample in raw:
            result = written(entry, sample.args, sample.kwargs, keep=kind != SAMPLE)
            if isinstance(result, str):
                why[result] = why.get(result, 0) + 1
            elif result not in kept:
                kept.append(result)
        if kept:
            return tuple(kept)
        return max(why, key=why.get) if why else UNWRITABLE

    def describe(self, rate: float) -> dict[str, Any]:
        """What summary.json says of the source: the rate, how many OpInfos draw, which are skipped
        and why, and which draw a torch op no catalog entry calls (``beyond_catalog``)."""
        skipped: dict[str, list[str]] = {}
        for name, why in self.skipped.items():
            skipped.setdefault(why, []).append(name)
        return {
            "rate": rate,
            "opinfos": self.total,
            "usable": len(self.entries),
            "skipped": skipped,
            "beyond_catalog": sorted(e.name for e in self.entries if not in_catalog(e.call)),
            "suites": {suite: sorted(e.name for e in self.entries if e.suite == suite) for suite in SUITES},
        }


# --- once per process ----------------------------------------------------------------------------------

_LOADED: dict[str, OpInfoSource | None] = {}


def source(input_dtypes: Sequence[str]) -> OpInfoSource | None:
    """This process's OpInfo source, ``thunder.tests.opinfos`` imported on the first call (seconds);
    None where this Thunder has none (``available``) or it fails to import. Its entries' dtypes are
    in ``input_dtypes``' order, the program strategy's (``programs.INPUT_DTYPES``): one order per
    process, or one seed would draw other programs in another."""
    if "source" in _LOADED and _LOADED.get("dtypes") != tuple(input_dtypes):
        raise ValueError(f"the OpInfo source was made for dtypes {_LOADED.get('dtypes')}, not {tuple(input_dtypes)}")
    if "source" not in _LOADED:
        _LOADED["dtypes"] = tuple(input_dtypes)
        suites: list[Any] = []
        properties: Iterable[Any] = ()
        if available() is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from thunder.tests import opinfos  # noqa: PLC0415 - seconds: only when OpInfo steps are on

                suites.extend(opinfos.opinfos)
                properties = getattr(opinfos, "tensor_properties", ())
            except Exception:  # noqa: S110 - a suite that does not import here: the other, or the catalog alone
                pass
        if torch_available() is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    from torch.testing._internal.common_methods_invocations import op_db  # noqa: PLC0415 - seconds

                suites.extend(torch_suite_opinfos(op_db, auto_registered_calls()))
            except Exception:  # noqa: S110 - torch's suite does not import here: Thunder's alone
                pass
        _LOADED["source"] = OpInfoSource(suites, input_dtypes, properties) if suites else None
    return _LOADED["source"]


def describe_source(rate: float, input_dtypes: Sequence[str]) -> dict[str, Any] | None:
    """What summary.json says of a campaign's OpInfo source (``OpInfoSource.describe``; loaded if
    no program drew from it yet): None when off (``rate`` 0), why not where this Thunder has none."""
    if rate <= 0:
        return None
    found = source(input_dtypes)
    if found is not None:
        return found.describe(rate)
    return {"rate": rate, "unavailable": available() or f"{MODULE} does not import here"}


# --- the report's lines ----------------------------------------------------------------------------------


def rejected_counts(dropped: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """why -> {OpInfo name: times drawn} of the OpInfo steps dropped as rejected (``REJECTED_NOTE``)."""
    found: dict[str, dict[str, int]] = {}
    for name, n in dropped.items():
        if name.startswith(PREFIX) and REJECTED_NOTE in name:
            op, why = name.removeprefix(PREFIX).split(REJECTED_NOTE, 1)
            found.setdefault(why, {})[op] = found.get(why, {}).get(op, 0) + n
    return found


SHOWN = 12  # OpInfos named on the report's line; summary.json's ``op_counts`` has them all


def source_lines(op_counts: Mapping[str, int], described: Mapping[str, Any] | None, dropped: Mapping[str, int]) -> list[str]:
    """The report's ops reached by source: catalog entries and OpInfos drawn (those calling an op
    no catalog entry calls named), the OpInfos skipped and why, those drawn and rejected."""
    catalog = sum(1 for op in op_counts if op in NAMES)
    line = f"ops reached by source: catalog {catalog} of {len(NAMES)} entries"
    if not described:
        return [line + "; OpInfo off"]
    if "unavailable" in described:
        return [line + f"; OpInfo unavailable ({described['unavailable']})"]
    reached = sorted(op.removeprefix(PREFIX) for op in op_counts if op.startswith(PREFIX))
    beyond = [name for name in reached if name in set(described.get("beyond_catalog", ()))]
    line += f"; OpInfo {len(reached)} of {described['usable']} usable OpInfos (in {described['rate']:.0%} of programs"
    suites = described.get("suites", {})
    if suites:
        parts = [f"{suite}'s {len(set(reached) & set(names))} of {len(names)}" for suite, names in suites.items() if names]
        line += ": " + ", ".join(parts)
    line += ")"
    if beyond:
        named = ", ".join(beyond[:SHOWN]) + (f", ... ({len(beyond) - SHOWN} more)" if len(beyond) > SHOWN else "")
        line += f", {len(beyond)} calling an op no catalog entry calls: {named}"
    lines = [line]
    skipped = described.get("skipped", {})
    if skipped:
        total = sum(len(names) for names in skipped.values())
        parts = [f"{why} {len(names)}" for why, names in sorted(skipped.items(), key=lambda kv: -len(kv[1]))]
        lines.append(f"OpInfos skipped: {total} of {described['opinfos']} ({'; '.join(parts)})")
    rejected = rejected_counts(dropped)
    if rejected:
        parts = [f"{why}: {', '.join(sorted(names))}" for why, names in sorted(rejected.items())]
        total = sum(len(names) for names in rejected.values())
        lines.append(f"OpInfos drawn and rejected (dropped, never run): {total} ({'; '.join(parts)})")
    return lines

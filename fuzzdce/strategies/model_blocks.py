"""Model blocks as programs: the attention, MLP, norm, rotary and expert blocks of the models
Thunder ships in its wheel (``thunder/tests/*_model.py``), at tiny sizes, as program sources.

Random catalog programs rarely look like what Thunder's users compile: a causal attention is a
linear, a split, three views and transposes fed to ``scaled_dot_product_attention``, shapes read
back from ``x.size()``. Here each block of ``BLOCKS`` (one declarative entry: its model file and
class, a tiny configuration, its data inputs' shapes as functions of batch and sequence length) is
turned once per process into a plain-torch ``Program`` (``traced``): ``torch.fx`` traces the
module through every submodule (an ``nn.Linear`` is its ``F.linear`` call), its parameters and
buffers become inputs of the program, and each call becomes one step written as torch source. Nothing is
hand-written, so a new block is one entry, and a model file that changes changes its program.

A campaign draws a block in a share of programs (``--block-rate``) and mutates it
(``block_programs``): one step swapped for a catalog op of the same result shape and dtype, or a
catalog op inserted after one (``x`` becomes ``f(x)`` from there on), or one step made in place;
then the batch and sequence length, one floating dtype for the block (``model.to(dtype)``; rarely
one input in another), and per floating input whether a grad call makes it require grad. The
result is plain torch source like any program, so shrinking, standalone scripts and ``fuzzdce
minify`` read it unchanged, and each finding reduces to a plain program. A mutated block that eager
itself rejects (plain call or grad call) is dropped, counted (``Program.dropped``: ``block:NAME
rejected: WHY``) and never run: the program is drawn from the catalog instead. A block whose model
file is absent (an older Thunder, a model needing a package not installed) or that ``torch.fx``
cannot trace is skipped with why (``BlockSource.skipped``; ``fuzzdce doctor`` says so).

Each block step's ``Step.op`` is ``block:`` + the block's name + ``/`` + the op's name
(``block:nanogpt.CausalSelfAttention/scaled_dot_product_attention``): what the report's ops reached
by source count.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import math
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import hypothesis.strategies as st
import torch
import torch.fx
from torch.fx import Node as FxNode

from fuzzdce.core.program import (
    Domain,
    Program,
    Step,
    TensorInput,
    with_input,
    with_step_inserted,
)
from fuzzdce.core.program_source import DTYPE_NAMES, step_of, value_domain
from fuzzdce.strategies.catalog import CATALOG
from fuzzdce.strategies.opinfo import made, public_callables
from fuzzdce.strategies.programs import (
    chance,
    index_choice,
    infer,
    input_metas,
    meta_of,
    programs,
    rarely,
    steps_for,
)
from fuzzdce.strategies.spec import Meta, OpSpec, choose

PREFIX = "block:"  # a block step's ``Step.op``: PREFIX + block name + "/" + op name
MODELS = "thunder.tests"  # where Thunder's wheel ships its model files
# The share of programs drawn as a mutated model block, by default: none (docs/extending.md says why).
DEFAULT_BLOCK_RATE = 0.0
REJECTED_NOTE = " rejected: "  # a dropped block's name: ``block:NAME rejected: WHY`` (``Program.dropped``)
NOT_APPLIED_NOTE = " not applied: "  # a mutation that found no step to change: the block runs unmutated
TRACE_BATCH, TRACE_SEQ = 2, 4  # the sizes a block is traced at; its metas (what mutations fit) are these
MAX_VALUES = 128  # a buffer (a mask, a rope cache) keeps its values up to this many, else is drawn
# The dtypes a block is drawn in, float32 first (what everything shrinks to).
BLOCK_DTYPES = ("float32", "float64", "bfloat16", "float16")
# The structural mutations, in shrinking order: none first.
NONE, SWAP, INSERT, IN_PLACE = "none", "swap", "insert", "in place"
MUTATIONS = (NONE, SWAP, INSERT, IN_PLACE)
# Catalog families a swapped or inserted op is drawn from: ops whose result may keep their first
# operand's shape and dtype (the step's or value's replacement must, or the rest of the block breaks).
SHAPE_KEEPING_FAMILIES = frozenset({"unary", "activation", "binary", "ternary", "nn"})


def tokens(width: int) -> Callable[[int, int], tuple[int, ...]]:
    """A (batch, sequence, width) activation."""
    return lambda batch, seq: (batch, seq, width)


@dataclasses.dataclass(frozen=True)
class Data:
    """A data input of a block (a parameter of its ``forward``, in order): its shape at a batch
    size and sequence length, and the domain its values are drawn from."""

    shape: Callable[[int, int], tuple[int, ...]]
    domain: Domain = Domain.REAL


@dataclasses.dataclass(frozen=True)
class Block:
    """One model block: its name, the model file it is in (a module of ``MODELS``), how to build it
    at a tiny size from that module, its data inputs, and the batch and sequence lengths its shapes
    take (``resizable``: False where a traced constant fixes them)."""

    name: str
    model: str
    build: Callable[[ModuleType], torch.nn.Module]
    inputs: tuple[Data, ...]
    max_batch: int = 3
    max_seq: int = 8
    resizable: bool = True


class RoutedAs(torch.nn.Module):
    """A grouped experts module with its tokens per expert fixed (a router's output, which
    ``torch.fx`` cannot trace through: ``tolist()``), so that its experts' matmuls trace."""

    def __init__(self, experts: torch.nn.Module, tokens_per_expert: list[int]) -> None:
        super().__init__()
        self.experts = experts
        self.tokens_per_expert = tokens_per_expert

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return self.experts(hidden_states, self.tokens_per_expert)


def _nanogpt(module: ModuleType, **config: Any) -> Any:
    return module.GPTConfig(**{"n_embd": 16, "n_head": 2, "block_size": 8, "dropout": 0.0, "bias": True, **config})


def _llama2(module: ModuleType) -> Any:
    return module.ModelArgs(dim=16, n_heads=4, n_kv_heads=2, multiple_of=8, max_seq_len=8, norm_eps=1e-5)


def _litgpt(module: ModuleType) -> Any:
    return module.Config.from_name("llama2-like", n_embd=16, n_head=4, n_query_groups=2, intermediate_size=24, block_size=8)


ROPE = Domain.UNIT  # cos and sin of the rotary angles lie in [-1, 1]

BLOCKS: tuple[Block, ...] = (
    Block("nanogpt.LayerNorm", "nanogpt_model", lambda m: m.LayerNorm(16, bias=True), (Data(tokens(16)),)),
    Block("nanogpt.CausalSelfAttention", "nanogpt_model", lambda m: m.CausalSelfAttention(_nanogpt(m)), (Data(tokens(16)),)),
    Block("nanogpt.MLP", "nanogpt_model", lambda m: m.MLP(_nanogpt(m)), (Data(tokens(16)),)),
    Block("nanogpt.Block", "nanogpt_model", lambda m: m.Block(_nanogpt(m, bias=False)), (Data(tokens(16)),)),
    Block("llama2.RMSNorm", "llama2_model", lambda m: m.RMSNorm(16, eps=1e-5), (Data(tokens(16)),)),
    Block(
        "llama2.Attention",
        "llama2_model",
        lambda m: m.Attention(_llama2(m)),
        (Data(tokens(16)), Data(lambda b, t: (t, 2), ROPE), Data(lambda b, t: (t, 2), ROPE)),
    ),
    Block("llama2.FeedForward", "llama2_model", lambda m: m.FeedForward(16, None, 8, 0.0), (Data(tokens(16)),)),
    Block(
        "llama2.TransformerBlock",
        "llama2_model",
        lambda m: m.TransformerBlock(0, _llama2(m)),
        (Data(tokens(16)), Data(lambda b, t: (t, 2), ROPE), Data(lambda b, t: (t, 2), ROPE)),
    ),
    Block(
        "bart.BartAttention",
        "hf_bart_self_attn",
        lambda m: m.BartAttention(16, 2),
        (Data(tokens(16)), Data(lambda b, t: (b, 1, t, t))),  # an additive mask
    ),
    Block("llama4.SwiGLU", "llama4_moe", lambda m: m.SwiGLU(16, 24, torch.float32, "cpu"), (Data(tokens(16)),)),
    Block(
        "llama4.GroupedSwiGLU",
        "llama4_moe",
        lambda m: RoutedAs(m.GroupedSwiGLU(3, 16, 8, torch.float32, "cpu"), [2, 1, 3]),
        (Data(lambda b, t: (6, 16)),),
        resizable=False,  # three experts' tokens: 2, 1, 3 rows, fixed when traced
    ),
    Block(
        "llama4.Llama4MoE",
        "llama4_moe",
        lambda m: m.Llama4MoE(m.Config("tiny", 16, 8, 3, 1, torch.float32, "cpu")),
        (Data(tokens(16)),),
    ),
    Block("litgpt.Block", "litgpt_model", lambda m: m.Block(_litgpt(m), block_idx=0), (Data(tokens(16)),)),
)


def model_file(block: Block) -> str:
    return f"{MODELS}.{block.model}"


def model_files_missing(blocks: Sequence[Block] = BLOCKS) -> dict[str, str]:
    """Model file -> why it does not import here (absent from this Thunder, or a package it needs
    not installed), for each model file one of ``blocks`` is in; empty when every one imports."""
    missing: dict[str, str] = {}
    for name in dict.fromkeys(model_file(b) for b in blocks):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(name)
        except ImportError as e:
            missing[name] = f"{type(e).__name__}: {e}"
    return missing


# --- a traced block as a program --------------------------------------------------------------------


class _ThroughEveryModule(torch.fx.Tracer):
    """Traces into every submodule (``nn.Linear`` is its ``F.linear`` call, its parameters
    ``get_attr``s): what a program computes is then torch calls only."""

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return False


class Untraceable(Exception):
    """A block that is no plain torch program: ``torch.fx`` cannot trace it, or it calls what
    has no public torch name."""


BINARY = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
}


class _Source:
    """Writes one fx node as a torch expression, the values it reads named ``v{index}``."""

    def __init__(self, index: Mapping[torch.fx.Node, int]) -> None:
        self.index = index
        self.functions, _ = public_callables()

    def write(self, value: Any, *, subscript: bool = False) -> str:
        if isinstance(value, torch.fx.Node):
            return f"v{self.index[value]}"
        if isinstance(value, slice):
            return self.write_slice(value, subscript=subscript)
        if isinstance(value, (tuple, list)):
            inner = ", ".join(self.write(v) for v in value)
            if isinstance(value, list):
                return f"[{inner}]"
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        if value is Ellipsis:
            return "..."
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f"float({str(value)!r})"
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, (torch.dtype, torch.memory_format, torch.layout)):
            return str(value)
        raise Untraceable(f"a {type(value).__name__} argument")

    def callable_name(self, target: Any) -> str:
        if id(target) in self.functions:
            return self.functions[id(target)]
        dotted = f"{getattr(target, '__module__', '')}.{getattr(target, '__name__', '')}"
        with contextlib.suppress(Exception):
            if dotted.startswith("torch.") and eval(dotted, {"torch": torch}) is target:  # noqa: S307 - torch's own name
                return dotted
        raise Untraceable(f"calls {dotted.strip('.')}, which no public torch name calls")

    def write_slice(self, piece: slice, *, subscript: bool) -> str:
        """``a:b:c`` inside a subscript, else ``slice(a, b, c)``."""
        if subscript:
            parts = ["" if p is None else self.write(p) for p in (piece.start, piece.stop, piece.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if parts[2] else "")
        return f"slice({self.write(piece.start)}, {self.write(piece.stop)}, {self.write(piece.step)})"

    def expression(self, node: FxNode) -> str:
        args, kwargs = node.args, node.kwargs
        if node.op == "call_method":
            rest = [self.write(a) for a in args[1:]] + [f"{k}={self.write(v)}" for k, v in kwargs.items()]
            return f"{self.write(args[0])}.{node.target}({', '.join(rest)})"
        target = node.target
        if target in BINARY and len(args) == 2 and not kwargs:
            return f"{self.write(args[0])} {BINARY[target]} {self.write(args[1])}"
        if target is operator.neg:
            return f"-{self.write(args[0])}"
        if target is operator.getitem:
            index = args[1]
            items = (
                [self.write(i, subscript=True) for i in index]
                if isinstance(index, tuple)
                else [self.write(index, subscript=True)]
            )
            return f"{self.write(args[0])}[{', '.join(items)}{',' if isinstance(index, tuple) and len(index) == 1 else ''}]"
        if target is getattr and len(args) == 2 and isinstance(args[1], str):
            return f"{self.write(args[0])}.{args[1]}"
        written = [self.write(a) for a in args] + [f"{k}={self.write(v)}" for k, v in kwargs.items()]
        return f"{self.callable_name(target)}({', '.join(written)})"


@dataclasses.dataclass(frozen=True)
class TracedBlock:
    """A block as a program at the traced sizes: how many of its first inputs are data (the rest
    are its parameters and buffers), and the metas of its values there (what a mutation fits to)."""

    block: Block
    program: Program
    data: int
    metas: tuple[Meta | None, ...]


def _parameter_spec(tensor: torch.Tensor, learnable: bool) -> TensorInput:
    """A parameter (drawn in the domain its initial values lie in, requiring grad) or a buffer
    (values kept when few: a mask, a rope cache; never requiring grad)."""
    dtype = DTYPE_NAMES.get(tensor.dtype)
    if dtype is None:
        raise Untraceable(f"a {tensor.dtype} parameter")
    domain = value_domain(tensor)
    if learnable or not 0 < tensor.numel() <= MAX_VALUES:
        return TensorInput(tuple(tensor.shape), dtype, domain=domain, requires_grad=learnable)
    values = tuple(tensor.detach().flatten().tolist())
    return TensorInput(tuple(tensor.shape), dtype, domain=domain, values=values, requires_grad=False)


def _unpacked_by_index(node: torch.fx.Node, value: Any) -> bool:
    """Whether every user of ``node`` takes one item of its tuple (``q, k, v = x.split(...)``)."""
    if not isinstance(value, (tuple, list)) or not value or not node.users:
        return False
    return all(
        u.op == "call_function"
        and u.target is operator.getitem
        and isinstance(u.args[1], int)
        and -len(value) <= u.args[1] < len(value)
        for u in node.users
    )


def traced(block: Block) -> TracedBlock:
    """``block`` as a plain-torch program: each placeholder a data input, each parameter or buffer
    read an input after them, each call one step (its value computed as the program computes it, so
    a tuple read item by item is unpacked and the metas are eager's). ``Untraceable`` when it is none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = importlib.import_module(model_file(block))
    root = block.build(module)
    try:
        graph = _ThroughEveryModule().trace(root)
    except Exception as e:
        raise Untraceable(f"torch.fx cannot trace it ({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(block.inputs):
        raise Untraceable(f"{len(placeholders)} forward arguments, {len(block.inputs)} data inputs declared")
    attributes = list(dict.fromkeys(n.target for n in graph.nodes if n.op == "get_attr"))
    learnable = dict(root.named_parameters())
    inputs = [TensorInput(d.shape(TRACE_BATCH, TRACE_SEQ), domain=d.domain) for d in block.inputs]
    for name in attributes:
        tensor = root.get_parameter(name) if name in learnable else root.get_buffer(name)
        inputs.append(_parameter_spec(tensor, name in learnable))
    index: dict[torch.fx.Node, int] = {n: k for k, n in enumerate(placeholders)}
    by_attribute = {name: len(placeholders) + k for k, name in enumerate(attributes)}
    values: dict[int, Any] = {k: made(spec) for k, spec in enumerate(inputs)}
    writer, steps, outputs = _Source(index), [], None
    for node in graph.nodes:
        if node.op == "get_attr":
            index[node] = by_attribute[node.target]
        elif node in index or node.op == "placeholder":
            continue
        elif node.op == "output":
            returned = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
            if not all(isinstance(r, torch.fx.Node) and isinstance(values.get(index.get(r)), torch.Tensor) for r in returned):
                raise Untraceable("it returns something other than tensors")
            outputs = tuple(index[r] for r in returned)
        elif node.op in ("call_function", "call_method"):
            text = writer.expression(node)
            names = {f"v{k}": k for k in values}
            step = step_of(ast.parse(text, mode="eval").body, names, 1, unpack=False, line=0)
            first = len(values)
            env = {"torch": torch, **{f"v{k}": v for k, v in values.items()}}
            try:
                exec(step.line(first), env)  # noqa: S102 - our own source
            except Exception as e:
                raise Untraceable(f"eager rejects `{text}` at the traced sizes ({type(e).__name__})") from None
            result = env[f"v{first}"]
            op = f"{PREFIX}{block.name}/{step.op}"
            if _unpacked_by_index(node, result):
                step = dataclasses.replace(step, n_out=len(result), unpack=True)
                for k, item in enumerate(result):
                    values[first + k] = item
                for user in node.users:
                    index[user] = first + user.args[1] % len(result)
            else:
                values[first] = result
            index[node] = first
            steps.append(dataclasses.replace(step, op=op))
        else:
            raise Untraceable(f"an fx {node.op} node")
    program = Program(tuple(inputs), tuple(steps), outputs or (), name="program")
    metas = list(input_metas(program.inputs))
    metas += [meta_of(values[k]) for k in range(len(inputs), len(values))]
    return TracedBlock(block, program, len(placeholders), tuple(metas))


class BlockSource:
    """The blocks of this Thunder's model files as programs (``traced``), and those skipped with why."""

    def __init__(self, blocks: Sequence[Block] = BLOCKS) -> None:
        self.total = len(blocks)
        self.traced: list[TracedBlock] = []
        self.skipped: dict[str, str] = {}
        missing = model_files_missing(blocks)
        for block in blocks:
            if model_file(block) in missing:
                self.skipped[block.name] = f"{model_file(block)} does not import here ({missing[model_file(block)]})"
                continue
            try:
                self.traced.append(traced(block))
            except Untraceable as e:
                self.skipped[block.name] = str(e)


_LOADED: dict[str, BlockSource] = {}


def source() -> BlockSource:
    """This process's blocks, traced on the first call (3-4 s, the model files imported)."""
    if "source" not in _LOADED:
        _LOADED["source"] = BlockSource()
    return _LOADED["source"]


# --- mutations ---------------------------------------------------------------------------------------

SHAPE_KEEPING = tuple(spec for spec in CATALOG if spec.family in SHAPE_KEEPING_FAMILIES)


def _fits(metas: Sequence[Meta | None], value: int, results: tuple) -> bool:
    """Whether a step's results can stand for ``value``: one tensor of its shape and dtype."""
    return (
        len(results) == 1
        and meta_of(results[0]) is not None
        and (meta_of(results[0]).shape, meta_of(results[0]).dtype)
        == (
            metas[value].shape,
            metas[value].dtype,
        )
    )


def _floating(meta: Meta | None) -> bool:
    return meta is not None and not meta.is_python and meta.dtype in BLOCK_DTYPES


def _with_step_replaced(program: Program, at: int, step: Step) -> Program:
    """``program`` with step ``at`` replaced by ``step`` (one result, as the step it replaces); what
    only the old step read stays, dead code (a DCE's work), so the block's data inputs stay first."""
    return dataclasses.replace(program, steps=(*program.steps[:at], step, *program.steps[at + 1 :]))


@st.composite
def swapped(draw, traced_block: TracedBlock, catalog: Sequence[OpSpec] = SHAPE_KEEPING):
    """The block with one single-result step computing a floating tensor replaced by a catalog op
    reading that step's first operand, whose result has the same shape and dtype; or why not."""
    program, metas = traced_block.program, traced_block.metas
    candidates = [
        i
        for i, s in enumerate(program.steps)
        if s.n_out == 1 and s.refs() and _floating(metas[program.first_value(i)]) and _floating(metas[s.refs()[0]])
    ]
    if not candidates:
        return f"{SWAP}: no step to swap"
    at = candidates[draw(index_choice()) % len(candidates)]
    spec = draw(choose(catalog))
    before = list(metas[: program.first_value(at)])
    step = draw(steps_for(spec, before, first=program.steps[at].refs()[0]))
    inferred = None if step is None else infer(step, before)
    if inferred is None or not _fits(metas, program.first_value(at), inferred[1]):
        return f"{SWAP}: {spec.name} does not fit step {at}"
    return _with_step_replaced(program, at, inferred[0])


@st.composite
def inserted(draw, traced_block: TracedBlock, catalog: Sequence[OpSpec] = SHAPE_KEEPING):
    """The block with a catalog op applied to one floating tensor a step computes, right after that
    step, its result read instead of the value from there on; or why not."""
    program, metas = traced_block.program, traced_block.metas
    values = [v for v in range(len(program.inputs), len(metas)) if _floating(metas[v])]
    if not values:
        return f"{INSERT}: no value to wrap"
    value = values[draw(index_choice()) % len(values)]
    after = program.producers()[value] + 1
    spec = draw(choose(catalog))
    before = list(metas[: program.first_value(after)])
    step = draw(steps_for(spec, before, first=value))
    inferred = None if step is None else infer(step, before)
    if inferred is None or not _fits(metas, value, inferred[1]):
        return f"{INSERT}: {spec.name} does not fit v{value}"
    return with_step_inserted(program, after, inferred[0], value)


# A step's call and its in-place form: ``torch.NAME(x, ...)`` and ``x.NAME(...)`` as ``x.NAME_(...)``
# where a Tensor has that method; ``x + y`` as ``x.add_(y)``.
IN_PLACE_OPERATORS = {"+": "add_", "-": "sub_", "*": "mul_", "/": "div_"}


def in_place_template(step: Step) -> str | None:
    """``step``'s template written in place on its first operand, or None when it has no in-place form."""
    head, _, rest = step.template.partition("(")
    if step.template.startswith("{0}.") and rest.endswith(")") and hasattr(torch.Tensor, head[4:] + "_"):
        return "{0}." + head[4:] + "_(" + rest
    if head.startswith("torch.") and head.count(".") == 1 and rest.startswith("{0}") and hasattr(torch.Tensor, head[6:] + "_"):
        remainder = rest[3:].removeprefix(", ")
        return "{0}." + head[6:] + "_(" + remainder
    parts = step.template.split(" ")
    if len(parts) == 3 and parts[0] == "{0}" and parts[1] in IN_PLACE_OPERATORS:
        return "{0}." + IN_PLACE_OPERATORS[parts[1]] + "(" + parts[2] + ")"
    return None


@st.composite
def made_in_place(draw, traced_block: TracedBlock):
    """The block with one step that has an in-place form done in place on its first operand, a
    value another step computed (never an input: a program writes its inputs only through the
    aliases the catalog draws), its result of that operand's shape and dtype; or why not."""
    program, metas = traced_block.program, traced_block.metas
    candidates = []
    for i, step in enumerate(program.steps):
        template = in_place_template(step) if step.n_out == 1 and step.refs() else None
        target = step.refs()[0] if template else None
        if template and target >= len(program.inputs) and _floating(metas[target]):
            result = metas[program.first_value(i)]
            if result is not None and (result.shape, result.dtype) == (metas[target].shape, metas[target].dtype):
                candidates.append((i, template))
    if not candidates:
        return f"{IN_PLACE}: no step with an in-place form"
    at, template = candidates[draw(index_choice()) % len(candidates)]
    return _with_step_replaced(program, at, dataclasses.replace(program.steps[at], template=template))


MUTATE = {SWAP: swapped, INSERT: inserted, IN_PLACE: lambda traced_block: made_in_place(traced_block)}


def eager_rejects(program: Program) -> str | None:
    """Why eager rejects ``program`` (its plain call, or its grad call forward and backward), or
    None: a block mutated into what eager refuses is no program, and is never run."""
    function = program.function()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            function(*program.make_inputs())
            inputs = program.make_inputs(requires_grad=True)
            outputs = [o for o in function(*inputs) if isinstance(o, torch.Tensor) and o.requires_grad]
            if outputs:
                torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}".rstrip(": ")
    return None


@st.composite
def block_programs(draw, blocks: BlockSource):
    """A block (``choose``: shrinks to the first), one structural mutation or none (shrinks to
    none), its batch and sequence length (shrink to 1), its dtype (shrinks to float32; one input in
    eight programs another), whether each floating input requires grad (shrinks to yes), a seed.
    Returns ``(program, notes)``: the mutated block, or None where eager rejects it; notes say
    which mutation found nothing to change, or why eager rejects it (``Program.dropped``)."""
    traced_block = draw(choose(blocks.traced))
    block, notes = traced_block.block, []
    mutation = draw(st.sampled_from(MUTATIONS))
    program = traced_block.program
    if mutation != NONE:
        changed = draw(MUTATE[mutation](traced_block))
        if isinstance(changed, Program):
            program = changed
        else:
            notes.append(f"{PREFIX}{block.name}{NOT_APPLIED_NOTE}{changed.split(':')[0]}")
    if block.resizable:
        batch, seq = draw(st.integers(1, block.max_batch)), draw(st.integers(1, block.max_seq))
        for k in range(traced_block.data):
            program = with_input(program, k, shape=block.inputs[k].shape(batch, seq))
    dtype = draw(st.sampled_from(BLOCK_DTYPES))
    floating = [k for k, spec in enumerate(program.inputs) if isinstance(spec, TensorInput) and spec.dtype in BLOCK_DTYPES]
    for k in floating:
        program = with_input(program, k, dtype=dtype)
    if floating and draw(rarely(8)):  # mixed precision: one input in another dtype
        k = floating[draw(index_choice()) % len(floating)]
        program = with_input(program, k, dtype=draw(st.sampled_from(BLOCK_DTYPES)))
    for k in floating:
        program = with_input(program, k, requires_grad=program.inputs[k].requires_grad and not draw(rarely()))
    program = dataclasses.replace(program, seed=draw(st.integers(0, 2**16)))
    why = eager_rejects(program)
    if why is not None:
        return None, (*notes, f"{PREFIX}{block.name}{REJECTED_NOTE}{mutation}: {why.split(':')[0]}")
    return program, tuple(notes)


@st.composite
def programs_with_blocks(draw, *, block_rate: float = DEFAULT_BLOCK_RATE, blocks: BlockSource | None = None, **options):
    """``programs(**options)``, but in a share ``block_rate`` a mutated model block instead
    (``block_programs``); a block eager rejects is dropped and counted (``Program.dropped``), and the
    program drawn from the catalog instead."""
    notes: tuple[str, ...] = ()
    if block_rate > 0:
        blocks = blocks if blocks is not None else source()
        if blocks.traced and draw(chance(block_rate)):
            program, notes = draw(block_programs(blocks))
            if program is not None:
                return dataclasses.replace(program, dropped=notes)
    program = draw(programs(**options))
    return dataclasses.replace(program, dropped=(*notes, *program.dropped)) if notes else program


# --- the report's lines ----------------------------------------------------------------------------


def block_of(op: str) -> str | None:
    """The block a step's op was traced from (``block:NAME/op``), or None for any other step."""
    return op.removeprefix(PREFIX).split("/", 1)[0] if op.startswith(PREFIX) else None


def reached_part(op_counts: Mapping[str, int]) -> str:
    """The report's ops reached by source, for blocks: how many blocks and distinct ops programs
    drew from them (empty when none)."""
    blocks = {block_of(op) for op in op_counts} - {None}
    if not blocks:
        return ""
    ops = {op.split("/", 1)[1] for op in op_counts if op.startswith(PREFIX)}
    return f"; model blocks {len(blocks)} of {len(BLOCKS)} ({', '.join(sorted(blocks))}), {len(ops)} distinct ops in them"


def dropped_lines(dropped: Mapping[str, int]) -> list[str]:
    """The report's blocks drawn and dropped because eager rejects their mutation, and mutations
    that found nothing to change (the block then ran unmutated)."""
    lines = []
    for note, words in (
        (REJECTED_NOTE, "model blocks drawn and rejected by eager (dropped, never run)"),
        (NOT_APPLIED_NOTE, "block mutations not applied (the block ran unmutated)"),
    ):
        found: dict[str, int] = {}
        for name, n in dropped.items():
            if name.startswith(PREFIX) and note in name:
                why = name.removeprefix(PREFIX).split(note, 1)[1]
                found[why] = found.get(why, 0) + n
        if found:
            lines.append(f"{words}: {sum(found.values())} ({'; '.join(f'{w} {n}' for w, n in sorted(found.items()))})")
    return lines

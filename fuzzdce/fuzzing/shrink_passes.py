"""Shrink passes: every way fuzzdce has of making a failing program smaller, each registered by name
(``NAMED_PASSES``, by ``shrink_pass`` or ``candidate_pass``; its docstring says what it does).

``reduce`` runs ``PASSES`` (the campaign's shrinking, ``fuzzdce minify``'s last step), the passes
PyTorch's ``fx_minifier`` runs, in its order:

1. drop a statement whose results nothing reads (``drop_dead``);
2. drop an input nothing reads, and a returned value beyond the first (``drop_unused_inputs``,
   ``drop_outputs``);
3. move the return earlier: the program cut after a statement, returning what it defines
   (``truncations``: ``Program.prefix``);
4. delta-debug ranges of statements: each removed statement's results that later ones read become
   fresh inputs of the same shape and dtype (``program.without_range``);
5. reduce inside a statement (``SUB_STATEMENT``): a call or operator gives way to one of its
   arguments (``call_to_argument``: ``torch.matmul(v0, w) + v1.sum(0)`` to ``torch.matmul(v0, w)``),
   a keyword goes back to its default (``keyword_to_default``), an operand becomes a constant
   (``operand_to_constant``), whatever then goes unread going with it;
6. for ``fuzzdce minify`` (``INPUT_PASSES``; a campaign's inputs are Hypothesis's to shrink): smaller
   shapes, the tensor inputs' dims halved, all together, then one input's (``halve_shapes``), a
   user's values cut to their leading block; and a user's values drawn instead (``redraw_values``).

Before them, ``fuzzdce minify`` runs the whole-program passes once each (``apply``), in the same
order at a coarser grain: every dead statement and unread input at once (``dead_and_unused``), each
returned value alone (``single_outputs``), the shortest failing prefix by binary search
(``truncate``), delta debugging over windows of statements (``ddmin``).

A candidate is kept only when it is ``smaller`` (fewer statements, inputs, less source, then fewer
input elements) and ``fails(candidate)`` (the caller's replay: the same failure, on the same
configuration, so a step inside a statement is kept only where the fault holds); ``reduce``
counts what each pass took, by name. Nothing is guessed: a dead statement can matter
(``torch.frexp(v1)[1]`` alone does not fail where the program with its dead twin does), so every
candidate is replayed. Pure functions of ``Program``, made of ``core.program``'s arithmetic
(``rebuilt``, ``without_range``, ``with_step``): the shrinker (``shrinking``) and the minifier
(``minify``) supply the replay, ``tests/test_shrink_passes.py`` a stand-in.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterator

import torch

from fuzzdce.core.findings import size
from fuzzdce.core.program import (
    DTYPES,
    Program,
    Step,
    TensorInput,
    read_inputs,
    rebuilt,
    views_follow_bases,
    with_step,
    without_range,
    without_steps,
)
from fuzzdce.core.program_source import ARGUMENT_NAME, KEYWORD_NAME, expression_of, op_name, reads_a_value

Fails = Callable[[Program], bool]
# A shrink pass: from a failing program, a smaller one that still ``fails``, or None when it finds none.
Pass = Callable[[Program, Fails], "Program | None"]
Candidates = Callable[[Program], Iterator[Program]]

# Every shrink pass, by name: what ``reduce`` and ``fuzzdce minify`` compose, and what
# ``reduce``'s ``taken`` counts (as Hypothesis's shrinker defines its passes, ``defines_shrink_pass``).
NAMED_PASSES: dict[str, Pass] = {}


def shrink_pass(run: Pass) -> Pass:
    """Register ``run`` as the shrink pass named by its function's name; its docstring says what
    the pass does."""
    if run.__name__ in NAMED_PASSES or not run.__doc__:
        raise ValueError(f"a shrink pass needs a name of its own and a docstring: {run.__name__}")
    NAMED_PASSES[run.__name__] = run
    return run


def candidate_pass(candidates: Candidates) -> Candidates:
    """Register the pass of ``candidates`` (a function proposing smaller programs, each replayed),
    under its name and docstring: the first candidate smaller than the program that still fails.
    ``candidates`` itself is returned as it is (its candidates can be listed)."""

    def run(program: Program, fails: Fails) -> Program | None:
        return first_failing(candidates(program), fails, program)

    shrink_pass(functools.wraps(candidates)(run))
    return candidates


@candidate_pass
def drop_dead(program: Program) -> Iterator[Program]:
    """Candidates: the program without one statement whose results nothing reads, last first."""
    live = program.live_steps()
    for i in reversed(range(program.n_ops)):
        if i not in live and (candidate := without_steps(program, {i})) is not None:
            yield candidate


@candidate_pass
def drop_unused_inputs(program: Program) -> Iterator[Program]:
    """Candidates: the program without one input nothing reads (the later inputs' values change:
    they are drawn from one seeded generator in order, so this too is replayed)."""
    read = read_inputs(program)
    for i in reversed(range(len(program.inputs))):
        if i in read:
            continue
        kept = [j for j in range(len(program.inputs)) if j != i]
        candidate = rebuilt(program, kept, list(range(program.n_ops)), program.outputs)
        if candidate is not None:
            yield candidate


@candidate_pass
def drop_outputs(program: Program) -> Iterator[Program]:
    """Candidates: the program returning one value fewer (never none)."""
    if len(program.outputs) < 2:
        return
    for i in reversed(range(len(program.outputs))):
        yield dataclasses.replace(program, outputs=program.outputs[:i] + program.outputs[i + 1 :])


@candidate_pass
def truncations(program: Program) -> Iterator[Program]:
    """Candidates: the program cut after statement k, returning what it defines, shortest first
    (the values before it keep their numbers)."""
    for k in range(program.n_ops - 1):
        yield program.prefix(k)


def value_specs(program: Program) -> dict[int, TensorInput]:
    """Each value the program defines that is a tensor, as an input of its shape and dtype (from
    one eager run here; {} when it does not run). What a delta-debugging step's fresh inputs are."""
    every = program.every_value()
    try:
        with torch.no_grad():
            values = every.function()(*program.make_inputs())
    except Exception:  # eager rejects it: no delta debugging, the other passes still run
        return {}
    dtypes = {v: k for k, v in DTYPES.items()}
    specs = {}
    for index, value in zip(every.outputs, values):
        if isinstance(value, torch.Tensor) and value.dtype in dtypes and value.layout == torch.strided:
            specs[index] = TensorInput(tuple(value.shape), dtypes[value.dtype])
    return specs


@candidate_pass
def delta_debugging(program: Program) -> Iterator[Program]:
    """Candidates: ranges of statements removed, halves first, then quarters, down to single ones."""
    if program.n_ops < 2:
        return
    specs = value_specs(program)
    chunk = program.n_ops // 2
    while chunk >= 1:
        for start in range(0, program.n_ops, chunk):
            dropped = range(start, min(start + chunk, program.n_ops))
            if len(dropped) < program.n_ops and (candidate := without_range(program, dropped, specs)) is not None:
                yield candidate
        chunk //= 2


# --- whole-program passes: ``fuzzdce minify``'s first, in the order that pays (PyTorch's ``fx_minifier``'s) ---


def always(program: Program) -> bool:
    """A failure every program shows: a pass run with it takes what it can unconditionally."""
    return True


@shrink_pass
def dead_and_unused(program: Program, fails: Fails) -> Program | None:
    """Every dead statement, then every unread input, dropped at once (one query each), when the
    result still fails (a dead statement can matter: then ``drop_dead`` takes them one by one)."""
    current = program
    candidate = rebuilt(current, list(range(len(current.inputs))), sorted(current.live_steps()), current.outputs)
    if candidate is not None and candidate.n_ops < current.n_ops and fails(candidate):
        current = candidate
    read = sorted(read_inputs(current))
    if len(read) < len(current.inputs):
        candidate = rebuilt(current, read, list(range(current.n_ops)), current.outputs)
        if candidate is not None and fails(candidate):
            current = candidate
    return current if current is not program else None


def without_dead_code(program: Program) -> Program:
    """``program`` without its dead statements and unread inputs (unchecked: no query)."""
    return dead_and_unused(program, always) or program


@shrink_pass
def single_outputs(program: Program, fails: Fails) -> Program | None:
    """The program returning one of its values alone, the first that fails (what only the others
    read dropped with them), when it returns several."""
    if len(program.outputs) < 2:
        return None
    for output in program.outputs:
        candidate = without_dead_code(dataclasses.replace(program, outputs=(output,)))
        if fails(candidate):
            return candidate
    return None


@shrink_pass
def truncate(program: Program, fails: Fails) -> Program | None:
    """The shortest failing prefix (``Program.prefix``, its dead code dropped), by binary search
    over the cut (a failure a prefix shows, a longer one shows too, as a rule; where not,
    ``ddmin`` still removes what it can)."""
    low, high, best = 0, program.n_ops - 2, None
    while low <= high:
        middle = (low + high) // 2
        candidate = without_dead_code(program.prefix(middle))
        if fails(candidate):
            best, high = candidate, middle - 1
        else:
            low = middle + 1
    return best if best is not None and smaller(best, program) else None


@shrink_pass
def ddmin(program: Program, fails: Fails) -> Program | None:
    """Delta debugging over windows of statements: the program split into ``n`` windows, each
    window's removal tried (its values that kept statements read fed in as fresh inputs of their
    shape and dtype, ``without_range``); a removal that fails is kept and ``n`` drops by one, else
    ``n`` doubles, until windows are single statements and none can go."""
    current, n = program, 2
    while current.n_ops >= 2:
        specs = value_specs(current)
        chunk = max(1, -(-current.n_ops // n))
        removed = False
        for start in range(0, current.n_ops, chunk):
            window = range(start, min(start + chunk, current.n_ops))
            if len(window) >= current.n_ops:
                continue
            candidate = without_range(current, window, specs)
            if candidate is None:
                continue
            candidate = without_dead_code(candidate)
            if smaller(candidate, current) and fails(candidate):
                current, removed = candidate, True
                break
        if removed:
            n = max(n - 1, 2)
        elif chunk == 1:
            break
        else:
            n = min(2 * n, current.n_ops)
    return current if current is not program else None


# --- inside a statement ---------------------------------------------------------------------------------


def step_of_expression(step: Step, expression: ast.expr) -> Step:
    """``step`` computing ``expression`` (its arguments as ``expression_of`` names them): the
    arguments it no longer reads dropped, the rest renumbered, its op named anew (``op_name``) when
    the outermost call is another (a catalog entry's name, ``cross_entropy_smooth``, stays with its call)."""
    text = ast.unparse(expression).replace("{", "{{").replace("}", "}}")
    args = []
    for i, arg in enumerate(step.args):
        if ARGUMENT_NAME.format(i) in text:
            text = text.replace(ARGUMENT_NAME.format(i), "{" + str(len(args)) + "}")
            args.append(arg)
    kwargs = tuple((k, v) for k, v in step.kwargs if KEYWORD_NAME.format(k) in text)
    for k, _ in kwargs:
        text = text.replace(KEYWORD_NAME.format(k), "{" + k + "}")
    original = expression_of(step)
    same_call = original is not None and op_name(original) == op_name(expression)
    return dataclasses.replace(
        step, op=step.op if same_call else op_name(expression), template=text, args=tuple(args), kwargs=kwargs
    )


def rewrites(expression: ast.expr) -> Iterator[tuple[ast.AST, ast.expr]]:
    """(node, what replaces it) for each call, operator or subscript and each of its arguments
    (operands, the receiver of a method, the subscripted value) that is an expression of values."""
    for node in ast.walk(expression):
        if isinstance(node, ast.Call):
            parts = [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                parts.append(node.func.value)
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, ast.Subscript):
            parts = [node.value]
        else:
            continue
        for part in parts:
            if not isinstance(part, ast.Starred) and reads_a_value(part):
                yield node, part


def replaced(expression: ast.expr, node: ast.AST, by: ast.AST) -> ast.expr:
    """A copy of ``expression`` with ``node`` (one of its nodes) replaced by ``by``."""

    class Replace(ast.NodeTransformer):
        def visit(self, current: ast.AST) -> ast.AST:
            return by if current is node else self.generic_visit(current)

    if expression is node:
        return by
    # A deep copy that keeps ``node`` and ``by`` themselves, so ``node`` is still found by identity.
    return Replace().visit(copy.deepcopy(expression, {id(node): node, id(by): by}))


def sub_statement_candidates(program: Program, edit: Callable[[ast.expr], Iterator[ast.expr]]) -> Iterator[Program]:
    """Candidates: each statement, last first, rewritten by each of ``edit``'s rewrites of its expression."""
    for index in reversed(range(program.n_ops)):
        step = program.steps[index]
        expression = expression_of(step)
        if expression is None:
            continue
        for edited in edit(expression):
            if isinstance(edited, ast.Name):  # a bare value is no statement: ``v1 = v0`` computes nothing
                continue
            candidate = with_step(program, index, step_of_expression(step, edited))
            if candidate is not None:
                yield candidate


@candidate_pass
def call_to_argument(program: Program) -> Iterator[Program]:
    """Candidates: a call, operator or subscript inside a statement giving way to one of its
    arguments (``torch.matmul(v0, w) + v1.sum(0)`` to ``torch.matmul(v0, w)``; ``v0 + v1.sum(0)``
    to ``v0 + v1``), what it alone read going with it; never to a bare value (``v1 = v0``)."""
    yield from sub_statement_candidates(program, lambda e: (replaced(e, node, part) for node, part in rewrites(e)))


def without_keywords(expression: ast.expr) -> Iterator[ast.expr]:
    for node in ast.walk(expression):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is not None:
                    call = ast.Call(node.func, node.args, [k for k in node.keywords if k is not keyword])
                    yield replaced(expression, node, call)


@candidate_pass
def keyword_to_default(program: Program) -> Iterator[Program]:
    """Candidates: a keyword argument of a call inside a statement dropped, back to its default
    (``torch.addcdiv(v0, v1, v2, value=2.0)`` to ``torch.addcdiv(v0, v1, v2)``)."""
    yield from sub_statement_candidates(program, without_keywords)


def constants(expression: ast.expr) -> Iterator[ast.expr]:
    """``expression`` with one value it reads as an operand of an operator replaced by ``1``."""
    for node in ast.walk(expression):
        if isinstance(node, ast.BinOp):
            for part in (node.left, node.right):
                if isinstance(part, ast.Name) and reads_a_value(part):
                    yield replaced(expression, part, ast.Constant(1))


@candidate_pass
def operand_to_constant(program: Program) -> Iterator[Program]:
    """Candidates: a value read as an operator's operand inside a statement replaced by the
    constant 1 (``v0 * v1`` to ``v0 * 1``), the input or statement it alone read going with it."""
    yield from sub_statement_candidates(program, constants)


# --- smaller shapes -----------------------------------------------------------------------------------


def halved_shapes(program: Program, which: list[int]) -> Program | None:
    """``program`` with every dim of the tensor inputs ``which`` halved (rounded up; None when none changes)."""
    inputs = list(program.inputs)
    changed = False
    for i in which:
        spec = inputs[i]
        if isinstance(spec, TensorInput) and spec.view_of is None and any(d > 1 for d in spec.shape):
            shape = tuple((d + 1) // 2 for d in spec.shape)
            inputs[i] = dataclasses.replace(spec, shape=shape, values=leading(spec, shape))
            changed = True
    return dataclasses.replace(program, inputs=views_follow_bases(inputs)) if changed else None


def leading(spec: TensorInput, shape: tuple[int, ...]) -> tuple | None:
    """A user's input's values (``TensorInput.values``) cut to their leading ``shape`` block (None: drawn)."""
    if spec.values is None:
        return None
    block = torch.tensor(spec.values).reshape(spec.shape)[tuple(slice(0, d) for d in shape)]
    return tuple(block.flatten().tolist())


@candidate_pass
def redraw_values(program: Program) -> Iterator[Program]:
    """Candidates: a user's input (``TensorInput.values``) drawn from its domain instead, simpler
    than the values given (kept only where the failure does not need them)."""
    for i, spec in enumerate(program.inputs):
        if isinstance(spec, TensorInput) and spec.values is not None:
            inputs = program.inputs[:i] + (dataclasses.replace(spec, values=None),) + program.inputs[i + 1 :]
            yield dataclasses.replace(program, inputs=inputs)


@candidate_pass
def halve_shapes(program: Program) -> Iterator[Program]:
    """Candidates: every tensor input's dims halved together (shapes that broadcast keep doing so),
    then each input's alone."""
    tensors = [i for i, s in enumerate(program.inputs) if isinstance(s, TensorInput)]
    for which in [tensors, *([i] for i in tensors)]:
        candidate = halved_shapes(program, which)
        if candidate is not None:
            yield candidate


# --- the passes ------------------------------------------------------------------------------------------

# The passes ``reduce`` runs by default (the campaign's shrinking, then ``fuzzdce minify``'s last
# step), by name (``NAMED_PASSES``), cheapest first.
PASSES: tuple[str, ...] = (
    "drop_dead",
    "drop_unused_inputs",
    "drop_outputs",
    "truncations",
    "delta_debugging",
    "call_to_argument",
    "keyword_to_default",
    "operand_to_constant",
)
# The passes on a program's inputs themselves, ``fuzzdce minify``'s: a campaign's shapes and values
# are Hypothesis's choices, which its own shrinker makes smaller.
INPUT_PASSES: tuple[str, ...] = ("halve_shapes", "redraw_values")
# The passes that reduce inside a statement, and ``take_apart`` (the calls it hoists out of
# statements, which minify does first), counted apart: ``benchmarks/minify.py``.
SUB_STATEMENT = frozenset({"take_apart", "call_to_argument", "keyword_to_default", "operand_to_constant"})


def input_elements(program: Program) -> int:
    """How many elements the program's tensor inputs hold."""
    total = 0
    for spec in program.inputs:
        if isinstance(spec, TensorInput):
            n = 1
            for d in spec.shape:
                n *= d
            total += n
    return total


def given_values(program: Program) -> int:
    """How many of the program's inputs hold a user's values (``TensorInput.values``)."""
    return sum(isinstance(s, TensorInput) and s.values is not None for s in program.inputs)


def smaller(a: Program, b: Program) -> bool:
    """Is ``a`` smaller than ``b``: ``findings.size`` (statements, inputs, source), then fewer input
    elements, then fewer inputs holding a user's values."""
    return (size(a), input_elements(a), given_values(a)) < (size(b), input_elements(b), given_values(b))


def first_failing(candidates: Iterator[Program], fails: Fails, current: Program) -> Program | None:
    """The first candidate smaller than ``current`` that still fails."""
    for candidate in candidates:
        if smaller(candidate, current) and fails(candidate):
            return candidate
    return None


def reduce(
    program: Program,
    fails: Fails,
    *,
    out_of_time: Callable[[], bool] = lambda: False,
    taken: Counter | None = None,
    passes: tuple[str, ...] = PASSES,
) -> tuple[Program, bool]:
    """``program`` reduced by the named ``passes`` until none applies: after each step kept,
    from the first (cheapest) pass again. Returns the smallest failing program and whether the
    passes finished (False: ``out_of_time`` stopped them). ``fails`` is asked only of candidates
    smaller than the current program; ``taken`` counts the steps kept, by pass name."""
    current = program
    while True:
        for name in passes:
            if out_of_time():
                return current, False
            smaller_one = apply(name, current, fails, taken)
            if smaller_one is not current:
                current = smaller_one
                break  # start again from the cheapest pass on the smaller program
        else:
            return current, True


def apply(name: str, program: Program, fails: Fails, taken: Counter | None = None) -> Program:
    """``program`` after one run of the pass ``name``: what it kept, else ``program`` itself
    (``taken`` counts it when it kept one)."""
    smaller_one = NAMED_PASSES[name](program, fails)
    if smaller_one is None:
        return program
    if taken is not None:
        taken[name] += 1
    return smaller_one

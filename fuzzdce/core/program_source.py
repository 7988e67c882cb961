"""A straight-line Python function read back into a ``Program``: the parser of the IR ``program`` renders.

What ``fuzzdce minify`` reads a user's program with: a Dynamo graph's ``forward`` from a script
Thunder's report tools wrote, fuzzdce's own ``def program(v0, ...)``, or any function whose body
is a sequence of assignments ending in a return. Each assignment becomes one ``Step`` whose
template is the right-hand side with the values it reads as ``{k}`` (so the statement-level
shrink passes renumber it like a generated one); ``x = y`` aliases a value and ``x = None`` (how
Dynamo frees one) is no statement. Names that are no value of the function (``torch``,
``operator``, ``inf``) are written so that the program runs with ``torch`` alone in its globals,
as every ``Program`` does.

Inputs are specs, not values (``Program.make_inputs`` draws them from a seed): ``input_spec`` turns
a value into the spec whose draws keep what the value satisfies (positive stays positive,
non-negative integers stay valid indices), and ``inputs_of_make_inputs`` reads fuzzdce's own
``make_inputs`` back exactly.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from fuzzdce.core.errors import UsageError
from fuzzdce.core.program import (
    DTYPES,
    NEVER_REQUIRES_GRAD,
    Domain,
    Input,
    NumberInput,
    Program,
    Ref,
    Step,
    StringInput,
    TensorInput,
    input_expression,
)

# Names a straight-line function may read besides its values, and how a program writes each with
# ``torch`` alone in scope (Dynamo's graph code reads ``inf``, ``nan``, ``device``, ``operator``).
GLOBAL_SPELLINGS = {
    "torch": "torch",
    "inf": "float('inf')",
    "nan": "float('nan')",
    "device": "torch.device",
    "NoneType": "type(None)",
    "operator": "__import__('operator')",
    "math": "__import__('math')",
    "fx_pytree": "__import__('torch.fx._pytree').fx._pytree",
    "pytree": "__import__('torch.utils._pytree').utils._pytree",
}
BUILTIN_NAMES = frozenset(dir(builtins))

_OPERATOR_NAMES = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
    ast.MatMult: "matmul",
    ast.BitAnd: "and",
    ast.BitOr: "or",
    ast.BitXor: "xor",
    ast.LShift: "lshift",
    ast.RShift: "rshift",
    ast.USub: "neg",
    ast.Invert: "invert",
    ast.Not: "not",
    ast.UAdd: "pos",
}


def op_name(node: ast.expr) -> str:
    """A short name for what an expression computes: the called function's or method's last name
    (``torch.nn.functional.relu`` -> ``relu``, ``x.sum()`` -> ``sum``), an operator's name, ``getitem``."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
        return op_name(func)
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return _OPERATOR_NAMES.get(type(node.op), type(node.op).__name__.lower())
    if isinstance(node, ast.Compare):
        return type(node.ops[0]).__name__.lower()
    if isinstance(node, ast.Subscript):
        return "getitem"
    if isinstance(node, ast.Attribute):
        return node.attr
    return type(node).__name__.lower()


def called_op(statement: str) -> str:
    """The op a program's statement calls, by ``op_name``: the same for a step however it was drawn
    (a catalog entry's variant, an OpInfo's sample, a model block's step) and for the program read
    back from its source, so what a fault is sited at does not depend on where the step came from.
    ``setitem`` for a statement writing into a value (``v0[i] = v1``)."""
    try:
        node = ast.parse(statement).body[0]
    except (SyntaxError, IndexError):
        return statement
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
        return "setitem"
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr)):
        return op_name(node.value)
    return type(node).__name__.lower()


class _Template(ast.NodeTransformer):
    """Rewrites an expression's reads of the function's values into numbered markers (their
    ``Ref`` arguments, in order of first read) and its other names into ``GLOBAL_SPELLINGS``."""

    def __init__(self, values: dict[str, int], line: int) -> None:
        self.values = values
        self.line = line
        self.args: list[int] = []

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.values:
            value = self.values[node.id]
            if value not in self.args:
                self.args.append(value)
            return ast.copy_location(ast.Name(id=f"__fuzzdce_arg{self.args.index(value)}__", ctx=node.ctx), node)
        if node.id in GLOBAL_SPELLINGS:
            return ast.copy_location(ast.parse(GLOBAL_SPELLINGS[node.id], mode="eval").body, node)
        if node.id in BUILTIN_NAMES:
            return node
        raise UsageError(
            f"line {self.line}: {node.id!r} is neither a value of the function nor a name fuzzdce knows (torch, operator, inf, ...)"
        )

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        raise UsageError(f"line {self.line}: a lambda is not a straight-line statement")


def step_of(expression: ast.expr, values: dict[str, int], n_out: int, *, unpack: bool, line: int) -> Step:
    """One statement's right-hand side as a ``Step`` defining ``n_out`` values."""
    rewriter = _Template(values, line)
    rewritten = rewriter.visit(ast.parse(ast.unparse(expression), mode="eval").body)
    text = ast.unparse(rewritten).replace("{", "{{").replace("}", "}}")
    for k in range(len(rewriter.args)):
        text = text.replace(f"__fuzzdce_arg{k}__", f"{{{k}}}")
    return Step(op_name(expression), text, tuple(_ref(v) for v in rewriter.args), n_out=n_out, unpack=unpack)


def _ref(value: int) -> Ref:
    return Ref(value)


def _target_names(target: ast.expr, line: int) -> tuple[list[str], bool] | None:
    """The names an assignment target defines and whether it unpacks; None for a target that is no
    new value (``x.attr = ...``, ``x[i] = ...``)."""
    if isinstance(target, ast.Name):
        return [target.id], False
    if isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
        return [e.id for e in target.elts], True
    return None


def parse_function(source: str, name: str | None = None) -> ast.FunctionDef:
    """The function ``name`` (default: the first) defined in ``source``, as a syntax tree."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and (name is None or node.name == name):
            return node
    raise UsageError(f"no function {name or ''} defined in the source".replace("  ", " "))


def program_of_function(function: ast.FunctionDef, inputs: Sequence[Input], *, seed: int = 0, skip_self: bool = False) -> Program:
    """The straight-line ``function`` as a ``Program`` over ``inputs`` (one spec per parameter, ``self`` skipped
    when ``skip_self``). A ``UsageError`` names the first statement that is not straight-line."""
    params = [a.arg for a in function.args.posonlyargs + function.args.args]
    if skip_self and params:
        params = params[1:]
    if len(params) != len(inputs):
        raise UsageError(f"{function.name} takes {len(params)} arguments, and {len(inputs)} inputs were given")
    values = {p: i for i, p in enumerate(params)}
    steps: list[Step] = []
    defined = len(params)
    outputs: tuple[int, ...] | None = None
    for statement in function.body:
        line = statement.lineno
        if outputs is not None:
            break  # code after the return never runs
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Return):
            returned = statement.value
            elements = (
                returned.elts if isinstance(returned, (ast.Tuple, ast.List)) else [returned] if returned is not None else []
            )
            result = []
            for element in elements:
                if isinstance(element, ast.Name) and element.id in values:
                    result.append(values[element.id])
                else:  # a returned expression: a statement of its own
                    steps.append(step_of(element, values, 1, unpack=False, line=line))
                    result.append(defined)
                    defined += 1
            outputs = tuple(result)
            continue
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            value = statement.value
            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                continue  # ``x = None``: Dynamo freeing a value, no computation
            named = [_target_names(t, line) for t in targets]
            if any(n is None for n in named):
                raise UsageError(f"line {line}: only assignments to names are straight-line statements")
            if isinstance(value, ast.Name) and value.id in values and all(len(n) == 1 and not u for n, u in named):
                for names, _ in named:
                    values[names[0]] = values[value.id]  # ``l_x_ = L_x_``: an alias
                continue
            first, unpack = named[0]
            steps.append(step_of(value, values, len(first), unpack=unpack and len(first) == 1, line=line))
            for offset, target in enumerate(first):
                values[target] = defined + offset
            for names, _ in named[1:]:  # ``a = b = expr``: b aliases a
                for offset, target in enumerate(names):
                    values[target] = defined + offset
            defined += len(first)
            continue
        if isinstance(statement, ast.Expr):  # a call for its effect (``x.add_(1)``): a value nothing reads
            steps.append(step_of(statement.value, values, 1, unpack=False, line=line))
            defined += 1
            continue
        raise UsageError(
            f"line {line}: {type(statement).__name__} is not a straight-line statement (assignments and one return only)"
        )
    if not outputs:
        raise UsageError(f"{function.name} returns no value of its own")
    return Program(tuple(inputs), tuple(steps), outputs, seed=seed)


# --- inputs -------------------------------------------------------------------------------------------

DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}


def value_domain(value: torch.Tensor) -> Domain:
    """The narrowest domain whose draws keep what ``value``'s elements satisfy: non-finite values,
    (0, 1), positive, (-1, 1), any real; integers non-negative are drawn from {0, 1} (valid
    indices into any dimension of two or more), others from the real domain's range."""
    if value.numel() == 0 or value.dtype == torch.bool:
        return Domain.REAL
    if not value.dtype.is_floating_point:
        return Domain.SIGNED_ZEROS if int(value.min()) >= 0 else Domain.REAL
    data = value.detach().double()
    if not bool(torch.isfinite(data).all()):
        return Domain.NONFINITE
    low, high = float(data.min()), float(data.max())
    if low > 0 and high < 1:
        return Domain.PROB
    if low > 0:
        return Domain.POSITIVE
    if -1 < low and high < 1:
        return Domain.UNIT
    return Domain.REAL


def input_spec(value: Any, where: str = "an input", *, exact: bool = False) -> Input:
    """The spec of one input value: a contiguous tensor of its shape and dtype in ``value_domain``
    (with ``exact``, holding its very values, ``TensorInput.values``), a Python number, a string. A
    ``UsageError`` for anything else."""
    if isinstance(value, torch.Tensor):
        if value.dtype not in DTYPE_NAMES:
            raise UsageError(f"{where} is a {value.dtype} tensor; fuzzdce programs take {', '.join(DTYPES)}")
        values = tuple(value.detach().cpu().flatten().tolist()) if exact else None
        return TensorInput(tuple(value.shape), DTYPE_NAMES[value.dtype], domain=value_domain(value), values=values)
    if isinstance(value, (bool, int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
        return NumberInput(value)
    if isinstance(value, str):
        return StringInput(value, (value,))
    raise UsageError(f"{where} is a {type(value).__name__}; fuzzdce programs take tensors, numbers and strings")


def inputs_of_make_inputs(source: str, *, exact: bool = True) -> tuple[tuple[Input, ...], int]:
    """fuzzdce's own ``make_inputs(requires_grad=False)`` read back: each input's spec (exactly the
    one that renders its line where one does, else ``input_spec`` of the value it makes, its values
    kept unless not ``exact``) and the seed. An input drawn from the generator but read back as its
    values (drawn at an op's edges) draws nothing more: each later drawn one keeps its values too,
    or its draws would shift."""
    function = parse_function(source, "make_inputs")
    lines = source.splitlines()
    seed = 0
    for node in ast.walk(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "manual_seed" and node.args:
            seed = ast.literal_eval(node.args[0])
    elements: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.List):
            elements = list(node.value.elts)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" and node.args:
            elements.append(node.args[0])
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(ast.Module([function], []), "<make_inputs>", "exec"), namespace)  # noqa: S102 - the user's own inputs
    made = namespace["make_inputs"](False)
    if len(elements) != len(made):
        elements = [None] * len(made)
    specs: list[Input] = []
    drifted = False  # an earlier input drew from ``g`` and is read back as its values: later draws shift
    for i, (element, value) in enumerate(zip(elements, made)):
        spec = _exact_spec(element, value, i, exact, requires_grad=not never_requires_grad(element, lines))
        draws = element is not None and any(isinstance(n, ast.Name) and n.id == "g" for n in ast.walk(element))
        if exact and draws:
            if drifted and isinstance(value, torch.Tensor) and isinstance(spec, TensorInput) and spec.view_of is None:
                spec = input_spec(value, f"input {i}", exact=True)  # its draws would no longer be the same
            drifted = drifted or ast.dump(ast.parse(input_expression(spec), mode="eval").body) != ast.dump(element)
        specs.append(spec)
    return tuple(specs), seed


def never_requires_grad(element: ast.expr | None, lines: list[str]) -> bool:
    """Is ``element`` an input fuzzdce wrote as never requiring grad (``program.NEVER_REQUIRES_GRAD``
    on its line)? Read as requiring it, a program failing only without grad (thunderfx splitting a
    plain call) passed when read back. A user's own line says nothing: its input may require grad."""
    if element is None or element.end_lineno is None or element.end_lineno > len(lines):
        return False
    return NEVER_REQUIRES_GRAD in lines[element.end_lineno - 1]


def _exact_spec(element: ast.expr | None, value: Any, index: int, exact: bool = True, requires_grad: bool = True) -> Input:
    """The spec whose ``input_expression`` is ``element``'s text, else ``input_spec(value)`` (its
    values kept with ``exact``); ``requires_grad``: whether it requires grad in the grad call."""
    if element is None or not isinstance(value, torch.Tensor) or value.dtype not in DTYPE_NAMES:
        return input_spec(value, f"input {index}", exact=exact)
    text = ast.dump(element)
    if isinstance(element, ast.Subscript) and isinstance(element.value, ast.Subscript):  # ``inputs[k][...]``
        base = element.value.slice
        if isinstance(base, ast.Constant) and isinstance(base.value, int):
            return TensorInput(tuple(value.shape), DTYPE_NAMES[value.dtype], view_of=base.value)
    for domain in Domain:
        for transposed in (False, True):
            for strided in (False, True):
                spec = TensorInput(
                    tuple(value.shape), DTYPE_NAMES[value.dtype], transposed, domain, strided, requires_grad=requires_grad
                )
                if ast.dump(ast.parse(input_expression(spec), mode="eval").body) == text:
                    return spec
    spec = input_spec(value, f"input {index}", exact=exact)
    return dataclasses.replace(spec, requires_grad=requires_grad)


# --- a step's expression, read and rewritten -------------------------------------------------------

# What a step's template reads, as names an expression can hold: ``{0}`` as ``_arg0_``, ``{alpha}`` as ``_kw_alpha_``.
ARGUMENT_NAME, KEYWORD_NAME = "_arg{}_", "_kw_{}_"


def expression_of(step: Step) -> ast.expr | None:
    """The step's expression with its arguments as names (``ARGUMENT_NAME``, ``KEYWORD_NAME``); None for a template
    that is a statement itself (``{out}``) or no expression."""
    if "{out}" in step.template:
        return None
    try:
        text = step.template.format(
            *(ARGUMENT_NAME.format(i) for i in range(len(step.args))), **{k: KEYWORD_NAME.format(k) for k, _ in step.kwargs}
        )
        return ast.parse(text, mode="eval").body
    except (SyntaxError, IndexError, KeyError, ValueError):
        return None


def reads_a_value(node: ast.AST) -> bool:
    """Does ``node`` read one of the step's arguments (``expression_of``'s names)?"""
    return any(isinstance(n, ast.Name) and n.id.startswith(("_arg", "_kw_")) for n in ast.walk(node))


def step_from(expression: ast.expr, values: dict[str, Any], like: Step) -> Step:
    """A step computing ``expression`` (``like``'s outputs and unpacking), each name of ``values``
    it holds (a placeholder: ``_arg0_``, ``_kw_alpha_``, a hoisted value) an argument of it."""
    text = ast.unparse(expression).replace("{", "{{").replace("}", "}}")
    args = []
    for name, value in values.items():
        if name in text:
            text = text.replace(name, "{" + str(len(args)) + "}")
            args.append(value)
    return Step(op_name(expression), text, tuple(args), n_out=like.n_out, unpack=like.unpack)


class Hoist(ast.NodeTransformer):
    """Takes each call or operator nested in ``root`` that reads a value out into a step of its own
    (appended to ``steps``; ``values`` gains its placeholder), innermost first."""

    def __init__(self, root: ast.expr, values: dict[str, Any], steps: list[Step], n_inputs: int) -> None:
        self.root, self.values, self.steps, self.n_inputs = root, values, steps, n_inputs

    def generic_visit(self, node: ast.AST) -> ast.AST:
        node = super().generic_visit(node)
        nested = isinstance(node, (ast.Call, ast.BinOp, ast.UnaryOp, ast.Subscript)) and node is not self.root
        if nested and reads_a_value(node):
            self.steps.append(step_from(node, self.values, Step("", "")))
            name = f"_arg_h{len(self.steps)}_"  # read as a value (``reads_a_value``)
            self.values[name] = Ref(self.n_inputs + sum(s.n_out for s in self.steps) - 1)
            return ast.Name(name, ast.Load())
        return node


def take_apart(program: Program) -> Program:
    """``program`` with each statement that nests calls of values taken apart, one statement per
    call or operator that reads a value, innermost first (``torch.clamp(v0, 0, 1) * 2 + v0.sum()``
    becomes ``v1 = torch.clamp(v0, 0, 1)``, ``v2 = v1 * 2``, ``v3 = v0.sum()``, ``v4 = v2 + v3``):
    the same computation, so the first wrong op is found within a statement (``running.localise``)
    and the statement-level passes reduce inside it. What ``fuzzdce minify`` does to a user's
    program first; a fuzzdce program's statements are one op each."""
    mapping: dict[int, int] = {i: i for i in range(len(program.inputs))}
    steps: list[Step] = []

    def renumbered(value: Any) -> Any:
        return Ref(mapping[value.index]) if isinstance(value, Ref) else value

    for index, step in enumerate(program.steps):
        expression = expression_of(step)
        values = {ARGUMENT_NAME.format(i): renumbered(a) for i, a in enumerate(step.args)}
        values |= {KEYWORD_NAME.format(k): renumbered(v) for k, v in step.kwargs}
        if expression is None or step.kwargs:  # a statement template, or a catalog entry's keywords: as it is
            steps.append(
                dataclasses.replace(
                    step, args=tuple(map(renumbered, step.args)), kwargs=tuple((k, renumbered(v)) for k, v in step.kwargs)
                )
            )
        else:
            before = len(steps)
            root = Hoist(expression, values, steps, len(program.inputs)).visit(expression)
            if len(steps) == before:
                steps.append(dataclasses.replace(step, args=tuple(map(renumbered, step.args))))
            else:
                steps.append(
                    dataclasses.replace(step_from(root, values, step), op=step.op if op_name(root) == step.op else op_name(root))
                )
        first = program.first_value(index)
        for offset in range(step.n_out):
            mapping[first + offset] = len(program.inputs) + sum(s.n_out for s in steps) - step.n_out + offset
    if len(steps) == program.n_ops:
        return program
    return dataclasses.replace(program, steps=tuple(steps), outputs=tuple(mapping[o] for o in program.outputs))

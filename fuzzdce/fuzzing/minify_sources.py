"""What ``fuzzdce minify`` reads: a program a user brings, as a ``Program`` and what its source says of its failure.

A SOURCE is one of:
- a script Thunder's report tools wrote (``thunder.dynamo.report``: ``FXGraphReport.write_repro``,
  ``save_failing_repros``): ``class DynamoModule`` whose ``forward`` is the Dynamo graph, a
  ``test_*`` function building ``inputs`` and compiling the module (``thunder.jit``, ``thunderfx``);
- a Python file in fuzzdce's own shape: ``def program(v0, ...)`` and ``def make_inputs(requires_grad=False)``
  (a findings folder's ``repro.py`` is one), read back exactly, seed included;
- ``FILE.py:FUNCTION`` or ``module:FUNCTION``, with ``--inputs`` naming a factory (``FACTORY`` in the
  same file or module, or ``module:FACTORY``) returning the inputs;
- a findings folder's bug (its folder, holding bug.json): its smallest program, path, placement and failure.

Functions must be straight-line (``core.program_source``). Inputs become specs (``input_spec``)
holding the very values the user's file, factory or report script made (``TensorInput.values``):
the minify runs exactly those, and a failure that needs a value (a clamp at its bound, a tie, a
NaN) keeps failing. Reducing them (fewer elements, values drawn instead) is a shrink step like any
other (``shrink_passes``), kept only where the failure keeps its fault. With ``redraw`` they are
redrawn from a seed by shape, dtype and range, as fuzzdce draws its own programs'. Either way the
original is checked to fail with them before anything is reduced. Where the user's tensors say
which require grad (any does), each floating input requires grad in the grad call as its tensor
does (``specs_of``); where none does, every floating one does.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import inspect
import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import Violation
from fuzzdce.core.program import Input, Program
from fuzzdce.core.program_source import input_spec, inputs_of_make_inputs, parse_function, program_of_function
from fuzzdce.results.store import BUG_FILE, read_bug


@dataclass
class Subject:
    """A program to minify and what its source says of its failure (None: the command line's
    flags, or the first failing path, decide)."""

    program: Program
    origin: str
    path: str | None = None
    placement: str | None = None
    target: Violation | None = None  # a findings bug's failure, which the minify keeps
    notes: list[str] = field(default_factory=list)


def read_subject(source: str, *, inputs: str | None = None, redraw: bool = False) -> Subject:
    """The ``Subject`` ``source`` names (see the module's docstring); a ``UsageError`` saying what
    was expected when it names none. ``redraw``: tensor inputs redrawn by shape, dtype and range
    instead of kept as given."""
    path = Path(source)
    if path.is_dir() or path.name == BUG_FILE:
        return findings_bug(path if path.is_dir() else path.parent)
    file, _, function = source.rpartition(":") if source.count(":") == 1 and not path.exists() else (source, "", "")
    if path.is_file() or (file.endswith(".py") and Path(file).is_file()):
        text = Path(file or source).read_text()
        if function:
            return function_with_inputs(load_file(Path(file)), function, inputs, origin=source, redraw=redraw)
        if "class DynamoModule" in text:
            return report_script(text, origin=source, redraw=redraw)
        names = {n.name for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef)}
        if {"program", "make_inputs"} <= names:
            return fuzzdce_program(text, origin=source, redraw=redraw)
        raise UsageError(
            f"{source} is neither a Thunder report script (class DynamoModule) nor a fuzzdce program "
            "(def program and def make_inputs): name the function as FILE.py:FUNCTION with --inputs FACTORY"
        )
    if function:
        return function_with_inputs(import_module(file), function, inputs, origin=source, redraw=redraw)
    raise UsageError(f"{source} is no file, bug folder or module:function")


def load_file(path: Path) -> Any:
    """The Python file at ``path``, imported as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"fuzzdce_minify_{abs(hash(str(path.resolve()))):x}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise UsageError(f"cannot import {name}: {e}") from e


def function_with_inputs(module: Any, function: str, inputs: str | None, *, origin: str, redraw: bool = False) -> Subject:
    """``module.function`` over the inputs ``inputs`` names: a factory of ``module`` or ``module:factory``."""
    if inputs is None:
        raise UsageError(f"{origin}: name the inputs factory with --inputs FACTORY (or module:FACTORY)")
    owner, _, factory = inputs.rpartition(":")
    factory_module = module if not owner else (load_file(Path(owner)) if owner.endswith(".py") else import_module(owner))
    try:
        fn, make = getattr(module, function), getattr(factory_module, factory)
    except AttributeError as e:
        raise UsageError(f"{origin}: {e}") from e
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    values = list(make())
    program = program_of_function(tree.body[0], specs_of(values, redraw))
    return Subject(program, origin, notes=redrawn_note(values, redraw))


def specs_of(values: list[Any], redraw: bool) -> tuple[Input, ...]:
    """The specs of a user's input values (``input_spec``, their values kept unless ``redraw``).
    Where any tensor among them requires grad, each floating one requires grad in the grad call as
    its value does; where none does, the user said nothing of it, and every floating one does."""
    specs = tuple(input_spec(v, f"input {i}", exact=not redraw) for i, v in enumerate(values))
    if not any(isinstance(v, torch.Tensor) and v.requires_grad for v in values):
        return specs
    return tuple(
        dataclasses.replace(spec, requires_grad=value.requires_grad) if isinstance(value, torch.Tensor) else spec
        for spec, value in zip(specs, values, strict=True)
    )


def redrawn_note(values: list[Any], redraw: bool) -> list[str]:
    if redraw and any(isinstance(v, torch.Tensor) for v in values):
        return ["tensor inputs are redrawn by shape, dtype and range (--redraw: fuzzdce programs draw their inputs from a seed)"]
    return []


def fuzzdce_program(text: str, *, origin: str, redraw: bool = False) -> Subject:
    """A file with fuzzdce's ``program`` and ``make_inputs``, read back with its exact inputs (a
    line fuzzdce would not draw: its values, unless ``redraw``)."""
    specs, seed = inputs_of_make_inputs(text, exact=not redraw)
    program = program_of_function(parse_function(text, "program"), specs, seed=seed)
    given = redraw and any(getattr(s, "values", None) is not None for s in inputs_of_make_inputs(text)[0])
    return Subject(program, origin, notes=redrawn_note([torch.empty(0)], given))


def findings_bug(folder: Path) -> Subject:
    """A findings folder's bug: its smallest program, its first member's path and failure, its placement."""
    record = read_bug(folder)
    source = record.program + "\n" + record.inputs
    specs, seed = inputs_of_make_inputs(source)
    program = program_of_function(parse_function(source, "program"), specs, seed=seed)
    member = record.members[0]
    fault, site = member.fault_and_site()  # the member's fault, as the campaign knew it
    target = Violation(
        member.oracle, member.path, member.message, member.error_type or "", member.frame or "", fault=fault, site=site
    )
    placement = record.builds.get(record.placement, record.placement) or None
    return Subject(program, f"bug {record.id} ({folder})", member.path, placement, target)


# --- Thunder's report scripts ------------------------------------------------------------------------


def report_script(text: str, *, origin: str, redraw: bool = False) -> Subject:
    """A script ``thunder.dynamo.report`` wrote: the graph (``DynamoModule.forward``), its inputs
    (the test function's ``inputs = [...]``) and the path its compile call names."""
    tree = ast.parse(text)
    module = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DynamoModule"), None)
    forward = next((n for n in (module.body if module else []) if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise UsageError(f"{origin}: no DynamoModule.forward")
    test = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")), None)
    listed = None
    for node in ast.walk(test) if test is not None else ():
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "inputs" for t in node.targets):
            listed = node.value
    if listed is None:
        raise UsageError(f"{origin}: no `inputs = [...]` in its test function")
    values = evaluate_inputs(listed, origin)
    program = program_of_function(forward, specs_of(values, redraw), skip_self=True)
    grad = any(isinstance(v, torch.Tensor) and v.requires_grad for v in values)
    return Subject(program, origin, report_path(ast.unparse(test), grad), notes=redrawn_note(values, redraw))


def evaluate_inputs(listed: ast.expr, origin: str) -> list[Any]:
    """The report script's inputs list, evaluated (``torch.testing.make_tensor`` calls, ``torch.load`` of saved inputs)."""
    namespace = {"torch": torch, "inf": math.inf, "nan": math.nan, "device": torch.device}
    try:
        return list(eval(compile(ast.Expression(listed), origin, "eval"), namespace))  # noqa: S307 - the user's own script
    except Exception as e:
        raise UsageError(f"{origin}: its inputs could not be built here: {type(e).__name__}: {e}") from e


def report_path(test_source: str, grad: bool) -> str:
    """The compile path a report script's test function names: thunderfx or ``torch.compile`` with
    Thunder's backend, else ``thunder.jit`` (with the torch.compile executor where it lists it),
    its grad call when the inputs require grad."""
    if "thunderfx" in test_source or "torch.compile" in test_source or "ThunderCompiler" in test_source:
        return "thunderfx"
    if "torch_compile_ex" in test_source:
        return "jit-torchcompile"
    return "jit-grad" if grad and "run_forward_backward" in test_source else "jit"

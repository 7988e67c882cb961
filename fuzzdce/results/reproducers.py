"""The one writer of reproducers: how a failure is written as a script someone else runs.

Two scripts, one home:

- **A bug's ``repro.py``** (``repro_script``, written into its findings folder by ``store``): the
  program and its seeded inputs as source (``Program.source``, the very text fuzzdce executed), the
  path's compile function as source (``inspect.getsource`` of the function fuzzdce calls), and a
  call of ``repro.reproduce_all``, which runs each (path, oracle) its findings showed through the
  same code the campaign ran, so it cannot drift from what found the bug. ``--placement`` reruns it
  under another placement, e.g. ``stock`` or ``my_module:my_fix``; a bug of another Thunder build
  selects that build (``PLACEMENT = "NAME=DIR"``). What its exit codes mean: ``repro.Reproduced``.

- **The standalone script** (``standalone_script``): what ``fuzzdce issue`` prints for a campaign's
  bug and what ``fuzzdce minify`` writes, in the shape of the repro scripts
  ``thunder.dynamo.report`` writes: the program, its inputs, the failing path's compile call and
  one check that fails with a message saying what differs, as a ``test_repro`` function that
  ``python`` runs (exit 1 while the bug is there, 0 once it is fixed, 4 when it cannot be checked
  here: the path's device is missing, or the oracle compares two Thunders) and ``pytest`` collects.

Only what the failure needs is written in the standalone script (``Oracle.script_check``: what
the finding is): an exception is the compiled call raising (forward, and backward on a grad path);
a wrong gradient is each input's gradient compared with eager's, naming the input; a lost or
invented ``requires_grad`` is the outputs' flags compared; a wrong output, the outputs; a wrong
in-place write, the inputs after the call; a thunderfx split, the split reasons; a malformed trace,
Thunder's own ``check_trace``; a guard, the first call then the guard call that fails. One path,
the failing one of the first of its paths (``PATHS``' order). Its compile call is the ``return`` of
the path's own ``compile`` function (``running.paths``), printed as an expression with that
function's imports hoisted. Cotangents are ``ones_like`` where those show the failure, else the
campaign's seeded ones (``verified`` runs the script here to say which, and which guard call). A
path on a device moves the inputs there (``to_device``: strides, ``requires_grad`` and aliasing
kept), and eager runs on the same device. Every oracle, every path, every placement: that stays
with ``repro.py``, which runs fuzzdce's own code.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import torch

from fuzzdce.core.decisions import summary
from fuzzdce.core.faults import Fault, Flag, WrongValue, fault_of, without_annotations
from fuzzdce.core.model import STOCK, CallLabel, Judges, ScriptCheck
from fuzzdce.core.versions import versions
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles.outputs import OUTPUTS
from fuzzdce.results.records import BugRecord, MemberRecord
from fuzzdce.results.repro import Reproduced
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS, resolve
from fuzzdce.running.variants import guard_variants

# --- a bug's repro.py: fuzzdce's own code, every (path, oracle) -------------------------------------

MAIN_SOURCE = """
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement to apply (default: {PLACEMENT})")
    parser.add_argument("--reference", default=REFERENCE, help=f"what two-Thunder checks compare with (default: {REFERENCE})")
    args = parser.parse_args(argv)
    from fuzzdce.results.repro import reproduce_all

    guard_inputs = globals().get("GUARD_INPUTS", {})
    return reproduce_all(
        program, make_inputs, CHECKS, placement=args.placement, script=__file__, reference=args.reference, guard_inputs=guard_inputs
    )


if __name__ == "__main__":
    raise SystemExit(main())
"""


def repro_script(bug, builds: Mapping[str, str] | None = None, reference: str = STOCK) -> str:
    """The reproducer of ``bug`` (a ``fuzzdce.core.findings.Bug``) as Python source: its smallest
    program, and every (path, oracle) its members showed; ``builds`` (NAME -> NAME=TARGET) says
    how it selects a placement that is another build; ``reference``: the campaign's reference."""
    reference_spec = (builds or {}).get(reference, reference)
    checks = sorted({(f.violation.path, f.violation.oracle) for f in bug.members})
    versions_line = ", ".join(f"{k} {value}" for k, value in versions().items())
    message = bug.smallest.violation.message.replace("\\", "\\\\").replace('"""', "'''")[:600]
    shown = "\n".join(
        f"- {oracle} on {path}: {ORACLES[oracle].description}"
        + (f" (compared with {reference} on the same path)" if ORACLES[oracle].needs_stock else "")
        for path, oracle in checks
    )
    header = (
        f'"""fuzzdce bug {bug.id} [{bug.verdict}] under {bug.placement}: {", ".join(bug.oracles())} on {", ".join(bug.paths())}.\n\n'
        f"{message}\n\n"
        f"Checked, each under the placement:\n{shown}\n\n"
        f"Shown under: {', '.join(bug.placements)}; the reference: {reference}. Found with {versions_line}.\n"
        "Exits 1 while any check fails, 0 once fixed (2: eager rejects the program; 4: not verified, a check\n"
        "could not be made here: its path skipped on this machine, a time-out, fuzzdce's own failure).\n"
        "Try a fix: python repro.py --placement my_module:my_patch (or another build: --placement NAME=DIR)\n"
        '"""\n\n'
        "import argparse\n\nimport torch\n\n"
        f"PLACEMENT = {(builds or {}).get(bug.placement, bug.placement)!r}\nREFERENCE = {reference_spec!r}\n"
        f"CHECKS = {checks!r}  # (path, oracle)\n\n\n"
    )
    compile_sources = []
    for name in sorted({path for path, _ in checks}):
        path = PATHS[name]
        compile_sources.append(
            f"# Path {name!r}: fuzzdce.running.paths.{path.compile.__name__} compiles the program, then makes the "
            f"{', '.join(path.calls)} call(s);\n# reproduce_all() below runs exactly that function:\n"
            + inspect.getsource(path.compile)
        )
    body = f"{bug.program.source()}\n\n{bug.program.inputs_source()}\n\n" + "\n\n".join(compile_sources)
    if any(ORACLES[oracle].reads_guard_calls for _, oracle in checks):
        body += "\n\n" + guard_inputs_source(bug.program)
    return header + body + "\n" + MAIN_SOURCE


def guard_inputs_source(program) -> str:
    """The inputs of each guard call ``program`` makes, as source: one ``make_inputs`` per varied
    property, and ``GUARD_INPUTS`` naming them (the guards oracle's calls, made after the first)."""
    parts, entries = [], []
    for label, variant in guard_variants(program).items():
        name = f"make_inputs_{label.replace('-', '_')}"
        if label == CallLabel.GUARD_REQUIRES_GRAD:  # the same inputs, requiring grad
            parts.append(f"def {name}(requires_grad=False):\n    return make_inputs(requires_grad=True)\n")
        else:
            parts.append(variant.inputs_source().replace("def make_inputs(", f"def {name}(", 1))
        entries.append(f"    {str(label)!r}: {name},")
    return "\n\n".join(
        [
            *parts,
            "# The guard calls: each varies one property the first call's prologue checks.\nGUARD_INPUTS = {\n"
            + "\n".join(entries)
            + "\n}\n",
        ]
    )


# --- the standalone script: torch and Thunder alone, one check --------------------------------------

# The exit code of a script whose check cannot be made here.
NOT_VERIFIED = int(Reproduced.NOT_VERIFIED)


def check_of(oracle: str, fault: Fault | None) -> ScriptCheck:
    """What a failure of ``oracle`` with ``fault`` is checked by: what the oracle declares
    (``Oracle.script_check``); for a value oracle, by the kind of its fault: a flag (``Flag``), a
    wrong value (``WrongValue``; None: a wrong value not yet known), else the exception it saw."""
    declared = ORACLES.get(oracle)
    if declared is None or declared.script_check is None:
        return ScriptCheck.RUNS
    if declared.judges == Judges.VALUE:
        if isinstance(fault, Flag):
            return ScriptCheck.FLAGS
        return declared.script_check if fault is None or isinstance(fault, WrongValue) else ScriptCheck.RAISES
    return declared.script_check


@dataclass(frozen=True)
class Case:
    """One failure to write: the program (a ``def program(...)``) and its inputs (a ``def
    make_inputs(requires_grad=False)``) as source, the path and what to check; ``headline``: the
    docstring's first line; ``notes``: lines after it (which Thunder, a placement's patch)."""

    program: str
    inputs: str
    path: str
    check: ScriptCheck
    headline: str
    notes: tuple[str, ...] = ()
    oracle: str = ""  # the oracle that failed (for ``ScriptCheck.RUNS``: which one the script cannot check)
    seeded_cotangents: bool = False  # the campaign's seeded cotangents instead of ``ones_like``
    guard_inputs: str = ""  # for ``ScriptCheck.GUARDS``: the guard calls' ``make_inputs_guard_*`` (repro.py's), as source


def compile_call(path: str, fn: str = "program") -> tuple[list[str], str]:
    """(the imports, the expression) that compile ``fn`` as ``path`` does: the ``return`` of the
    path's ``compile`` function, its parameter replaced by ``fn``."""
    compile_fn = PATHS[path].compile
    tree = ast.parse(textwrap.dedent(inspect.getsource(compile_fn)))
    function = tree.body[0]
    parameter = function.args.args[0].arg
    imports = [ast.unparse(node) for node in function.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    (returned,) = [node.value for node in function.body if isinstance(node, ast.Return)]

    class Renamed(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Name(fn, node.ctx) if node.id == parameter else node

    return imports, ast.unparse(Renamed().visit(returned))


# The outputs' requires_grad flags, of the outputs written in ``{}``: what a flag finding compares
# (assert_close compares values alone), on a plain call and on a guard call alike.
OUTPUT_FLAGS = "[getattr(o, 'requires_grad', False) for o in torch.utils._pytree.tree_leaves({})]"


# Printed into a script whose path has a device (``CompilePath.device``).
TO_DEVICE = '''
def to_device(inputs):
    """The inputs on DEVICE, strides and requires_grad kept; a view of an earlier input is made again as a view of its copy."""
    moved = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            shares = [m for y, m in zip(inputs, moved) if isinstance(y, torch.Tensor) and y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()]
            if shares:
                x = shares[0].as_strided(x.shape, x.stride(), x.storage_offset())
            else:
                whole = x.detach().as_strided((x.untyped_storage().nbytes() // x.element_size(),), (1,), 0).to(DEVICE, copy=True)
                x = whole.as_strided(x.shape, x.stride(), x.storage_offset()).detach().requires_grad_(x.requires_grad)
        moved.append(x)
    return moved
'''.strip()


def body(case: Case, compiled: str, grad: bool, inputs: str) -> list[str]:
    """The lines of ``test_repro`` checking ``case`` (``compiled``: the compile expression; ``inputs``:
    the expression making fresh inputs)."""
    leaves = "torch.utils._pytree.tree_leaves(fn(*inputs))"  # an output may be a tuple (torch.max's)
    differentiable = f"[o for o in {leaves} if isinstance(o, torch.Tensor) and o.requires_grad]"
    if case.seeded_cotangents:  # one seeded cotangent per tensor output, in order, as the campaign draws them
        backward = [
            "g = torch.Generator().manual_seed(0)",
            f"pairs = [(o, torch.randn(o.shape, generator=g, dtype=torch.float64).to(o.dtype)) for o in {leaves} if isinstance(o, torch.Tensor)]",
            "torch.autograd.backward(*zip(*[(o, c) for o, c in pairs if o.requires_grad] or [((), ())]))",
        ]
    else:
        backward = [f"outputs = {differentiable}", "torch.autograd.backward(outputs, [torch.ones_like(o) for o in outputs])"]
    check = case.check
    if check in (ScriptCheck.RAISES, ScriptCheck.RUNS):
        if not grad:
            return [f"program(*{inputs})  # eager runs it", f"{compiled}(*{inputs})"]
        return [f"for fn in (program, {compiled}):  # eager runs it, then Thunder", f"    inputs = {inputs}"] + [
            "    " + line for line in backward
        ]
    if check == ScriptCheck.GRADS:
        return [
            f"expected, actual = {inputs}, {inputs}",
            f"for fn, inputs in ((program, expected), ({compiled}, actual)):",
            *("    " + line for line in backward),
            "for i, (e, a) in enumerate(zip(expected, actual)):",
            "    if isinstance(e, torch.Tensor) and e.requires_grad and e.is_leaf:",
            '        torch.testing.assert_close(a.grad, e.grad, msg=lambda m: f"the gradient of v{i} differs from eager\'s: {m}")',
        ]
    if check == ScriptCheck.FLAGS:
        return [
            f"expected = {OUTPUT_FLAGS.format(f'program(*{inputs})')}",
            f"actual = {OUTPUT_FLAGS.format(f'{compiled}(*{inputs})')}",
            'assert actual == expected, f"requires_grad of the outputs is {actual}, eager\'s {expected}"',
        ]
    if check == ScriptCheck.OUTPUTS:
        return [
            f"expected = program(*{inputs})",
            f"actual = {compiled}(*{inputs})",
            'torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"the outputs differ from eager\'s: {m}")',
        ]
    if check == ScriptCheck.MUTATIONS:
        return [
            f"expected, actual = {inputs}, {inputs}",
            "program(*expected)",
            f"{compiled}(*actual)",
            'torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"the inputs after the call differ from eager\'s: {m}")',
        ]
    if check == ScriptCheck.GUARDS:
        guards = ", ".join(guard_functions(case.guard_inputs))
        return [
            f"compiled = {compiled}",
            f"compiled(*{inputs})  # the first call: compiled, and cached behind its prologue's checks",
            f"for guard in ({guards},):  # inputs differing in a property the prologue checks",
            "    expected, actual = program(*guard()), compiled(*guard())",
            '    torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{guard.__name__}: {m}")',
            f"    flags, eager_flags = {OUTPUT_FLAGS.format('actual')}, {OUTPUT_FLAGS.format('expected')}",
            '    assert flags == eager_flags, f"{guard.__name__}: requires_grad of the outputs is {flags}, eager\'s {eager_flags}"',
        ]
    if check == ScriptCheck.NAMES:
        functions = "[compiled]"
        if PATHS[case.path].splits_graphs:  # the functions thunderfx compiled with Thunder
            functions = "[f for info in compiled._backend.subgraph_infos for f in info.thunder_compiled_fns or []]"
        getters = ("last_prologue_traces", "last_traces", "last_backward_traces")
        return [
            f"compiled = {compiled}",
            f"compiled(*{inputs})",
            f"for fn in {functions}:",
            f"    for trace in {' + '.join(f'(thunder.{g}(fn) or [])' for g in getters)}:",
            "        try:",
            "            check_trace(trace)  # Thunder's own: each name defined before it is used, once",
            "        except NotImplementedError:  # re-running a fusion's symbol, which has no meta function",
            "            pass",
        ]
    # ScriptCheck.SPLITS: thunderfx gives every node to Thunder unless Thunder raised on it
    return [
        f"compiled = {compiled}",
        f"compiled(*{inputs})",
        "reasons = [r for info in compiled._backend.subgraph_infos for r in info.split_reasons if 'EXCEPTION' in r.reason_type.name]",
        'assert not reasons, f"thunderfx split the graph because Thunder raised: {reasons[0].exception}"',
    ]


def standalone_script(case: Case) -> str:
    """The standalone script of ``case`` (see the module's docstring): its parts one blank line
    apart, a page read in one go."""
    if case.check == ScriptCheck.GUARDS and not case.guard_inputs:  # no guard call's inputs to make
        case = replace(case, check=ScriptCheck.RUNS)
    path = PATHS[case.path]
    grad = CallLabel.GRAD in path.calls
    imports, compiled = compile_call(case.path)
    inputs = f"make_inputs({'True' if grad else ''})"
    headline = case.headline.replace("\\", "\\\\").replace('"""', "'''")
    runs = "`python`: exit 1 while the bug is there, 0 once fixed."
    if case.check == ScriptCheck.RUNS:
        runs = f"It runs the path; {case.oracle} needs fuzzdce's repro.py to check (exit {NOT_VERIFIED} here)."
    notes = [*case.notes, runs]
    if len(notes) > 1 and len(notes[-2]) + len(runs) < 126:  # the versions and how to run it, one line
        notes[-2:] = [f"{notes[-2]} {runs}"]
    lines = [f'"""{headline}', "", *notes[:-1], notes[-1] + '"""']
    if case.check == ScriptCheck.NAMES:
        imports.append("from thunder.dev_utils.check_trace import check_trace")
    lines += ["import torch", *dict.fromkeys(i for i in ["import thunder", *imports] if i != "import torch")]
    lines += ["", case.program.strip(), "", one_line_list(case.inputs.strip())]
    if case.check == ScriptCheck.GUARDS:
        lines += ["", case.guard_inputs.strip()]
    main = ["test_repro()"]
    if path.device:
        inputs = f"to_device({inputs})"
        lines += ["", f"DEVICE = {path.device!r}", "", TO_DEVICE]
        main = [
            "if not getattr(torch, torch.device(DEVICE).type).is_available():",
            f'    raise SystemExit(print(f"not checked: no {{DEVICE}} device here") or {NOT_VERIFIED})',
            *main,
        ]
    if case.check == ScriptCheck.RUNS:
        main += [f"raise SystemExit({NOT_VERIFIED})"]
    lines += ["", "def test_repro():", *("    " + line for line in body(case, compiled, grad, inputs))]
    lines += ["", 'if __name__ == "__main__":', *("    " + line for line in main)]
    return "\n".join(lines) + "\n"


def one_line_list(inputs: str, width: int = 130) -> str:
    """``make_inputs``' source with a returned list of one element on one line, where it fits."""
    lines = inputs.splitlines()
    if len(lines) >= 3 and lines[-3].strip() == "return [" and lines[-1].strip() == "]" and lines[-2].strip().endswith(","):
        joined = f"{lines[-3].split('return')[0]}return [{lines[-2].strip()[:-1]}]"
        if len(joined) <= width:
            return "\n".join([*lines[:-3], joined])
    return inputs


def guard_source(repro_text: str) -> str:
    """The guard calls' inputs of a bug's ``repro.py`` (its ``make_inputs_guard_*`` functions), as
    source ("" when it has none)."""
    tree = ast.parse(repro_text) if repro_text else ast.Module([], [])
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("make_inputs_guard_")]
    return "\n\n".join(ast.get_source_segment(repro_text, n) for n in functions)


def guard_functions(source: str) -> list[str]:
    """The names of the guard inputs' functions in ``source``."""
    return [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)] if source else []


# --- the cases of a campaign's bug and of a minified program ------------------------------------------


def member_order(member: MemberRecord) -> tuple[int, int]:
    """A bug's members, the one its script checks first: by path (``PATHS``' order), then by check."""
    return (
        list(PATHS).index(member.path) if member.path in PATHS else len(PATHS),
        list(ScriptCheck).index(check_of(member.oracle, member.fault)),
    )


def patch_needed(record: BugRecord) -> str:
    """What the Thunder must carry to show the bug: "" for a bug of Thunder as installed."""
    placement = record.placement or STOCK
    if placement == STOCK or record.builds.get(placement):
        return ""
    known = PLACEMENTS.get(placement)
    what = f"{placement} ({known.description})" if known is not None else placement
    return (
        f"A regression under the patch placement {what}: the Thunder running this script must carry that "
        f"patch (Thunder as installed passes it); `python repro.py --placement {placement}` in the bug's "
        "folder replays it through fuzzdce."
    )


def first_clause(message: str, width: int = 100) -> str:
    """A message's first clause (up to its first line's first "; "), without trace annotations, at
    most ``width`` characters."""
    return without_annotations((message.splitlines() or [""])[0].split("; ", 1)[0])[:width]


def found_with(found: dict[str, str]) -> str:
    """torch's and Thunder's versions (what a maintainer needs of ``versions()``)."""
    return ", ".join(f"{k} {v}" for k, v in found.items() if k in ("torch", "thunder"))


def placement_note(placement: str) -> list[str]:
    """The docstring's line for a failure under a patch of Thunder (none for stock or a build)."""
    if placement in ("", STOCK) or "=" in placement:
        return []
    return [f"Fails only on a Thunder carrying fuzzdce's patch placement {placement} (its repro.py applies it)."]


def bug_case(record: BugRecord, repro_text: str = "") -> Case:
    """The case of a campaign's bug: its smallest program, and the first of the members that program
    shows (``repro_text``: its repro.py, where a guard call's inputs are). A bug joins members of other
    programs too (one decision of a placement: a split on one op, a wrong gradient on four), and a
    script of the smallest program checking one of those would pass while the bug is there."""
    shown = [m for m in record.members if (m.program, m.inputs) == (record.program, record.inputs)]
    member = min(shown or record.members, key=member_order)
    check, guards = check_of(member.oracle, member.fault), guard_source(repro_text)
    if check == ScriptCheck.GUARDS and not guards:
        check = ScriptCheck.RUNS
    notes = [f"fuzzdce bug {record.id} ({record.verdict}), {found_with(record.versions)}.", *placement_note(record.placement)]
    if record.decision is not None:
        notes += summary(record.decision)
    return Case(
        record.program,
        record.inputs,
        member.path,
        check,
        f"{member.oracle} on {member.path}: {first_clause(member.message, 120)}",
        tuple(notes),
        member.oracle,
        guard_inputs=guards if check == ScriptCheck.GUARDS else "",
    )


def minified_case(program, path: str, violation, placement: str = STOCK) -> Case:
    """The case of a minified program (a ``Program``) failing as ``violation`` on ``path``."""
    oracle, message = (violation.oracle, violation.message) if violation is not None else (OUTPUTS, "")
    notes = [f"Minified by fuzzdce, {found_with(versions())}.", *placement_note(placement)]
    check = check_of(oracle, fault_of(violation) if violation is not None else None)
    return Case(
        program.source(),
        program.inputs_source(),
        path,
        check,
        f"{oracle} on {path}: {first_clause(message, 120)}",
        tuple(notes),
        oracle,
    )


# --- which script: the shortest that fails -----------------------------------------------------------


def fails(text: str, placement: str = STOCK) -> bool | None:
    """Does the script ``text`` fail here (its ``test_repro`` raising), under ``placement`` (a patch
    of this process's Thunder)? None: it cannot be checked here (another build's placement, a device
    this machine lacks, eager rejecting the program)."""
    try:
        chosen = resolve(placement)
    except Exception:
        return None
    if chosen.build is not None:
        return None
    namespace: dict = {"__name__": "fuzzdce_standalone_check"}
    with contextlib.suppress(SystemExit):
        exec(compile(text, "<standalone>", "exec"), namespace)  # noqa: S102 - our own script
    device = namespace.get("DEVICE")
    if device is not None:
        if not getattr(torch, torch.device(device).type).is_available():
            return None
    try:
        namespace["program"](*namespace["make_inputs"](True))
    except Exception:
        return None  # eager rejects the program: nothing to check
    torch._dynamo.reset()
    try:
        with chosen.factory():
            namespace["test_repro"]()
    except Exception:
        return True
    finally:
        torch._dynamo.reset()
    return False


def verified(case: Case, placement: str = STOCK, check: Callable[[str, str], bool | None] = fails) -> str:
    """The script of ``case``, the shortest that fails here: ``ones_like`` cotangents where it fails
    with them, else the campaign's seeded ones; of several guard calls, the first that fails alone.
    As written when none can be checked here."""
    text = standalone_script(case)
    if case.check == ScriptCheck.GUARDS and len(guard_functions(case.guard_inputs)) > 1:
        for alone in single_guards(case.guard_inputs):
            shorter = standalone_script(replace(case, guard_inputs=alone))
            if check(shorter, placement):
                return shorter
        return text
    if case.check != ScriptCheck.GRADS or check(text, placement) is not False:
        return text
    seeded = standalone_script(replace(case, seeded_cotangents=True))
    return seeded if check(seeded, placement) else text


def single_guards(source: str) -> list[str]:
    """Each guard inputs' function of ``source`` alone, as source."""
    tree = ast.parse(source)
    return [ast.get_source_segment(source, n) for n in tree.body if isinstance(n, ast.FunctionDef)]

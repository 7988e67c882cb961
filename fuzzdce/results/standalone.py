"""A bug as a script that needs torch and Thunder only: what ``fuzzdce issue`` hands a Thunder maintainer.

``repro.py`` replays a bug through fuzzdce (under placements and builds, with every oracle); this
script is its plain form, in the shape of the repros ``thunder.dynamo.report`` writes: the program
and its seeded inputs, the compile call of each failing path (the source of
``running.paths``' ``compile`` function, and of its context where it has one), the same calls as
the campaign made (plain, grad with seeded cotangents, guard calls), and a comparison with eager
by ``torch.testing.assert_close`` whose ``assert`` says what differs. ``python script.py`` exits 1
with that message while the bug is present and 0 once it is fixed; ``pytest script.py`` runs one
test per path.

What it checks per oracle: ``raises`` (Thunder raising on a call eager makes; counted for every
oracle, as in ``repro.py``), ``outputs``, ``grads`` (each output's ``requires_grad`` and the
gradients, at finite inputs), ``mutations`` (inputs after the call), ``guards`` (calls that vary a
property the prologue checks), ``splits`` (thunderfx splits because Thunder raised) and ``names``
(Thunder's own ``check_trace`` on every trace). The checks that compare two Thunders (``dce-sound``,
``split-set``, ``idempotent``) and fuzzdce's own trace rules beyond ``check_trace`` have no
plain-Thunder form: for those the script says so and ``repro.py`` replays them. A regression
under a patch placement shows only on a Thunder carrying that patch: the script's docstring names it.

The functions below the ``printed`` line are printed into the script (``inspect.getsource``), so
they import nothing of fuzzdce; ``tests/test_standalone.py`` runs scripts where fuzzdce cannot be imported.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap
from pathlib import Path

import torch

from fuzzdce.core.model import STOCK, CallLabel
from fuzzdce.results.records import BugRecord
from fuzzdce.results.store import REPRO_FILE, read_bug
from fuzzdce.running import execution
from fuzzdce.running.execution import _detach, _flat_tensors, backward
from fuzzdce.running.paths import PATHS
from fuzzdce.running.placements import PLACEMENTS

# The call labels the printed functions compare with (the script holds them as literals).
PLAIN, GRAD = str(CallLabel.PLAIN), str(CallLabel.GRAD)

# The oracles the script checks itself; the others it can only run the path for.
CHECKED = ("raises", "outputs", "grads", "mutations", "guards", "splits", "names")


def failing_paths(record: BugRecord) -> dict[str, tuple[str, ...]]:
    """path -> the oracles its members failed there, each path once, in ``PATHS``' order."""
    by_path: dict[str, set[str]] = {}
    for member in record.members:
        by_path.setdefault(member.path, set()).add(member.oracle)
    return {name: tuple(sorted(by_path[name])) for name in PATHS if name in by_path}


def guard_source(repro_text: str) -> str:
    """The guard calls' inputs (``make_inputs_guard_*`` and ``GUARD_INPUTS``) of a ``repro.py``, as
    source ("" when it has none): the script makes the same calls."""
    tree = ast.parse(repro_text)
    parts = []
    for node in tree.body:
        named = getattr(node, "name", None) or next((t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)), "")
        if named.startswith("make_inputs_") or named == "GUARD_INPUTS":
            parts.append(ast.get_source_segment(repro_text, node))
    return "\n\n\n".join(parts)


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


def which_thunder(record: BugRecord) -> str:
    """The Thunder that showed the bug: a build's spec, else the record's line for its placement."""
    placement = record.placement or STOCK
    spec = record.builds.get(placement)
    if spec:
        return f"{record.thunders.get(placement, spec)} ({spec})"
    return record.thunders.get(placement, record.thunders.get(STOCK, ""))


def script(record: BugRecord, repro_text: str = "") -> str:
    """The standalone script of the bug ``record`` (``repro_text``: its ``repro.py``, for the guard calls' inputs)."""
    paths = failing_paths(record)
    found = ", ".join(f"{k} {v}" for k, v in record.versions.items())
    thunder = which_thunder(record)
    unchecked = sorted({o for oracles in paths.values() for o in oracles} - set(CHECKED))
    notes = [
        f"Shown on: {thunder}." if thunder else "",
        patch_needed(record),
        (
            f"{', '.join(unchecked)}: compares two Thunders or reads traces by fuzzdce's own rules; this script "
            "runs the path and checks what plain Thunder can (repro.py replays the rest)."
            if unchecked
            else ""
        ),
    ]
    first_line = (record.message.splitlines() or [""])[0][:200].replace("\\", "\\\\").replace('"""', "'''")
    docstring = "\n".join(
        [
            f'"""Thunder bug found by fuzzdce (bug {record.id}, {record.verdict}): {", ".join(record.oracles)} on {", ".join(paths)}.',
            "",
            first_line,
            "",
            "Needs torch and lightning-thunder only. `python THIS_FILE` exits 1 with an AssertionError saying what",
            "differs from eager while the bug is present, 0 once it is fixed; `pytest THIS_FILE` runs one test per path.",
            f"Found with {found}." if found else "",
            *[textwrap_line(n) for n in notes if n],
            '"""',
        ]
    )
    guards = guard_source(repro_text) if any("guards" in o for o in paths.values()) else ""
    compile_parts, tests = [], []
    printed_contexts: set[str] = set()
    for name, oracles in paths.items():
        path = PATHS[name]
        compile_parts.append(inspect.getsource(path.compile).rstrip())
        context = "contextlib.nullcontext"
        if path.context is not contextlib.nullcontext:
            context = path.context.__name__
            if context not in printed_contexts:
                printed_contexts.add(context)
                compile_parts.append(inspect.getsource(path.context).rstrip())
        # The resized call needs other shapes of the program, which a script does not have (nor has
        # repro.py); guard calls only where a guard failed (their inputs are repro.py's).
        calls = tuple(
            str(label)
            for label in path.calls
            if label != CallLabel.RESIZED and (not label.is_guard or ("guards" in oracles and guards))
        )
        tests.append(
            f"def test_{name.replace('-', '_')}():\n"
            f'    """{name}: {path.compile.__name__}, the {", ".join(calls)} call(s); checked: {", ".join(oracles)}."""\n'
            f"    check({name!r}, {path.compile.__name__}, {context}, {calls!r}, {oracles!r}, device={path.device!r})\n"
        )
    test_names = [f"test_{name.replace('-', '_')}" for name in paths]
    main = (
        f'if __name__ == "__main__":\n    failed = run_all([{", ".join(test_names)}])\n    raise SystemExit(1 if failed else 0)\n'
    )
    sections = [
        docstring,
        "from __future__ import annotations\n\nimport contextlib\nfrom collections.abc import Iterator\n\nimport torch",
        "# --- the program and its inputs, as fuzzdce ran them (values seeded) ---",
        record.program.rstrip(),
        record.inputs.rstrip(),
        *([guards] if guards else []),
        "# --- how each failing path compiles (fuzzdce.running.paths) ---",
        *compile_parts,
        "# --- the calls, as the campaign made them, and the comparison with eager ---",
        f"PLAIN, GRAD = {PLAIN!r}, {GRAD!r}  # the calls' labels",
        *(inspect.getsource(f).rstrip() for f in PRINTED),
        *(t.rstrip() for t in tests),
        main.rstrip(),
    ]
    return "\n\n\n".join(s for s in sections if s) + "\n"


def textwrap_line(text: str, width: int = 100) -> str:
    """``text`` wrapped for the docstring."""
    return "\n".join(textwrap.wrap(text, width))


def script_of_folder(folder: Path) -> str:
    """The standalone script of the bug saved in ``folder`` (its bug.json and repro.py)."""
    repro = folder / REPRO_FILE
    return script(read_bug(folder), repro.read_text() if repro.is_file() else "")


# --- printed into the script: self-contained (torch and Thunder only) -----------------------------


def inputs_of(label: str):
    """The inputs of the call ``label``: plain, grad (the inputs drawn to require grad do), or a guard call's."""
    if label == PLAIN:
        return make_inputs()  # noqa: F821 - defined in the script
    if label == GRAD:
        return make_inputs(requires_grad=True)  # noqa: F821
    return globals()["GUARD_INPUTS"][label]()


def make_call(fn, label: str, device=None) -> dict:
    """``fn`` on the inputs of call ``label``: its outputs, their requires_grad, the gradients of the
    inputs that require grad (grad call, seeded cotangents), the inputs after it; or where it raised."""
    call = {"stage": "inputs"}
    try:
        inputs = inputs_of(label)
        if device is not None:
            inputs = [x.detach().to(device).requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x for x in inputs]
        call["stage"] = "forward"
        result = fn(*inputs)
        outputs = _flat_tensors(result)
        call["outputs"] = _detach(list(result) if isinstance(result, (tuple, list)) else [result])
        call["requires_grad"] = [o.requires_grad for o in outputs]
        if label == GRAD:
            call["stage"] = "backward"
            call["grad_inputs"] = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
            call["grads"] = backward(outputs, inputs)
        call["inputs_after"] = _detach(inputs)
        call["stage"] = ""
    except Exception as e:  # Thunder raising is what the check reports
        call["error"] = e
    return call


def differs(actual, expected, what: str) -> list[str]:
    """Why ``actual`` is not ``expected`` (``torch.testing.assert_close`` with the value's own
    dtype's default tolerances, NaN equal; integers exactly): [] when they agree."""
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            return [f"{what}: {actual!r}, eager's {expected!r}"]
        return [reason for i, (a, e) in enumerate(zip(actual, expected)) for reason in differs(a, e, f"{what}[{i}]")]
    if isinstance(expected, str) or expected is None:
        return [] if actual == expected else [f"{what}: {actual!r}, eager's {expected!r}"]
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError as e:
        return [f"{what}: " + "; ".join(line.strip() for line in str(e).strip().splitlines()[:4] if line.strip())]
    except Exception as e:  # values assert_close cannot compare
        return [f"{what}: {type(e).__name__}: {e}"]
    return []


def at_finite_inputs(grads, inputs, grad_inputs):
    """The gradients, zero where their input was not finite (a derivative there is a convention)."""
    masked = []
    for grad, i in zip(grads, grad_inputs):
        x = inputs[i]
        if isinstance(grad, torch.Tensor) and grad.shape == x.shape and not bool(torch.isfinite(x).all()):
            grad = torch.where(torch.isfinite(x), grad, torch.zeros((), dtype=grad.dtype))
        masked.append(grad)
    return masked


def compared(label: str, actual: dict, expected: dict, oracles) -> list[str]:
    """What differs between Thunder's call ``label`` and eager's, for the checks in ``oracles``."""
    if "error" in expected:
        return []  # eager rejects this call too: nothing to compare
    guard = label.startswith("guard-")
    if "error" in actual:
        if guard:
            return []  # a clear error on a call that must miss the cache is what a guard may do
        import traceback

        e = actual["error"]
        frame = traceback.extract_tb(e.__traceback__)[-1]  # where: a bare ``assert`` says nothing else
        where = f" (raised at {frame.filename}:{frame.lineno}, in {frame.name})"
        return [f"{label} call ({actual['stage']}): Thunder raised where eager did not: {type(e).__name__}: {e}{where}"]
    inputs = expected["inputs_after"]
    problems = []
    if ("guards" if guard else "outputs") in oracles:
        problems += differs(actual["outputs"], expected["outputs"], f"{label} call output")
    if ("guards" in oracles if guard else "grads" in oracles) and actual["requires_grad"] != expected["requires_grad"]:
        problems.append(f"{label} call: requires_grad of outputs {actual['requires_grad']}, eager's {expected['requires_grad']}")
    if "grads" in oracles and not guard and expected.get("grads") is not None:
        finite = [at_finite_inputs(c["grads"] or [], inputs, c["grad_inputs"]) for c in (actual, expected)]
        problems += differs(finite[0], finite[1], f"{label} call grads (of inputs {expected['grad_inputs']})")
    if "mutations" in oracles and not guard:
        problems += differs(actual["inputs_after"], inputs, f"{label} call input after the call")
    return problems


def thunder_traces(compiled) -> list:
    """Every trace Thunder made for ``compiled`` (a thunder.jit function, or thunderfx's subgraphs'):
    forward, backward and prologue."""
    import thunder

    backend = getattr(compiled, "_backend", None)
    functions = [compiled] if backend is None else [f for info in backend.subgraph_infos for f in info.thunder_compiled_fns or []]
    traces = []
    for fn in functions:
        for getter in (thunder.last_traces, thunder.last_backward_traces, thunder.last_prologue_traces):
            with contextlib.suppress(Exception):  # none when compiling failed early
                traces += [t for t in getter(fn) or [] if t is not None]
    return traces


def malformed_traces(compiled) -> list[str]:
    """Thunder's own ``check_trace`` on each trace, in the cache-info context Thunder compiles in."""
    import thunder
    from thunder.dev_utils.check_trace import check_trace

    problems = []
    for trace in thunder_traces(compiled):

        @thunder._with_cache_info_ctx
        def checked(trace):
            thunder._get_cache_info().update(default_dtype=torch.get_default_dtype(), default_device=torch.get_default_device())
            check_trace(trace)

        try:
            checked(trace)
        except NotImplementedError:
            pass  # re-executing an executor's fusion symbol, which has no meta function
        except Exception as e:
            problems.append(f"check_trace: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
    return problems


def exception_splits(compiled) -> list[str]:
    """thunderfx's splits because Thunder raised on a node (not for an op it does not support)."""
    backend = getattr(compiled, "_backend", None)
    reasons = [r for info in getattr(backend, "subgraph_infos", []) for r in info.split_reasons]
    return [
        f"thunderfx split the graph because Thunder raised: {r.reason_type.name}: {r.info} -- exception: {r.exception}"
        for r in reasons
        if r.reason_type.name in ("EXCEPTION_PROXY_THUNDER_OP", "EXCEPTION_META_THUNDER_OP")
    ]


def check(name: str, compile_path, context, calls, oracles, device=None) -> None:
    """Compile ``program`` as path ``name`` does, make its calls in order (guard calls after the
    others, once the traces are read), and assert each agrees with eager's."""
    guard_inputs = globals().get("GUARD_INPUTS", {})
    calls = [c for c in calls if not c.startswith("guard-") or c in guard_inputs]
    expected = {label: make_call(program, label) for label in calls}  # noqa: F821 - defined in the script
    actual, problems = {}, []
    with context():
        try:
            compiled = compile_path(program)  # noqa: F821
        except Exception as e:
            raise AssertionError(f"{name}: compiling raised where eager runs: {type(e).__name__}: {e}") from e
        for label in [c for c in calls if not c.startswith("guard-")]:
            actual[label] = make_call(compiled, label, device)
        if "splits" in oracles:
            problems += exception_splits(compiled)
        if "names" in oracles:
            problems += malformed_traces(compiled)
        if all("error" not in c for c in actual.values()):
            for label in [c for c in calls if c.startswith("guard-")]:
                actual[label] = make_call(compiled, label, device)
    for label, call in actual.items():
        problems += compared(label, call, expected[label], oracles)
    assert not problems, f"{name} differs from eager:\n" + "\n".join(f"- {p}" for p in problems)


def run_all(tests) -> int:
    """Each test, its failure printed: how many failed (``python THIS_FILE``)."""
    failed = 0
    for test in tests:
        try:
            test()
        except AssertionError as e:
            failed += 1
            print(f"FAIL {test.__name__}: {e}")
        else:
            print(f"ok: {test.__name__}")
    return failed


# The functions printed into every script, in order (the execution helpers are fuzzdce's own, unchanged).
PRINTED = (
    execution._flat_tensors,
    execution._detach,
    execution.cotangents,
    execution.backward,
    inputs_of,
    make_call,
    differs,
    at_finite_inputs,
    compared,
    thunder_traces,
    malformed_traces,
    exception_splits,
    check,
    run_all,
)

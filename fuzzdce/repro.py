"""Reproducer scripts: one finding as a standalone, seeded Python file a Thunder engineer can run.

The script holds the program and its seeded inputs, the compile path written out in plain Thunder
calls, and the oracle's check; fuzzdce is imported only to apply a placement (and for the
``names`` check, which extends Thunder's ``check_trace``). It exits 1 and prints the failure while
the bug is present, 0 once fixed, 2 when eager itself rejects the program. ``--placement`` reruns
it under another placement, e.g. ``stock`` or ``my_module:my_fix``.

Paths and oracles without a written-out template fall back to :func:`reproduce`, which runs them
through fuzzdce's own machinery, so new paths and oracles get reproducers without changes here.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable
from dataclasses import dataclass

from fuzzdce.execution import run_path
from fuzzdce.oracles import ORACLES
from fuzzdce.oracles.outputs import TOLERANCES
from fuzzdce.oracles.splits import EXCEPTION_SPLITS
from fuzzdce.placements import resolve

# --- script pieces: one entry per compile path and per oracle -------------------------------------

# Each defines run_compiled(record), filling record["outputs"], ["traces"], ["split_reasons"].
PATH_SOURCE = {
    "jit": '''
def run_compiled(record):
    """thunder.jit, forward only, on the inputs as drawn."""
    import thunder

    jfn = thunder.jit(program)
    try:
        record["outputs"] = jfn(*make_inputs())
    finally:
        with contextlib.suppress(Exception):  # last_traces raises when compilation never finished
            record["traces"] = list(thunder.last_traces(jfn) or [])
''',
    "thunderfx": '''
def run_compiled(record):
    """thunder.dynamo.thunderfx on inputs that require grad, so the splitter sees autograd.

    Regions thunderfx does not give to Thunder run eagerly instead of through Inductor (as in
    fuzzdce): they never reach Thunder, and Inductor's C++ compiles take seconds each.
    """
    from unittest import mock

    import thunder
    from thunder.dynamo import thunderfx

    torch._dynamo.reset()
    compiled = thunderfx(program)
    try:
        with mock.patch("torch._inductor.compile", lambda gm, example_inputs: gm):
            record["outputs"] = compiled(*make_inputs(requires_grad=True))
    finally:
        infos = compiled._backend.subgraph_infos
        record["split_reasons"] = [r for info in infos for r in info.split_reasons]
        for fn in (fn for info in infos for fn in (info.thunder_compiled_fns or [])):
            with contextlib.suppress(Exception):  # last_traces raises when compilation never finished
                record["traces"] += list(thunder.last_traces(fn) or [])
''',
}

# Each defines check(record, expected) -> list of problems (the compiled run did not raise).
CHECK_SOURCE = {
    "raises": '''
def check(record, expected):
    """Raising is checked for every oracle (see main)."""
    return []
''',
    "outputs": f'''
TOLERANCES = {{{", ".join(f"{dtype!s}: {tol!r}" for dtype, tol in TOLERANCES.items())}}}


def check(record, expected):
    """Outputs agree with eager: torch.testing.assert_close, NaN in the same places."""
    actual = record["outputs"]
    if len(actual) != len(expected):
        return [f"{{len(actual)}} outputs, eager has {{len(expected)}}"]
    problems = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        try:
            torch.testing.assert_close(a.detach(), e.detach(), equal_nan=True, **TOLERANCES.get(e.dtype, {{}}))
        except AssertionError as error:
            problems.append(f"output[{{i}}]: {{error}}")
    return problems
''',
    "splits": f'''
EXCEPTION_SPLITS = {EXCEPTION_SPLITS!r}


def check(record, expected):
    """thunderfx split no graph because Thunder raised (unsupported ops are fine)."""
    return [
        f"{{r.reason_type.name}}: {{r.info}} -- exception: {{r.exception}}"
        for r in record["split_reasons"]
        if r.reason_type.name in EXCEPTION_SPLITS
    ]
''',
    "names": '''
def check(record, expected):
    """Every trace well-formed: Thunder's check_trace plus fuzzdce's checks for reused names."""
    from fuzzdce.oracles.names import trace_problems

    return [problem for trace in record["traces"] for problem in trace_problems(trace)]
''',
}

MAIN_SOURCE = '''
def apply_placement(name):
    """The DCE placement under test (stock: Thunder as installed, nothing imported from fuzzdce)."""
    if name == "stock":
        return contextlib.nullcontext()
    from fuzzdce.placements import resolve

    return resolve(name)()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement to apply (default: {PLACEMENT})")
    placement = parser.parse_args(argv).placement
    try:
        expected = program(*make_inputs())
    except Exception:
        traceback.print_exc()
        print("eager itself rejects this program: it reproduces nothing", file=sys.stderr)
        return 2
    record = {"outputs": None, "traces": [], "split_reasons": []}
    problems = []
    with apply_placement(placement):
        try:
            run_compiled(record)
        except Exception as error:
            traceback.print_exc()
            problems.append(f"raises: {type(error).__name__}: {error}")
    if not problems:
        problems = [f"{ORACLE}: {p}" for p in check(record, expected)]
    for problem in problems:
        print(f"FAIL {problem}")
    if not problems:
        print(f"ok: {ORACLE} holds on {PATH} under {placement}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
'''

FALLBACK_MAIN_SOURCE = '''
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--placement", default=PLACEMENT, help=f"placement to apply (default: {PLACEMENT})")
    placement = parser.parse_args(argv).placement
    from fuzzdce.repro import reproduce

    return reproduce(program, make_inputs, path=PATH, placement=placement, oracle=ORACLE)


if __name__ == "__main__":
    raise SystemExit(main())
'''


def versions() -> dict[str, str]:
    """The versions a finding was made with (recorded in finding.json and each reproducer)."""
    import thunder
    import torch

    import fuzzdce

    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "thunder": getattr(thunder, "__version__", "unknown"),
        "fuzzdce": fuzzdce.__version__,
    }


def script(finding) -> str:
    """The reproducer of ``finding`` (a ``fuzzdce.findings.Finding``) as Python source."""
    v = finding.violation
    explicit = v.path in PATH_SOURCE and v.oracle in CHECK_SOURCE
    versions_line = ", ".join(f"{k} {value}" for k, value in versions().items())
    message = v.message.replace("\\", "\\\\").replace('"""', "'''")[:600]
    header = (
        f'"""fuzzdce finding {finding.id} [{finding.verdict}]: {v.oracle} on {v.path} under {finding.placement}.\n\n'
        f"{message}\n\n"
        f"Shown under: {', '.join(finding.placements)}. Found with {versions_line}.\n"
        "Exits 1 while the bug is present, 0 once fixed (2: eager rejects the program).\n"
        "Try a fix: python repro.py --placement my_module:my_patch\n"
        '"""\n\n'
        "import argparse\nimport contextlib\nimport sys\nimport traceback\n\nimport torch\n\n"
        f"PATH = {v.path!r}\nPLACEMENT = {finding.placement!r}\nORACLE = {v.oracle!r}\n\n\n"
    )
    body = f"{finding.program.source()}\n\n{finding.program.inputs_source()}"
    if explicit:
        pieces = [PATH_SOURCE[v.path], CHECK_SOURCE[v.oracle], MAIN_SOURCE]
    else:
        pieces = [FALLBACK_MAIN_SOURCE]
    return header + body + "\n" + "\n".join(pieces)


# --- running reproducers ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptProgram:
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function."""

    fn: Callable
    inputs: Callable

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)


def load_script(path) -> ScriptProgram:
    """The program and inputs of a reproducer file, without running its main."""
    namespace = runpy.run_path(str(path), run_name="fuzzdce_reproducer")
    return ScriptProgram(namespace["program"], namespace["make_inputs"])


def reproduce(fn: Callable, make_inputs: Callable, *, path: str, placement: str, oracle: str) -> int:
    """Run ``fn`` through ``path`` under ``placement`` and apply ``oracle``; 1 if it fails, else 0."""
    program = ScriptProgram(fn, make_inputs)
    reference = run_path("eager", program, resolve("stock"))
    if reference.error is not None:
        print(f"eager itself fails: {reference.error}", file=sys.stderr)
        return 2
    outcome = run_path(path, program, resolve(placement))
    violations = ORACLES[oracle](outcome, reference, None)
    if outcome.error is not None and oracle != "raises":
        print(outcome.error.traceback, file=sys.stderr)
        violations = [*violations, f"raises: {outcome.error}"]
    for v in violations:
        print(f"FAIL {v}")
    if not violations:
        print(f"ok: {oracle} holds on {path} under {placement}")
    return 1 if violations else 0

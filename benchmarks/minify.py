"""Minify benchmark: five programs of 120-300 statements, each holding one real Thunder bug of a different
op, minified by ``fuzzdce minify`` and by PyTorch's ``fx_minifier`` on the same graphs.

For each program it prints: statements before and after, queries, seconds, whether the result is
1-minimal (no single statement, returned value or unread input can go with the same failure:
each such candidate checked), and the same for ``torch/_functorch/fx_minifier.py``'s ``minifier``
run in this process on ``torch.fx.symbolic_trace`` of the same program with the same inputs and the
same check (the same exception type raised at the same place in Thunder, or values differing
from eager's),
its size in call nodes, cut after ``FX_MINIFIER_SECONDS`` (its smallest graph by then); under each
row, fuzzdce's shrink steps inside statements (``shrink_passes.SUB_STATEMENT``: the index_add and
logsumexp cases' faulty statements hold more than the failing call) and its final statements. The
median of fuzzdce's seconds closes the table.

The bugs are Thunder 0.2.6's (on CPU): no grad rule for ``index_add``, ``flip``, ``remainder``,
``lerp`` (jit-grad), ``logsumexp`` of a 0-d tensor raising IndexError (jit). (``std`` of a 0-d
tensor, another value than eager's alone, is NaN in both once later ops read it; ``aminmax``'s
failing registration under grad did not show in a long program: neither is a case.) The statements around them are elementwise ops
with grad rules and bounded values, each reading the last value and one earlier value at random.

Usage: PYTHONPATH=. python benchmarks/minify.py [--case index_add ...] [--no-fx-minifier]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import time
import warnings

# name: (fault template over the last value {0} and an earlier one {1}, path, statements, position)
CASES = {
    "index_add": ("torch.index_add({0}, 0, torch.tensor([0, 2]), {1}[:2])", "jit-grad", 120, 70),
    "flip": ("torch.flip({0}, (0,))", "jit-grad", 160, 101),
    "remainder": ("torch.remainder({0}, 0.7)", "jit-grad", 200, 57),
    "lerp": ("torch.lerp({0}, {1}, 0.3)", "jit-grad", 240, 180),
    "logsumexp": ("torch.logsumexp({0}.sum(), 0)", "jit", 300, 150),
}
# fx_minifier's time per program: it runs in this process, with no time limit of its own per candidate.
FX_MINIFIER_SECONDS = 150.0
UNARY = ("sin", "cos", "tanh", "sigmoid", "atan")
BINARY = ("mul", "add", "sub")


def program_with_bug(name: str, seed: int = 0):
    """The case's program: two (4, 6) inputs, its statements, the bug at its position, returning the last three values."""
    from fuzzdce.core.program import Program, Ref, Step, TensorInput

    fault, _, n, at = CASES[name]
    rng = random.Random(seed)
    steps = []
    for i in range(n):
        last, other = 2 + i - 1 if i else 0, rng.randrange(0, 2 + i)
        if i == at:
            steps.append(Step(name, fault, (Ref(last), Ref(other))))
        elif rng.random() < 0.4:
            op = rng.choice(BINARY)
            steps.append(Step(op, f"torch.{op}({{0}}, {{1}})", (Ref(last), Ref(other))))
        else:
            op = rng.choice(UNARY)
            steps.append(Step(op, f"torch.{op}({{0}})", (Ref(last),)))
    values = 2 + n
    return Program((TensorInput((4, 6)), TensorInput((4, 6))), tuple(steps), (values - 3, values - 2, values - 1))


def single_removals(program):
    """Every program one statement (its values fed in fresh), one returned value or one unread input smaller."""
    from fuzzdce.core.program import without_range
    from fuzzdce.fuzzing import shrink_passes

    specs = shrink_passes.value_specs(program)
    for i in range(program.n_ops):
        candidate = without_range(program, range(i, i + 1), specs)
        if candidate is not None:
            yield candidate
    yield from shrink_passes.drop_outputs(program)
    yield from shrink_passes.drop_unused_inputs(program)


def one_minimal(minifier, program) -> tuple[bool, int]:
    """Is ``program`` 1-minimal against the minifier's failure, and how many candidates say so."""
    checked = 0
    for candidate in single_removals(program):
        checked += 1
        if minifier.fails(candidate):
            return False, checked
    return True, checked


def fuzzdce_minify(name: str):
    from fuzzdce.fuzzing.minify import GRACE_SECONDS, Criterion, Failure, Minifier
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.sandbox import SandboxedJobs

    program = program_with_bug(name)
    path = CASES[name][1]
    evaluator = Evaluator(SandboxedJobs(grace=GRACE_SECONDS, name="minify worker"))
    try:
        minifier = Minifier(evaluator, resolve("stock"), path, timeout=None, log=lambda line: print("   ", line, file=sys.stderr))
        result = minifier.minify(program, Failure(Criterion.SAME))
        minimal, checked = one_minimal(minifier, result.program)
    finally:
        evaluator.close()
    return program, result, minimal, checked


def fx_minify(program, path: str, target):
    """``fx_minifier.minifier`` on the program's FX graph, checking the same failure in this process:
    (call nodes after, queries, seconds), or a reason it could not run."""
    import torch
    import torch.fx
    from torch._functorch.fx_minifier import minifier

    from fuzzdce.core.model import ErrorInfo

    grad = path == "jit-grad"
    queries = [0]
    deadline = time.monotonic() + FX_MINIFIER_SECONDS

    def fresh(inputs):
        return [
            i.detach().clone().requires_grad_(grad and i.is_floating_point()) if isinstance(i, torch.Tensor) else i
            for i in inputs
        ]

    def run(fn, inputs):
        outputs = fn(*inputs)
        outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
        if grad:
            tensors = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
            if tensors:
                torch.autograd.backward(tensors, [torch.ones_like(t) for t in tensors])
        return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs]

    def module_fails(fx_g, inputs) -> bool:
        import thunder

        if time.monotonic() > deadline:  # out of time: nothing more is accepted, the minifier ends its passes
            return False
        queries[0] += 1
        try:
            expected = run(fx_g, fresh(inputs))
        except Exception:
            return False  # eager rejects it
        try:
            actual = run(thunder.jit(fx_g), fresh(inputs))
        except Exception as e:  # the same exception at the same place in Thunder (names differ: FX's, not fuzzdce's)
            error = ErrorInfo.from_exception(e)
            return target.oracle == "raises" and (error.type, error.frame) == (target.error_type, target.frame)
        if target.oracle != "outputs":
            return False
        try:
            torch.testing.assert_close(actual, expected, equal_nan=True, rtol=1e-4, atol=1e-5)
        except AssertionError:
            return True
        return False

    try:
        graph = torch.fx.symbolic_trace(program.function())
    except Exception as e:
        return f"cannot trace: {type(e).__name__}"
    started = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            minimal, _ = minifier(graph, program.make_inputs(), module_fails, dump_state=lambda *a, **k: None)
        except Exception as e:
            return f"failed: {type(e).__name__}: {str(e)[:80]}"
    nodes = sum(1 for node in minimal.graph.nodes if node.op in ("call_function", "call_method", "call_module"))
    return nodes, queries[0], time.perf_counter() - started, time.monotonic() > deadline


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="cases to run (default: all)")
    parser.add_argument("--no-fx-minifier", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from fuzzdce.core.quiet import quiet_library_warnings
    from fuzzdce.fuzzing.shrink_passes import SUB_STATEMENT

    quiet_library_warnings()
    seconds = []
    print(
        f"{'bug':<10} {'path':<9} {'statements':>10} {'queries':>7} {'seconds':>8} {'1-minimal':>14}   fx_minifier (call nodes, queries, s)"
    )
    for name in args.case or list(CASES):
        program, result, minimal, checked = fuzzdce_minify(name)
        seconds.append(result.seconds)
        fx = "not run" if args.no_fx_minifier else fx_minify(program, result.path, result.failure.target)
        fx_text = (
            fx if isinstance(fx, str) else f"{fx[0]} nodes, {fx[1]} queries, {fx[2]:.1f} s" + (" (cut: time)" if fx[3] else "")
        )
        print(
            f"{name:<10} {result.path:<9} {program.n_ops:>4} -> {result.program.n_ops:<3} {result.queries:>7} {result.seconds:>8.1f} "
            f"{('yes' if minimal else 'NO') + f' ({checked} checks)':>14}   {fx_text}",
            flush=True,
        )
        inside = ", ".join(f"{k} {n}" for k, n in sorted(result.taken.items()) if k in SUB_STATEMENT) or "none"
        print(f"           kept: {result.program.ops}; {str(result.violation)[:140]}", flush=True)
        print(
            f"           shrink steps inside statements: {result.inside_statements} ({inside}); final statement(s):", flush=True
        )
        for line in result.program.source().splitlines()[1:-1]:
            print(f"           {line.strip()}", flush=True)
    print(f"median fuzzdce minify: {statistics.median(seconds):.1f} s over {len(seconds)} programs")


if __name__ == "__main__":
    main()

"""Compile paths: each records the calls, traces and splits its oracles need, and never raises."""

import contextlib

import pytest
import torch
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.model import Placement
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.running.path_running import run_path
from fuzzdce.running.paths import DEFAULT_PATHS, PATHS, nvfuser_unavailable
from fuzzdce.running.placements import resolve
from fuzzdce.running.variants import resized_program

PROGRAM = DEAD_CODE_PROGRAM


def program_on(*shapes, template="torch.mul({0}, {1})"):
    inputs = tuple(TensorInput(s) for s in shapes)
    return Program(inputs, (Step("op", template, tuple(Ref(i) for i in range(len(inputs)))),), (len(inputs),), seed=2)


def test_every_path_is_selectable_and_defaults_are_supported_here():
    assert set(DEFAULT_PATHS) <= set(PATHS)
    assert {"jit", "jit-grad", "jit-symbolic", "jit-torchcompile", "thunderfx", "thunderfx-dynamic"} <= set(DEFAULT_PATHS)
    assert ("jit-nvfuser" in DEFAULT_PATHS) == (nvfuser_unavailable() == "")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip taken without CUDA")
def test_nvfuser_without_cuda_is_a_clean_skip():
    outcome = run_path("jit-nvfuser", PROGRAM, resolve("stock"))
    assert "CUDA" in outcome.skipped and outcome.error is None and outcome.calls == {}


def test_eager_reference_makes_every_labelled_call():
    reference = run_path("eager", PROGRAM, resolve("stock"))
    assert set(reference.calls) == {"plain", "grad", "resized"}
    assert reference.calls["grad"].grads is not None and reference.calls["plain"].grads is None
    assert reference.calls["resized"].outputs[0].shape != reference.calls["plain"].outputs[0].shape


@pytest.mark.parametrize("path", ["jit-grad", "jit-torchcompile", "thunderfx", "thunderfx-dynamic"])
def test_grad_paths_backpropagate_like_eager(path):
    reference = run_path("eager", PROGRAM, resolve("stock"))
    call = run_path(path, PROGRAM, resolve("stock")).calls["grad"]
    assert call.error is None
    assert call.output_requires_grad == reference.calls["grad"].output_requires_grad == [True]
    for mine, eager in zip(call.grads, reference.calls["grad"].grads, strict=True):
        torch.testing.assert_close(mine, eager)


def test_symbolic_values_path_calls_again_on_other_shapes():
    outcome = run_path("jit-symbolic", PROGRAM, resolve("stock"))
    assert list(outcome.calls) == ["plain", "resized"] and outcome.error is None
    assert outcome.calls["resized"].outputs[0].shape == (3, 4)


def test_symbolic_values_path_says_why_it_skips_the_second_call():
    outcome = run_path("jit-symbolic", program_on((1,), (1, 1)), resolve("stock"))
    assert list(outcome.calls) == ["plain"]
    assert any("second call skipped" in note for note in outcome.notes)


def test_resized_shapes_keep_equal_sizes_equal_and_ones_one():
    resized, _ = resized_program(program_on((2, 1, 3), (3,), (2, 3, 3)))
    assert [spec.shape for spec in resized.inputs] == [(3, 1, 4), (4,), (3, 4, 4)]


def test_resized_shapes_must_run_in_eager():
    fixed_shape = program_on((2, 3), template="torch.reshape({0}, (3, 2))")
    resized, why = resized_program(fixed_shape)
    assert resized is None and "eager rejects" in why


def test_thunder_traces_carry_provenance_forward_and_backward():
    outcome = run_path("thunderfx-dynamic", PROGRAM, resolve("stock"))
    labels = [label for label, _ in outcome.traces]
    assert any("forward" in label for label in labels) and any("backward" in label for label in labels)
    assert any("Dead Code Elimination" in str(t.get_provenance()) for _, t in outcome.traces)


def test_in_place_mutation_of_an_input_is_recorded():
    mutating = program_on((2, 3), (3,), template="{0}.mul_({1})")
    before = mutating.make_inputs()[0]
    after = run_path("jit", mutating, resolve("stock")).calls["plain"].inputs_after[0]
    assert not torch.equal(before, after)


@contextlib.contextmanager
def _raising_placement():
    raise RuntimeError("placement failed to apply")
    yield


@pytest.mark.parametrize("path", sorted(PATHS))
def test_run_path_never_raises(path):
    outcome = run_path(path, PROGRAM, Placement("broken", _raising_placement))
    assert outcome.error is not None and "placement failed" in outcome.error.message


def test_a_path_past_its_time_limit_is_an_error_not_a_hang():
    outcome = run_path("thunderfx", PROGRAM, resolve("stock"), timeout=0.01)
    assert outcome.failure is not None and outcome.failure.kind == "timeout" and outcome.error is None


# Runs in a child: an abort must fail this test, not take the pytest worker with it.
LIMITS_AT_EVERY_DEPTH = """
import json, sys, time
from sample_programs import DEAD_CODE_PROGRAM
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import resolve

stock = resolve("stock")
for path in sys.argv[1:]:
    run_path(path, DEAD_CODE_PROGRAM, stock)  # warm: imports and first-compile costs
    start = time.perf_counter()
    run_path(path, DEAD_CODE_PROGRAM, stock)
    full = time.perf_counter() - start
    for i in range(20):
        limit = full * (i + 1) / 21
        outcome = run_path(path, DEAD_CODE_PROGRAM, stock, timeout=limit)
        row = [limit, outcome.failure and outcome.failure.kind, outcome.error and outcome.error.type, outcome.seconds]
        print(json.dumps([path, *row]), flush=True)
    print(json.dumps([path, "full", full]), flush=True)
"""
LIMITED_PATHS = ["thunderfx", "jit-grad"]


@pytest.fixture(scope="module")
def limits_at_every_depth():
    """The child's run of ``LIMITS_AT_EVERY_DEPTH`` on each of ``LIMITED_PATHS``, one after the other
    in one process (one import of torch and Thunder for both): its exit code, stderr, and its rows by path."""
    import json
    import os
    import subprocess
    import sys

    tests = os.path.dirname(__file__)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", LIMITS_AT_EVERY_DEPTH, *LIMITED_PATHS],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    rows: dict[str, list] = {path: [] for path in LIMITED_PATHS}
    for line in done.stdout.splitlines():
        if line.startswith("["):
            path, *row = json.loads(line)
            rows[path].append(row)
    return done, rows


@pytest.mark.slow
@pytest.mark.parametrize("path", LIMITED_PATHS)
def test_time_limits_at_every_depth_of_a_compile_never_abort_or_hang(path, limits_at_every_depth):
    """20 limits spread over one compile-and-call, in one process: each run ends as a timeout (or
    completes, when the limit struck after its last safe point), none raises anything else, none
    runs on for long, and the process survives all of them (a limit raised wherever the alarm
    struck aborted it, inside Dynamo's fake-tensor code, about one run in three)."""
    done, rows = limits_at_every_depth
    assert rows[path] and rows[path][-1][0] == "full", done.stderr[-3000:]
    *runs, (_, full) = rows[path]
    assert len(runs) == 20
    for limit, failure, error, seconds in runs:
        assert failure in ("timeout", None) and error is None, (limit, failure, error)
        assert seconds < limit + 10 * full + 5, f"a limit of {limit:.3f} s ran {seconds:.1f} s"
    assert sum(failure == "timeout" for _, failure, _, _ in runs) >= 10
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.slow
def test_a_compile_the_alarm_cannot_end_is_a_timeout_ended_by_the_sandbox():
    """A DCE blocked in C never reaches a safe point: the sandbox's parent kills the child after the
    grace and records a timeout (not a crash), and the next job runs in a fresh child."""
    from fuzzdce.running import sandbox
    from fuzzdce.running.evaluate import Job

    # A short grace, in a child that has run a job: a child's first job is also waited for through
    # its imports' allowance (``workers.STARTUP_SECONDS``), which a hung job would spend in full.
    jobs = sandbox.SandboxedJobs(grace=2.0)
    try:
        warm = jobs(Job(PROGRAM, resolve("stock"), "jit", 60.0))
        assert warm.outcome.failure is None and warm.outcome.error is None
        hung = jobs(Job(PROGRAM, resolve("planted:dce_hangs"), "jit", 1.0))
        assert hung.kind == "timeout", hung
        after = jobs(Job(PROGRAM, resolve("stock"), "jit", 60.0))
        assert after.outcome.failure is None and after.outcome.error is None
    finally:
        jobs.close()


def test_a_plain_function_program_gets_no_resized_call():
    from fuzzdce.running.script_program import ScriptProgram

    script = ScriptProgram(PROGRAM.function(), lambda requires_grad: PROGRAM.make_inputs(requires_grad=requires_grad))
    reference = run_path("eager", script, resolve("stock"))
    assert reference.error is None and "resized" not in reference.calls


def test_each_output_keeps_its_cotangent_whichever_others_require_grad():
    """Thunder returning one output without requires_grad is a grads finding of its own; the other
    outputs' gradients must not change because of it (their cotangents are drawn by position)."""
    from fuzzdce.running.calls import backward

    def grad_of_x(first_requires_grad: bool):
        x = torch.ones(3, requires_grad=True)
        first = x * 0 if first_requires_grad else torch.zeros(3)  # contributes nothing either way
        return backward([first, x * 3], [x])[0]

    torch.testing.assert_close(grad_of_x(True), grad_of_x(False))

"""Harness errors are not findings: an exception raised in fuzzdce's own code, or a call of one of
fuzzdce's functions (a stand-in Thunder calls) with arguments it does not take, stops the campaign
with one line naming the path, the versions and what to do (exit 3), and is never filed as a bug.

The planted harness fault is fuzzdce calling a Thunder API wrongly: the ``jit`` path collects its
traces with the thunderfx collector, which reads ``compiled._backend`` (a ``thunder.jit`` function
has none), so an AttributeError is raised in ``fuzzdce/running/paths.py``.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import thunder
import torch
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import main
from fuzzdce.core.errors import HarnessError, read_as_its_user, why_fuzzdces_own
from fuzzdce.core.model import CallLabel, Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.running import paths
from fuzzdce.running.calls import cotangents, make_call
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import PLACEMENTS


@pytest.fixture
def collector_that_misuses_thunder(monkeypatch):
    monkeypatch.setitem(paths.PATHS, "jit", dataclasses.replace(paths.PATHS["jit"], collect=paths.record_thunderfx))


def test_the_inductor_stand_in_takes_what_torch_takes():
    """Thunder main calls ``torch._inductor.compile(gm, args, options=options)``; 0.2.6 two arguments."""
    real = torch._inductor.compile
    graph = torch.fx.symbolic_trace(lambda x: x + 1)
    with paths.fresh_dynamo_without_inductor():
        assert torch._inductor.compile is not real
        assert torch._inductor.compile(graph, [torch.ones(1)]) is graph
        assert torch._inductor.compile(graph, [torch.ones(1)], options={"max_autotune": False}) is graph
        with pytest.raises(TypeError) as wrong:  # what torch would reject is rejected, in torch's words
            torch._inductor.compile(graph, [torch.ones(1)], mode="default")
    assert torch._inductor.compile is real
    assert why_fuzzdces_own(wrong.value) == ""  # Thunder calling torch wrongly is Thunder's bug


def test_what_is_fuzzdce_fault_and_what_is_not():
    stand_in = TypeError("fresh_dynamo_without_inductor.<locals>.compile_eagerly() got an unexpected keyword argument 'options'")
    assert "compile_eagerly was called with arguments it does not take" in why_fuzzdces_own(stand_in)
    with pytest.raises(TypeError) as raised_here:
        cotangents(3)  # raised inside fuzzdce/running/calls.py
    assert "fuzzdce's own code (fuzzdce/running/calls.py" in why_fuzzdces_own(raised_here.value)
    with pytest.raises(TypeError) as torch_raised:
        torch.add(torch.ones(1), "x")
    assert why_fuzzdces_own(torch_raised.value) == ""
    # Thunder's own function of the same name as none of fuzzdce's: not fuzzdce's.
    assert why_fuzzdces_own(TypeError("jit() got an unexpected keyword argument 'x'")) == ""


# One of unbind's views, returned after its base was written in place: torch refuses to read its
# grad_fn ("Output 0 of UnbindBackward0 is a view and its base ... has been modified inplace").
VIEW_OF_A_REWRITTEN_BASE = Program(
    (TensorInput((2, 3)),),
    (
        Step("mul", "torch.mul({0}, 2)", (Ref(0),)),
        Step("unbind", "{0}.unbind(0)[0]", (Ref(1),)),
        Step("mul_", "{0}.mul_(3); {out} = {0}", (Ref(1),)),
    ),
    (2,),
    seed=1,
)


def test_torch_refusing_to_read_an_output_is_the_calls_error_not_fuzzdces():
    """Reading a returned view's grad_fn raises from C with fuzzdce's frame the innermost; a compile
    path returning such an output (thunderfx running a split graph's in-place op in eager did) gets
    the error its user would, recorded as the call's, where it was once a harness error."""
    outcome = Outcome("jit", "stock")  # the program itself stands in for what a compile path returned
    call = make_call(outcome, CallLabel.GRAD, VIEW_OF_A_REWRITTEN_BASE.function(), VIEW_OF_A_REWRITTEN_BASE, grad=True)
    assert outcome.failure is None
    assert call.error is not None and call.error.type == "RuntimeError" and "modified inplace" in call.error.message
    with pytest.raises(TypeError) as fuzzdces_own:  # fuzzdce's own mistake while reading stays fuzzdce's
        with read_as_its_user():
            cotangents(3)
    assert "fuzzdce's own code" in why_fuzzdces_own(fuzzdces_own.value)


def test_fuzzdces_own_error_is_a_harness_failure_not_an_error(collector_that_misuses_thunder):
    outcome = run_path("jit", DEAD_CODE_PROGRAM, PLACEMENTS["stock"])
    assert outcome.error is None and outcome.failure is not None and outcome.failure.kind == "harness"
    line = outcome.failure.message
    assert "on jit under stock" in line and "torch " in line and "thunder " in line and "fuzzdce/running/paths.py" in line
    assert "--path" in line and len(line.splitlines()) == 1


def test_the_evaluator_stops_on_it(collector_that_misuses_thunder):
    evaluator = Evaluator()
    with pytest.raises(HarnessError, match="harness error on jit under stock"):
        evaluator(DEAD_CODE_PROGRAM, [PLACEMENTS["symcall"]], paths=["jit"])


@pytest.mark.slow
def test_a_campaign_stops_with_one_line_exit_3_and_files_no_bug(collector_that_misuses_thunder, tmp_path, capsys):
    findings = tmp_path / "findings"
    code = main(
        [
            "run",
            "--placement",
            "stock",
            "--path",
            "jit",
            "--in-process",  # the collector is patched in this process: a sandboxed worker would not see it
            "--max-examples",
            "3",
            "--seed",
            "1",
            "--findings",
            str(findings),
        ]
    )
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if "harness error" in line]
    assert code == 3 and len(lines) == 1, captured.err
    assert lines[0].startswith("fuzzdce: harness error on jit under stock (python ")
    assert not list(findings.glob("*/bug.json"))  # nothing filed


@pytest.fixture(scope="module")
def renamed_api_build(tmp_path_factory) -> str:
    """NAME=DIR of a copy of the installed Thunder whose thunderfx backend renamed ``subgraph_infos``,
    which fuzzdce's thunderfx collector reads: a Thunder API fuzzdce now calls wrongly."""
    root = tmp_path_factory.mktemp("renamed-api-thunder")
    shutil.copytree(Path(thunder.__file__).parent, root / "thunder", ignore=shutil.ignore_patterns("__pycache__"))
    compiler = root / "thunder" / "dynamo" / "compiler.py"
    source = compiler.read_text()
    assert "self.subgraph_infos" in source
    compiler.write_text(source.replace("subgraph_infos", "subgraphs_seen"))
    return f"renamedapi={root}"


@pytest.mark.slow
def test_a_harness_error_in_a_build_stops_every_lane_with_one_line(renamed_api_build, tmp_path, capfd):
    """Lanes and a build's worker: the failure crosses two processes and still stops the campaign."""
    findings = tmp_path / "findings"
    code = main(
        [
            "run",
            "--build",
            renamed_api_build,
            "--path",
            "thunderfx",
            "--jobs",
            "2",
            "--max-examples",
            "2",
            "--seed",
            "1",
            "--findings",
            str(findings),
        ]
    )
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("fuzzdce: harness error")]
    assert code == 3 and len(lines) == 1, err[-3000:]
    assert (
        "on thunderfx under renamedapi" in lines[0]
        and "fuzzdce/running/paths.py" in lines[0]
        and "renamed-api-thunder" in lines[0]
    )
    assert not list(findings.glob("*/bug.json"))

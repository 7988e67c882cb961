"""fuzzdce's failures are fuzzdce's, and no check switches off in silence.

Each test plants a fault the old code missed: a fuzzdce helper raising in process (Hypothesis took
it for a failing example and shrank it; the command died with exit 1), ``idempotent`` calling
fuzzdce's own exception "DCE is not a fixed point", ``names`` calling every trace malformed on a
build without Thunder's private cache-info functions, a ``MemoryError`` filed as ``raises``, and
oracles swallowing exceptions that no count showed.
"""

from __future__ import annotations

import json

import pytest
import thunder
from builders import StandInEvaluator, raised
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import main
from fuzzdce.core.errors import HarnessError
from fuzzdce.core.model import EAGER, FailureKind
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.ledger import Ledger
from fuzzdce.oracles import ORACLES, dce_sound, idempotent, names
from fuzzdce.results.html_report import write_report
from fuzzdce.results.report import render
from fuzzdce.running import evaluate
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import PLACEMENTS, resolve

STOCK = PLACEMENTS["stock"]


def planted_raise(*args, **kwargs):
    raise KeyError("planted in a fuzzdce helper")


def shape_with_a_wrong_depth(calls: list):
    """idempotent's own ``shape`` called wrongly: a TypeError raised in fuzzdce's code (``calls``: each call)."""
    real = idempotent.shape

    def shape(bsyms, depth=0):
        calls.append(depth)
        return real(bsyms, depth="not a number")

    return shape


@pytest.fixture(scope="module")
def jit_outcomes():
    """DEAD_CODE_PROGRAM's eager outcome and its outcome on jit under stock."""
    return run_path(EAGER, DEAD_CODE_PROGRAM, STOCK), run_path("jit", DEAD_CODE_PROGRAM, STOCK)


# --- in process: a harness error, never a failing example ------------------------------------------


def test_an_exception_in_the_ledger_stops_generation_unshrunk(monkeypatch):
    """The ledger raising in process reached Hypothesis, which shrank it as a failing example."""

    calls = []

    def count(self, program, evaluations):
        calls.append(program)
        raise KeyError("planted")

    monkeypatch.setattr(Ledger, "count", count)
    config = CampaignConfig.of(("stock", "symcall"), ("jit",), max_examples=20, seed=1, database="none", confirm=False)
    campaign = Campaign(config, evaluator=StandInEvaluator(), log=lambda line: None)
    with pytest.raises(HarnessError, match="KeyError escaped the job at test_not_checked.py"):
        campaign.run()
    assert len(calls) == 1  # never shrunk: Hypothesis let the HarnessError through at once


def test_an_oracle_raising_in_process_is_a_harness_error_of_its_path(monkeypatch):
    monkeypatch.setitem(
        ORACLES, "split-set", ORACLES["split-set"].__class__("split-set", planted_raise, "planted", "nothing is raised")
    )
    with pytest.raises(HarnessError, match="harness error on jit under stock .*KeyError escaped the job"):
        Evaluator()(DEAD_CODE_PROGRAM, [], paths=["jit"])


def test_a_campaign_in_process_exits_3_and_files_nothing(monkeypatch, tmp_path, capsys):
    """``--in-process``: idempotent's own helper raising was "DCE is not a fixed point" (a shared bug under stock)."""
    calls = []
    monkeypatch.setattr(idempotent, "shape", shape_with_a_wrong_depth(calls))
    findings = tmp_path / "findings"
    argv = ["run", "--placement", "stock", "--path", "jit", "--in-process", "--max-examples", "3", "--seed", "1"]
    code = main([*argv, "--database", "none", "--findings", str(findings)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "harness error" in line]
    assert code == 3 and len(lines) == 1, err[-3000:]
    assert "harness error on jit under stock" in lines[0] and "TypeError escaped the job at idempotent.py" in lines[0]
    assert len(calls) == 1 and not list(findings.glob("*/bug.json"))


def fuzz_test_request(findings):
    """What pytest hands a fuzz test: a config whose ``--fuzz-findings`` is ``findings``."""

    class Request:
        class config:
            @staticmethod
            def getoption(name, default=None):
                return str(findings) if name == "fuzz_findings" else default

    return Request()


def test_a_fuzz_test_stops_the_session_with_exit_3(tmp_path):
    """The pytest plugin's fuzz test: a harness error is no failing example, and no test failure either."""
    from fuzzdce.testing import HARNESS_EXIT, fuzz_test

    def raises_planted(program, placement, paths):
        raise KeyError("planted")

    test = fuzz_test(placements=["stock"], paths=["jit"], evaluator=StandInEvaluator(raises_planted))
    with pytest.raises(pytest.exit.Exception) as stopped:
        test(fuzz_test_request(tmp_path))
    assert stopped.value.returncode == HARNESS_EXIT == 3 and "KeyError escaped the job" in str(stopped.value)


def test_a_fuzz_test_runs_nothing_after_a_harness_error(tmp_path):
    """What was found before fuzzdce's own error is kept, but nothing more is evaluated to join or
    confirm it: a job run then ran inside the error's handling and was reported as a second harness
    error in the first one's place (a CI run stopped "on thunderfx under stock" for symcall's)."""
    from fuzzdce.testing import HARNESS_EXIT, fuzz_test

    def finds_then_raises(program, placement, paths):
        """The first program shows a raise under jit; every later evaluation fails in fuzzdce's code."""
        if len(evaluator.calls) > 1:
            raise KeyError("planted")
        return [raised("jit", "KeyError", "'x'", "thunder/core/transform_common.py:dce")]

    evaluator = StandInEvaluator(finds_then_raises)
    test = fuzz_test(placements=["stock"], paths=["jit"], evaluator=evaluator)
    with pytest.raises(pytest.exit.Exception) as stopped:
        test(fuzz_test_request(tmp_path))
    assert stopped.value.returncode == HARNESS_EXIT and "KeyError escaped the job" in str(stopped.value)
    assert len(evaluator.calls) == 2  # the finding, then the error: no joining or confirming run after it
    assert len(list(tmp_path.glob("*/bug.json"))) == 1  # and what was found is on disk


# --- idempotent, names: fuzzdce's fault or Thunder's -------------------------------------------------


def test_idempotent_raises_fuzzdces_own_fault_instead_of_a_finding(monkeypatch, jit_outcomes):
    eager, outcome = jit_outcomes
    assert idempotent.check(outcome, eager) == []
    monkeypatch.setattr(idempotent, "shape", shape_with_a_wrong_depth([]))
    with pytest.raises(TypeError):
        idempotent.check(outcome, eager)


def test_names_counts_a_check_trace_it_cannot_run_and_calls_no_trace_malformed(monkeypatch, jit_outcomes):
    """A build without Thunder's private cache-info functions: the old wrapper raised AttributeError
    on every trace, each filed as malformed."""
    eager, outcome = jit_outcomes
    outcome.not_checked.clear()
    monkeypatch.delattr(thunder, "_with_cache_info_ctx")
    assert names.check(outcome, eager) == []  # check_trace ran alone: these traces need no cache info
    assert outcome.not_checked == []
    monkeypatch.setattr(names, "thunder_check_trace", lambda: None)  # a build without check_trace at all
    assert names.check(outcome, eager) == []
    assert outcome.not_checked == [("names", "could not run check_trace (NotChecked)")] * len(outcome.traces)
    outcome.not_checked.clear()


def test_names_counts_check_trace_meeting_a_symbol_without_meta(monkeypatch, jit_outcomes):
    eager, outcome = jit_outcomes
    outcome.not_checked.clear()

    def no_meta(trace):
        raise NotImplementedError("a fusion symbol has no meta function")

    monkeypatch.setattr(names, "thunder_check_trace", lambda: no_meta)
    assert names.check(outcome, eager) == []
    assert set(outcome.not_checked) == {
        ("names", "check_trace stopped at a symbol it cannot re-execute (a fusion) (NotImplementedError)")
    }
    outcome.not_checked.clear()


# --- a memory limit is a crash ------------------------------------------------------------------------


def test_a_memory_error_is_a_crash_not_raises():
    eager = run_path(EAGER, DEAD_CODE_PROGRAM, STOCK)
    outcome = run_path("jit", DEAD_CODE_PROGRAM, resolve("planted:dce_out_of_memory"))
    assert outcome.error is None and outcome.failure is not None and outcome.failure.kind == FailureKind.CRASH
    assert "MemoryError" in outcome.failure.message
    assert [v.oracle for o in ORACLES.values() for v in o(outcome, eager, None)] == ["crash"]


# --- swallowed exceptions are counted by oracle and path, into summary.json and the report --------------


def test_each_swallowed_exception_is_counted(monkeypatch):
    monkeypatch.setattr(dce_sound, "changes", planted_raise)
    monkeypatch.setattr(evaluate, "compare", planted_raise)
    monkeypatch.setattr(thunder, "last_backward_traces", planted_raise)
    evaluations = Evaluator()(DEAD_CODE_PROGRAM, [resolve("rdnp")], paths=["jit"])
    assert sorted(set(evaluations["rdnp"].outcomes["jit"].not_checked)) == [
        ("dce-activity", "could not compare traces with the reference's (KeyError)"),
        ("dce-sound", "could not compare traces with the reference's (KeyError)"),
        ("traces", "could not fetch the backward traces (KeyError)"),
    ]
    assert evaluations["rdnp"].violations == [] and evaluations["stock"].violations == []


def test_the_counts_reach_summary_json_and_the_report(monkeypatch, tmp_path):
    monkeypatch.setattr(dce_sound, "changes", planted_raise)
    config = CampaignConfig.of(("stock", "rdnp"), ("jit", "jit-symbolic"), findings_dir=str(tmp_path), confirm=False)
    campaign = Campaign(config, log=lambda line: None)
    campaign.observe(DEAD_CODE_PROGRAM)
    campaign.observe(DEAD_CODE_PROGRAM.__class__(DEAD_CODE_PROGRAM.inputs, DEAD_CODE_PROGRAM.steps, (4,), seed=2))
    campaign.write_summary()
    entries = json.loads((tmp_path / "summary.json").read_text())["not_checked"]
    assert {
        "oracle": "dce-sound",
        "path": "jit-symbolic",
        "what": "could not compare traces with the reference's (KeyError)",
        "times": 2,
    } in entries
    text = render(campaign.summary(), None)
    assert "dce-sound could not compare traces with the reference's (KeyError) on jit-symbolic: 2 times" in text
    page = (tmp_path / "report.html").read_text() if write_report(str(tmp_path)) else ""
    assert (
        "NOT CHECKED" in page
        and "dce-sound could not compare traces with the reference&#x27;s (KeyError) on jit-symbolic" in page
    )


def test_an_exception_in_a_shrink_step_is_a_harness_error_never_shrunk():
    """A shrink step's check raising reached Hypothesis, which shrank fuzzdce's fault instead of the cause."""
    from hypothesis import given, settings

    from fuzzdce.fuzzing.config import DriverSettings
    from fuzzdce.fuzzing.driver import HypothesisDriver, current_choices
    from fuzzdce.strategies import programs

    drawn = []

    @settings(max_examples=1, database=None)
    @given(programs())
    def draw(program):
        drawn.append(current_choices())

    draw()
    calls = []

    def reproduces(program):
        calls.append(program)
        raise KeyError("planted")

    driver = HypothesisDriver(None, DriverSettings(hypothesis=settings(database=None), max_examples=1, seed=1))
    with pytest.raises(HarnessError, match="harness error on a shrink step .*KeyError escaped the job"):
        driver.shrink(drawn[0], reproduces)
    assert len(calls) == 1

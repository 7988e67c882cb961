"""A campaign finishes what it finds: Thunder's work never runs in the campaign's own process
(``--jobs 1`` included), no program eats a lane (``program_cost``: a limit, past it the program's
remaining jobs are not run and it is listed as slow), and a lane inside a long program says so."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sample_programs import DEAD_CODE_PROGRAM as PROGRAM

from fuzzdce.core.findings import triage
from fuzzdce.core.model import EAGER, STOCK, FailureKind, JobFailure, Outcome, Verdict
from fuzzdce.fuzzing.program_cost import BUDGET_SHARE, MEASURED_PROGRAMS, ProgramCost, ProgramProgress
from fuzzdce.results.html_report import slow_section
from fuzzdce.results.records import RunSummary
from fuzzdce.results.report import render
from fuzzdce.results.slow import PROGRAM_FILE, SLOW_DIR, SlowProgram, program_script, slow_program
from fuzzdce.running.evaluate import Evaluator, JobTime, PathResult, violations_of
from fuzzdce.running.placements import resolve
from fuzzdce.running.workers import ChildWorker, ReplyStatus

TESTS = Path(__file__).resolve().parent

# --- the limit -------------------------------------------------------------------------------------


def test_the_limit_is_a_multiple_of_the_median_within_a_share_of_the_budget_never_below_one_job():
    cost = ProgramCost()
    assert cost.limit(None, 60.0) is None, "nothing measured and no budget: nothing bounds a program yet"
    assert cost.limit(900.0, 10.0) == BUDGET_SHARE * 900, "before the median counts, the budget's share alone"
    assert cost.limit(900.0, 60.0) == 60.0, "never below one job's own time limit"
    for seconds in [1.0, 2.0, 2.0, 3.0, 100.0][:MEASURED_PROGRAMS]:
        cost.observe(seconds)
    assert cost.median == 2.0
    assert cost.limit(None, 1.0) == 10.0 and cost.limit(900.0, 1.0) == 10.0, "five times the median"
    assert cost.limit(100.0, 1.0) == BUDGET_SHARE * 100, "at most the budget's share"
    assert cost.limit(100.0, 60.0) == 60.0


# --- the evaluator stops a program past its limit --------------------------------------------------


class Jobs:
    """Stand-in jobs: eager and most paths at once; ``slow`` (placement, path) take ``seconds``;
    ``fail`` (placement, path) -> a ``JobFailure`` kind. Records the jobs run."""

    def __init__(self, slow=(), seconds=0.3, fail=None) -> None:
        self.slow, self.seconds, self.fail, self.ran = set(slow), seconds, dict(fail or {}), []

    def __call__(self, job):
        key = (job.placement.name, job.path)
        if key in self.slow:
            time.sleep(self.seconds)
        if job.path == EAGER:
            return Outcome(EAGER, STOCK)
        self.ran.append(key)
        if key in self.fail:
            return JobFailure(self.fail[key], "planted")
        return PathResult(Outcome(job.path, job.placement.name), [])


PLACEMENTS = [resolve("symcall"), resolve("rdnp")]


def test_a_program_past_its_limit_runs_no_more_jobs_and_says_which_ran_and_how_long():
    jobs = Jobs(slow=[("rdnp", "jit")])
    evaluator = Evaluator(jobs, share_compiles=False)
    evaluator.program_limit = 0.2
    evaluations = evaluator(PROGRAM, PLACEMENTS, paths=["jit", "thunderfx"])
    assert evaluator.stopped
    # Path by path, the reference first: jit ran whole, thunderfx not at all.
    assert jobs.ran == [(STOCK, "jit"), ("symcall", "jit"), ("rdnp", "jit")]
    assert all(set(e.outcomes) == {"jit"} for e in evaluations.values())
    slowest = max(evaluator.job_times, key=lambda t: t.seconds)
    assert (slowest.placement, slowest.path) == ("rdnp", "jit") and slowest.seconds >= 0.3
    assert [t.path for t in evaluator.job_times][0] == EAGER
    evaluator.program_limit = None
    jobs.ran.clear()
    evaluator(PROGRAM.__class__(PROGRAM.inputs, PROGRAM.steps, PROGRAM.outputs, seed=2), PLACEMENTS, paths=["jit", "thunderfx"])
    assert not evaluator.stopped and len(jobs.ran) == 6, "no limit: every job runs"


def test_a_job_waiting_for_a_fresh_workers_imports_is_not_counted_against_the_program():
    """The first job of a fresh worker (at the start, after a crash) waits seconds for its imports:
    fuzzdce's cost. Counted, the program after every crash was cut short and listed as slow."""

    class FreshFirst(Jobs):
        def starts_fresh(self):
            return not self.ran

    jobs = FreshFirst(slow=[(STOCK, EAGER)])
    evaluator = Evaluator(jobs, share_compiles=False)
    evaluator.program_limit = 0.2
    evaluator(PROGRAM, PLACEMENTS, paths=["jit", "thunderfx"])
    assert not evaluator.stopped and len(jobs.ran) == 6 and evaluator.uncounted >= 0.3


def test_what_the_reference_shows_on_a_path_left_half_run_is_not_judged():
    """The reference timed out on thunderfx and the program stopped before the others ran there:
    whether they time out too decides shared or fixed. Judged as it stood, it read as fixed."""
    jobs = Jobs(slow=[(STOCK, "thunderfx")], fail={(STOCK, "thunderfx"): FailureKind.TIMEOUT})
    evaluator = Evaluator(jobs, share_compiles=False)
    evaluator.program_limit = 0.2
    evaluations = evaluator(PROGRAM, PLACEMENTS, paths=["jit", "thunderfx"])
    assert evaluator.stopped and (STOCK, "thunderfx") in jobs.ran and ("symcall", "thunderfx") not in jobs.ran
    assert triage(violations_of(evaluations)) == {}, "no verdict on what only part of the Thunders ran"
    assert evaluator.job_times[-1].timed_out


def test_what_only_a_thunder_under_test_shows_on_a_path_left_half_run_is_a_regression():
    jobs = Jobs(slow=[("symcall", "thunderfx")], fail={("symcall", "thunderfx"): FailureKind.CRASH})
    evaluator = Evaluator(jobs, share_compiles=False)
    evaluator.program_limit = 0.2
    evaluations = evaluator(PROGRAM, PLACEMENTS, paths=["jit", "thunderfx"])
    assert evaluator.stopped and ("rdnp", "thunderfx") not in jobs.ran
    triaged = list(triage(violations_of(evaluations)).values())
    assert [(t.verdict, t.placements, t.violation.oracle) for t in triaged] == [(Verdict.REGRESSION, ("symcall",), "crash")]


# --- the record and the report ---------------------------------------------------------------------


def slow_record() -> SlowProgram:
    times = [
        JobTime(STOCK, EAGER, 0.1),
        JobTime(STOCK, "jit", 1.0),
        JobTime("symcall", "jit", 7.5),
        JobTime("symcall", "jit", 0.5),
    ]
    return slow_program(
        PROGRAM, times, seconds=9.1, limit=6.0, placements=[STOCK, "symcall"], paths=["jit", "thunderfx"], number=3
    )


def test_a_slow_program_is_listed_with_its_jobs_seconds_the_longest_and_the_command_to_rerun_it(tmp_path):
    record = slow_record()
    assert record.longest == {"placement": "symcall", "path": "jit", "seconds": 8.0, "timed_out": False}
    assert record.not_run == ("stock on thunderfx", "symcall on thunderfx") and not record.timed_out
    assert SlowProgram.from_json(json.loads(json.dumps(record.to_json()))) == record
    summary = RunSummary(slow_programs=(record.to_json(),))
    assert RunSummary.from_json(summary.to_json()).slow_programs == summary.slow_programs
    text = render(summary, tmp_path)
    assert "== slow programs (past their limit" in text
    assert f"--- slow program {record.id}: 3 ops, 9.1 s against a limit of 6.0 s, 2 jobs not run" in text
    assert "longest: symcall on jit, 8.0 s" in text and "stock on jit 1.0" in text
    assert f"rerun: python {tmp_path.absolute() / SLOW_DIR / record.id / PROGRAM_FILE}" in text
    assert "slow programs" not in render(RunSummary(), tmp_path), "no section without slow programs"
    script = program_script(record)
    compile(script, PROGRAM_FILE, "exec")
    assert PROGRAM.source() in script and PROGRAM.inputs_source() in script


# --- progress never goes silent ---------------------------------------------------------------------


def test_a_lane_inside_a_long_program_says_which_job_and_for_how_long_every_ten_seconds():
    now, lines = [0.0], []
    progress = ProgramProgress(lines.append, every=10.0, clock=lambda: now[0])
    progress.program_started("program 7 (3 ops)")
    progress.job_started("symcall", "thunderfx")
    now[0] = 9.0
    progress.tick()
    assert lines == []
    now[0] = 10.5
    progress.tick()
    assert lines == ["fuzzdce: inside program 7 (3 ops) for 10 s (1 jobs): job symcall on thunderfx for 10 s"]
    now[0] = 15.0
    progress.tick()
    assert len(lines) == 1, "at most every ten seconds"
    progress.program_ended()
    progress.said()  # the campaign's own line
    now[0] = 24.0
    progress.tick()
    assert len(lines) == 1


class QuietChild:
    """A child whose job answers after ``polls`` looks."""

    def __init__(self, polls: int) -> None:
        self.polls, self.pid = polls, os.getpid()

    def alive(self):
        return True

    def send(self, job):
        pass

    def ready(self, timeout):
        self.polls -= 1
        return self.polls < 0

    def receive(self):
        return (ReplyStatus.OK, "done", None)

    def exitcode(self, wait):
        return 0

    def stop(self):
        pass


def test_a_worker_tells_whoever_waits_while_its_job_runs():
    worker = ChildWorker(lambda: QuietChild(polls=3))
    heard = []
    worker.waiting = lambda: heard.append(1)
    assert worker.submit("job", 60.0) == "done"
    assert len(heard) == 3


# --- campaigns -----------------------------------------------------------------------------------


# Cheap elementwise ops that always apply: the first, simplest program is one op, later ones more.
CHEAP_OPS = ["--op", "add", "--op", "mul", "--op", "abs", "--op", "exp", "--op", "neg"]


def run_fuzzdce(argv, timeout=400):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    return subprocess.run([sys.executable, "-m", "fuzzdce", *argv], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.mark.slow
def test_an_abort_under_jobs_1_is_a_crash_finding_and_the_campaign_goes_on(tmp_path):
    """``--jobs 1`` ran Thunder in the campaign's own process: an abort there (glibc's "double free")
    ended the campaign with no report. In its sandboxed worker it is a crash finding."""
    findings = tmp_path / "findings"
    argv = ["run", "--placement", "stock", "--placement", "planted:aborts_past_one_op", "--path", "jit", "--jobs", "1"]
    argv += [
        *CHEAP_OPS,
        "--max-examples",
        "3",
        "--seed",
        "3",
        "--time-budget",
        "120",
        "--database",
        "none",
        "--findings",
        str(findings),
    ]
    done = run_fuzzdce(argv)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "== fuzzdce:" in done.stdout, "the report is printed"
    summary = json.loads((findings / "summary.json").read_text())
    assert summary["programs"] == 3, "the campaign went on past the programs that aborted"
    crashes = [b for b in summary["bugs"]["regression"] if "crash" in b["oracles"]]
    assert crashes and all(b["placements"] == ["planted:aborts_past_one_op"] for b in crashes), summary["bugs"]


@pytest.mark.slow
def test_a_slow_program_is_listed_as_slow_and_the_lanes_later_programs_still_run(tmp_path):
    findings = tmp_path / "findings"
    argv = ["run", "--placement", "stock", "--placement", "planted:sleeps_past_one_op", "--path", "jit"]
    argv += ["--path", "thunderfx", "--jobs", "1", "--timeout", "5", "--max-examples", "4", "--seed", "3"]
    argv += [*CHEAP_OPS, "--time-budget", "100", "--database", "none", "--findings", str(findings)]
    done = run_fuzzdce(argv)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    summary = json.loads((findings / "summary.json").read_text())
    slow = [SlowProgram.from_json(s) for s in summary["slow_programs"]]
    planted = [s for s in slow if s.n_ops >= 2]
    assert planted, (summary["slow_programs"], done.stderr[-3000:])
    assert summary["programs"] == 4 and min(s.number for s in planted) < 4, "programs after the slow one still ran"
    record = planted[0]
    assert record.seconds > record.limit >= 5 and record.longest["seconds"] > 0
    assert (findings / SLOW_DIR / record.id / PROGRAM_FILE).exists() and "== slow programs" in done.stdout
    assert f"[slow] program {record.id}" in done.stderr
    # Slowness is no bug: the sleeping placement changes nothing (a job past its own limit would be a timeout finding).
    assert all(set(b["oracles"]) <= {"timeout"} for b in summary["bugs"]["regression"]), summary["bugs"]


def test_the_html_report_lists_slow_programs_only_when_there_are_some(tmp_path):
    record = slow_record()
    assert slow_section(RunSummary(), []) == ""
    section = slow_section(RunSummary(slow_programs=(record.to_json(),), findings_dir=str(tmp_path)), [])
    assert "<h2>Slow programs</h2>" in section and f"slow program {record.id}" in section and PROGRAM_FILE in section


def test_outside_a_program_a_lane_still_says_which_job_runs_after_ten_silent_seconds():
    now, lines = [0.0], []
    progress = ProgramProgress(lines.append, every=10.0, clock=lambda: now[0])
    now[0] = 12.0
    progress.tick()
    assert lines == [], "nothing running: nothing to say"
    progress.job_started("stock", "jit")
    assert lines == ["fuzzdce: running job stock on jit for 0 s"]
    progress.job_ended()
    now[0] = 30.0
    progress.tick()
    assert len(lines) == 1

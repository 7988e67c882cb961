"""No job runs past a campaign's time budget (``Evaluator.deadline``): a job gets no more than the
time left, and one cut short by it is out of time (``OutOfTime``), never a ``timeout`` finding. A
job's own limit still makes one."""

import time

import pytest
from sample_programs import DEAD_CODE_PROGRAM as PROGRAM

from fuzzdce.core.errors import OutOfTime
from fuzzdce.core.model import EAGER, STOCK, FailureKind, JobFailure, Outcome
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.running.evaluate import Evaluator, PathResult
from fuzzdce.running.placements import resolve


class SlowJobs:
    """A compile path that needs ``needs`` seconds and keeps to its time limit as a path does:
    past it, a timeout. Eager takes no time. Records each job's limit, and whether it was cut."""

    def __init__(self, needs: float) -> None:
        self.needs = needs
        self.limits = []
        self.cut = []

    def __call__(self, job):
        if job.path == EAGER:
            return Outcome(EAGER, STOCK)
        self.limits.append(job.timeout)
        self.cut.append(job.cut)
        if job.timeout is not None and job.timeout < self.needs:
            time.sleep(job.timeout)
            return JobFailure(FailureKind.TIMEOUT, f"no result within {job.timeout:g} s")
        return PathResult(Outcome(job.path, job.placement.name), [])


def test_a_job_gets_only_the_time_left_and_one_cut_by_it_is_out_of_time_not_cached():
    jobs = SlowJobs(needs=30.0)
    evaluator = Evaluator(jobs, cache=True)
    evaluator.deadline = time.time() + 0.3
    started = time.monotonic()
    with pytest.raises(OutOfTime, match="cut at the time budget's end"):
        evaluator(PROGRAM, [resolve(STOCK)], paths=["jit"], timeout=60.0)
    assert time.monotonic() - started < 5, "the job ran to its own limit"
    assert len(jobs.limits) == 1 and jobs.limits[0] <= 0.3 and jobs.cut == [True]
    assert len(evaluator.cache) == 1, "eager's outcome, which finished, is kept; the cut job, which says nothing, is not"
    with pytest.raises(OutOfTime, match="spent"):  # past the deadline, no job starts
        evaluator(PROGRAM, [resolve(STOCK)], paths=["jit"], timeout=60.0)
    assert len(jobs.limits) == 1


def test_a_job_past_its_own_limit_before_the_deadline_is_still_a_timeout_finding():
    jobs = SlowJobs(needs=30.0)
    evaluator = Evaluator(jobs)
    evaluator.deadline = time.time() + 600
    evaluations = evaluator(PROGRAM, [resolve(STOCK)], paths=["jit"], timeout=0.2)
    assert [v.oracle for v in evaluations[STOCK].violations] == ["timeout"]
    assert jobs.limits == [0.2]
    fast = SlowJobs(needs=0.0)
    evaluator = Evaluator(fast)
    evaluator.deadline = time.time() + 600
    assert evaluator(PROGRAM, [resolve(STOCK)], paths=["jit"], timeout=60.0)[STOCK].violations == []
    assert fast.limits == [60.0] and fast.cut == [False], "a job that fits before the deadline keeps its own limit"


@pytest.mark.slow
def test_a_campaign_whose_placement_hangs_ends_at_its_budget_with_no_timeout_finding():
    """Every DCE of the planted placement blocks in C: each of its jobs would run to its 60-s limit
    and the sandbox's 15-s grace. The campaign's one job under it is cut at the budget's end instead,
    and its grace with it: the campaign ends on time, and reports no timeout, which the job's own
    limit never reached."""
    budget = 25.0
    config = CampaignConfig.of(("stock", "planted:dce_hangs"), ("jit",), max_examples=5, seed=1, time_budget=budget, sandbox=True)
    lines = []
    started = time.time()
    campaign = Campaign(config.replaced(started_at=started), log=lines.append)
    campaign.run()
    took = time.time() - started
    assert took < budget + 5, f"{took:.0f} s for a budget of {budget:.0f} s"
    assert not any(f.violation.oracle == "timeout" for f in campaign.store), [f.violation.message for f in campaign.store]
    assert any("out of time" in line for line in lines), lines

"""Workers recycle their child between jobs (after N jobs, or past a resident size) as a normal
event: never mid-job, never a JobFailure, never a ``crash`` finding; a job that dies still is one.
summary.json records each process's resident memory and the recyclings."""

import dataclasses
import json

import pytest
from builders import malformed
from worker_jobs import run

from fuzzdce.core.findings import FindingStore
from fuzzdce.core.model import EAGER, JobFailure, Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.timeline import sample
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing import lanes as lanes_module
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import failure_type
from fuzzdce.fuzzing.ledger import Stats
from fuzzdce.fuzzing.shrinking import Shrinker
from fuzzdce.running.evaluate import Evaluator, PathResult
from fuzzdce.running.memory import CampaignMemory, ProcessMemory, resident_mb
from fuzzdce.running.workers import Worker


def pids_of(worker, jobs):
    return [worker.submit(job, timeout=30) for job in jobs]


def test_a_worker_recycles_after_n_jobs_between_jobs_only():
    lines = []
    with Worker(run, recycle_jobs=3, recycle_rss_mb=0, log=lines.append) as worker:
        pids = pids_of(worker, [("pid", None)] * 7)
        assert len(set(pids[:3])) == 1 and len(set(pids[3:6])) == 1 and pids[2] != pids[3] != pids[6]
        assert worker.recycled == 2 and worker.restarts == 0
        assert len(lines) == 2 and "recycled after 3 jobs" in lines[0]
        # The job that reaches the count finishes and hands back its result before its child goes.
        assert worker.submit(("sleep", 0.2), timeout=30) == "slept"
        assert worker.submit(("echo", "x"), timeout=30) == "x"
        assert worker.submit(("sleep", 0.2), timeout=30) == "slept"
        assert worker.recycled == 3


def test_a_worker_recycles_once_its_child_passes_the_resident_size():
    with Worker(run, recycle_jobs=0, recycle_rss_mb=120) as worker:
        small = pids_of(worker, [("hold", 10), ("hold", 10)])
        assert small[0] == small[1] and worker.recycled == 0
        big = worker.submit(("hold", 150), timeout=30)
        assert big == small[0] and worker.recycled == 1  # the job that grew it finished in it
        after = worker.submit(("pid", None), timeout=30)
        assert after != big and worker.restarts == 0
        assert worker.memory.peak_rss_mb >= 150
        assert worker.memory.end_rss_mb < 120  # the fresh child's


def test_thresholds_of_zero_never_recycle():
    with Worker(run, recycle_jobs=0, recycle_rss_mb=0) as worker:
        assert len(set(pids_of(worker, [("hold", 20)] * 5))) == 1
        assert worker.recycled == 0


@pytest.mark.parametrize("kind, failure_kind", [("segfault", "crash"), ("raise", "harness")])
def test_a_job_that_dies_is_still_a_crash_with_recycling_on(kind, failure_kind):
    """A job that kills its child is a crash; one whose exception escapes is a harness failure
    (fuzzdce's own error): either way the child is replaced, never counted as recycled."""
    with Worker(run, recycle_jobs=2, recycle_rss_mb=1) as worker:
        failure = worker.submit((kind, None), timeout=30)
        assert isinstance(failure, JobFailure) and failure.kind == failure_kind
        assert worker.restarts == 1 and worker.recycled == 0


def test_resident_size_is_read_from_proc():
    rss, peak = resident_mb()
    assert 0 < rss <= peak
    assert resident_mb(2**22 + 12345) is None  # no such process


def test_a_restarted_process_keeps_its_start_and_takes_the_later_end_and_larger_peak():
    report = CampaignMemory(recycled_workers=1)
    report.add(ProcessMemory("lane 0", 100.0, 300.0, 320.0))
    later = CampaignMemory(recycled_workers=2, recycled_lanes=1)
    later.add(ProcessMemory("lane 0", 110.0, 150.0, 160.0))
    report.merge(later)
    assert report.summary() == {
        "processes": [{"process": "lane 0", "start_rss_mb": 100.0, "end_rss_mb": 150.0, "peak_rss_mb": 320.0}],
        "recycled": {"workers": 3, "lanes": 1},
    }


# --- in a campaign -------------------------------------------------------------------------------

SUB = Program((TensorInput((2, 3)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)


class CheapWorkerJobs:
    """A sandbox whose child does cheap work instead of Thunder's (no torch in the child): each
    job comes back as an empty outcome, but a job on ``dies_on`` kills the child."""

    def __init__(self, worker: Worker, dies_on: str | None = None) -> None:
        self.worker = worker
        self.dies_on = dies_on

    def __call__(self, job):
        kind = "segfault" if job.path == self.dies_on else "pid"
        result = self.worker.submit((kind, None), timeout=30)
        if isinstance(result, JobFailure):
            return result
        outcome = Outcome(job.path, job.placement.name)
        return outcome if job.path == EAGER else PathResult(outcome, [])

    @property
    def memory(self):
        return self.worker.memory

    @property
    def recycled(self):
        return self.worker.recycled

    def close(self):
        self.worker.close()


def cheap_campaign(tmp_path, dies_on=None) -> Campaign:
    """Stock on two paths, 4 programs (3 jobs each), a worker recycled every 2 jobs."""

    def one_round(round_number):
        for seed in range(1, 5):
            campaign.observe(dataclasses.replace(SUB, seed=seed))

    worker = Worker(run, recycle_jobs=2, recycle_rss_mb=0, name="driver worker")
    config = CampaignConfig.of(
        ("stock",), ("jit", "thunderfx"), max_examples=4, seed=1, findings_dir=str(tmp_path), confirm=False
    )
    evaluator = Evaluator(CheapWorkerJobs(worker, dies_on))
    campaign = Campaign(config, evaluator=evaluator, log=lambda line: None, run_round=one_round)
    campaign.run()
    return campaign


@pytest.mark.slow
def test_a_recycled_worker_is_no_crash_finding_and_summary_json_records_memory(tmp_path):
    campaign = cheap_campaign(tmp_path)
    assert campaign.stats.programs == 4 and len(campaign.store) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    memory = summary["memory"]
    assert memory["recycled"] == {"workers": 6, "lanes": 0}  # 12 jobs, each child retired after 2
    processes = {p["process"]: p for p in memory["processes"]}
    assert set(processes) == {"driver", "driver worker"}
    assert processes["driver worker"].pop("jobs") == 12  # a worker's entry also counts its jobs
    for entry in processes.values():
        assert set(entry) == {"process", "start_rss_mb", "end_rss_mb", "peak_rss_mb"}
        assert 0 < entry["start_rss_mb"] <= entry["peak_rss_mb"] and 0 < entry["end_rss_mb"] <= entry["peak_rss_mb"]


@pytest.mark.slow
def test_a_job_that_kills_the_child_is_still_a_crash_finding(tmp_path):
    campaign = cheap_campaign(tmp_path, dies_on="thunderfx")
    assert {f.violation.oracle for f in campaign.store} == {"crash"}
    assert {f.violation.path for f in campaign.store} == {"thunderfx"}


# --- lanes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold, rounds_run", [(1, [0]), (0, [0, 1, 2, 3, 4])])
def test_a_campaign_past_its_threshold_stops_after_a_round_that_another_would_follow(threshold, rounds_run):
    rounds = []

    def finding_round(round_number):
        rounds.append(round_number)
        campaign.observe(dataclasses.replace(SUB, seed=round_number + 1))
        # As Hypothesis does on a finding: the round fails with it, so the campaign would go on.
        raise failure_type(next(iter(campaign.store)).id)("found")

    worker = Worker(run, recycle_jobs=0, recycle_rss_mb=0)
    config = CampaignConfig.of(("stock",), ("jit",), max_examples=5, seed=1, confirm=False)
    evaluator = Evaluator(CheapWorkerJobs(worker, dies_on="jit"))
    campaign = Campaign(config, evaluator=evaluator, log=lambda line: None, run_round=finding_round, recycle_growth_mb=threshold)
    campaign.own_memory.start_rss_mb = 0.0  # as if it started empty: it has grown past 1 MB; 0 means never
    campaign.run()
    assert rounds == rounds_run and campaign.full_evaluations == len(rounds_run)
    assert campaign.recycled == bool(threshold)


def test_a_restarted_lane_gets_a_seed_of_its_own_and_what_is_left_of_its_programs_in_the_campaigns_time():
    from fuzzdce.fuzzing.config import derive_seed

    lane = CampaignConfig.of(("stock",), ("jit",), max_examples=100, seed=7, time_budget=600).replaced(started_at=5.0).lane(1)
    again = lane.restarted(2, programs_left=40)
    assert again.budget.seed == derive_seed(8, "restart", 2) and again.budget.seed != lane.restarted(1, 40).budget.seed
    assert (again.budget.max_examples, again.budget.time_budget, again.budget.started_at) == (40, 600, 5.0)
    assert again.workers.sandbox and again.output.joined_elsewhere and not again.output.clear_findings


def test_lanes_restart_a_recycled_lane_with_what_is_left(monkeypatch):
    import time

    started = []
    monkeypatch.setattr(
        lanes_module.Lanes, "start", lambda self, lane, config, predecessor=None: started.append((lane, config, predecessor))
    )
    began = time.time() - 100  # the campaign has run 100 s
    config = CampaignConfig.of(("stock",), ("jit",), max_examples=100, seed=7, time_budget=600).replaced(started_at=began)
    lanes = lanes_module.Lanes(config, 2)
    assert [(lane, c.budget.seed) for lane, c, _ in started] == [(0, 7), (1, 8)]
    result = lanes_module.LaneResult(1, FindingStore(), Stats(), False, CampaignMemory(), True, programs_left=30)
    assert lanes.restart(result)
    lane, again, predecessor = started[-1]
    # What is left of its programs; the campaign's time plan, from the campaign's start; its predecessor's results.
    assert lane == 1 and again.budget.max_examples == 30 and again.budget.seed not in (7, 8)
    assert (again.budget.time_budget, again.budget.started_at) == (600, began)
    assert predecessor is result and lanes.handed_over == {1: result}
    # Generation's time is spent but not shrinking's: a fresh process shrinks what its predecessor left.
    lanes.config = config.replaced(started_at=time.time() - 550)
    assert lanes.restart(dataclasses.replace(result, programs_left=0)) and started[-1][1].budget.max_examples == 0
    lanes.config = config.replaced(started_at=time.time() - 590)  # shrinking's time is spent: no restart
    assert not lanes.restart(result)
    assert len(started) == 4
    unstarted = lanes_module.Lanes(CampaignConfig.of(("stock",), ("jit",), time_budget=600), 1)
    assert (
        abs(unstarted.config.budget.started_at - time.time()) < 5
        and started[-1][1].budget.started_at == unstarted.config.budget.started_at
    )


@pytest.mark.slow
def test_lanes_recycled_after_every_round_still_run_their_programs_and_record_memory(tmp_path):
    """End to end, Thunder in the workers: two lanes under a fault that fails every program, each
    recycled after its process's first programs (past 1 MB: checked between programs) and restarted
    until generation's share of the campaign's 120 s is spent: the time plan is the campaign's,
    across its lanes' processes (each fresh one spends about 10 s importing and on its first compile;
    on a loaded 2-core machine a program took 45 s, and 60 s left a lane no program to recycle after)."""
    from fuzzdce.cli import main

    folder = tmp_path / "findings"
    # One fault, one cause a program: a regression is decided as found, once, so generation's share
    # goes to programs (a placement failing each program in many ways spends it deciding each way).
    argv = ["run", "--placement", "stock", "--placement", "planted:add_computes_sub", "--path", "jit", "--op", "add"]
    argv += ["--max-examples", "50", "--time-budget", "120", "--seed", "5", "--jobs", "2", "--findings", str(folder)]
    assert main(argv + ["--database", "none", "--recycle-lane-growth", "1", "--recycle-jobs", "2"]) == 1
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["programs"] <= 100 and summary["bugs"]["regression"]
    memory = summary["memory"]
    assert {p["process"] for p in memory["processes"]} >= {"driver", "lane 0", "lane 0 worker", "lane 1", "lane 1 worker"}
    assert memory["recycled"]["lanes"] >= 2 and memory["recycled"]["workers"] >= 1


def test_a_fresh_process_goes_on_from_its_recycled_predecessor_with_its_causes_waiting():
    """A recycled lane's successor holds its predecessor's findings, counts, timeline and memory: the
    causes left unshrunk wait in its own time plan (before, they waited unseen for the merged
    campaign, and a 900-s campaign whose lanes recycled after every round shrank few of its bugs)."""
    config = CampaignConfig.of(("stock",), ("jit",), max_examples=5, seed=1, confirm=False)
    earlier = Campaign(config, evaluator=Evaluator(lambda job: None), log=lambda line: None)
    violation = malformed("jit", "an output none of its subsymbols produces")
    earlier.store.add(Verdict.SHARED, ("stock",), violation, SUB)
    stats = Stats(programs=7, seconds=7.0)
    stats.timeline.append(sample(3.0, 7, 1))
    memory = CampaignMemory()
    memory.add(ProcessMemory("lane 0", 860.0, 1900.0, 1950.0))
    memory.recycled_lanes = 1

    successor = Campaign(config, evaluator=Evaluator(lambda job: None), log=lambda line: None, process="lane 0")
    assert successor.shrinker.waiting_seconds(1.0, 0.1) == 0
    successor.carry_on(earlier.store, stats, memory, Shrinker(earlier))
    assert successor.shrinker.waiting_seconds(1.0, 0.1) > 0  # the cause it left is this process's to shrink
    assert successor.stats.programs == 7 and len(successor.store) == 1
    assert successor.stats.timeline == stats.timeline and successor.stats.lane_timelines == []  # one lane's timeline
    (lane,) = (p for p in successor.memory().summary()["processes"] if p["process"] == "lane 0")
    assert lane["start_rss_mb"] == 860.0 and lane["peak_rss_mb"] == 1950.0 and successor.memory().recycled_lanes == 1


def test_the_parent_keeps_a_predecessors_results_until_its_successor_hands_back_its_own(monkeypatch):
    class Dead:
        def is_alive(self):
            return False

        def join(self, timeout=None):
            pass

    monkeypatch.setattr(lanes_module.Lanes, "start", lambda self, lane, config, predecessor=None: None)
    lanes = lanes_module.Lanes(CampaignConfig.of(("stock",), ("jit",), max_examples=10, seed=7, time_budget=600), 1)
    recycled = lanes_module.LaneResult(0, FindingStore(), Stats(programs=3), False, CampaignMemory(), True, programs_left=7)
    assert lanes.restart(recycled) and lanes.finished == []  # its successor's results will hold these
    lanes.running[0] = Dead()  # the successor died without handing back
    lanes.forget_dead()
    assert lanes.finished == [recycled] and lanes.lost == 1 and lanes.handed_over == {}

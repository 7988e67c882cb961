"""Shards of one campaign: which shard from the flag or a scheduler's environment, their seeds, and
(the Done-when test) two shards merged equal one process running as many programs."""

import json

import pytest

from fuzzdce.cli import main
from fuzzdce.core.errors import UsageError
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.config import CampaignConfig, derive_seed
from fuzzdce.fuzzing.shards import parse, resolve
from fuzzdce.results.merge import merge

# --- which shard ------------------------------------------------------------------------------------

ENVIRONMENTS = [
    ({"FUZZDCE_SHARD": "2/4"}, (2, 4)),
    ({"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "0"}, (3, 4)),
    ({"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, (3, 4)),  # --array=1-4
    ({"JOB_COMPLETION_INDEX": "1", "FUZZDCE_SHARD_COUNT": "3"}, (1, 3)),
    ({"AWS_BATCH_JOB_ARRAY_INDEX": "0", "AWS_BATCH_JOB_ARRAY_SIZE": "2"}, (0, 2)),
    ({}, None),
]


@pytest.mark.parametrize("environ, expected", ENVIRONMENTS)
def test_the_shard_comes_from_each_schedulers_environment(environ, expected):
    assert resolve(None, None, environ) == expected


def test_an_explicit_shard_wins_and_shard_count_completes_an_index_only_scheduler():
    assert resolve("1/2", None, {"FUZZDCE_SHARD": "3/4", "SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_COUNT": "8"}) == (1, 2)
    assert resolve(None, 5, {"JOB_COMPLETION_INDEX": "4"}) == (4, 5)


@pytest.mark.parametrize("text", ["2/2", "-1/2", "1", "a/b", "1/0", ""])
def test_a_bad_shard_says_what_it_expects(text):
    with pytest.raises(UsageError, match=r"--shard expects I/N with 0 <= I < N, got"):
        parse(text)


def test_an_index_without_a_count_or_a_count_without_an_index_says_what_to_do():
    with pytest.raises(UsageError, match="--shard-count N or set FUZZDCE_SHARD_COUNT"):
        resolve(None, None, {"JOB_COMPLETION_INDEX": "1"})
    with pytest.raises(UsageError, match="without a shard index"):
        resolve(None, 4, {})
    with pytest.raises(UsageError, match="SLURM_ARRAY_TASK_ID should be an integer"):
        resolve(None, None, {"SLURM_ARRAY_TASK_ID": "x", "SLURM_ARRAY_TASK_COUNT": "2"})


def test_run_rejects_a_bad_shard_with_exit_code_2(capsys):
    assert main(["run", "--shard", "4/4", "--seed", "1", "--placement", "stock", "--path", "jit"]) == 2
    assert "--shard expects I/N with 0 <= I < N, got '4/4'" in capsys.readouterr().err


# --- seeds ------------------------------------------------------------------------------------------


def lane_seeds(config, lanes=3):
    return [config.lane(i).budget.seed for i in range(lanes)]


def test_shards_get_distinct_seeds_and_lanes_and_rerun_alike():
    campaign = CampaignConfig.of(("stock",), ("jit",), seed=11)
    shards = [campaign.for_shard(i, 4) for i in range(4)]
    seeds = [s for shard in shards for s in lane_seeds(shard)]
    assert len(set(seeds)) == len(seeds)
    assert [s.budget.seed for s in shards] == [derive_seed(11, "shard", i, 4) for i in range(4)]
    assert lane_seeds(campaign.for_shard(2, 4)) == lane_seeds(shards[2])  # a shard reruns alone
    assert {s.run_id for s in shards} == {f"11:{i}/4" for i in range(4)}
    assert all(s.lane(1).run_id == s.run_id and s.lane(1).root_seed == 11 for s in shards)


def test_shard_0_of_1_is_the_unsharded_campaign():
    campaign = CampaignConfig.of(("stock",), ("jit",), seed=11)
    assert campaign.for_shard(0, 1) == campaign.replaced(campaign_seed=11)  # the seed it had
    assert campaign.for_shard(0, 1).budget.seed == 11 and lane_seeds(campaign.for_shard(0, 1)) == lane_seeds(campaign)
    assert campaign.run_id == campaign.for_shard(0, 1).run_id == "11:0/1"


def test_each_phase_reads_the_configuration_as_built_once():
    """``CampaignConfig.phases``: a lane of a shard knows its run (the seed line says how to rerun
    the shard), its share of the causes to shrink, and draws no OpInfo step where ``--op`` names
    the entries to draw."""
    shard = CampaignConfig.of(("stock",), ("jit",), seed=11, ops=("exp",), opinfo_rate=0.5, max_examples=7).for_shard(1, 4)
    phases = shard.lane(2, 3).phases()
    assert phases.run.run_id == "11:1/4" and "rerun with --seed 11 --shard 1/4" in phases.run.seed_line()
    assert (phases.shrinking.lane, phases.shrinking.lanes) == (2, 3) and phases.evaluation.timeout is not None
    generation = phases.generation
    assert [op.name for op in generation.catalog] == ["exp"] and generation.opinfo_rate == 0.0
    assert generation.max_examples == 7 and generation.seed == shard.budget.seed + 2
    unsharded = CampaignConfig.of(("stock",), ("jit",), seed=11).phases()
    assert unsharded.run.seed_line() == "seed 11 (rerun with --seed 11)" and unsharded.generation.opinfo_rate > 0


# --- Done when: two shards merged equal one process of as many programs ------------------------------

SEED = 5
# Every program is drawn from add alone, so every valid one shows the planted fault on jit.
CAMPAIGN = ["--seed", str(SEED), "--placement", "stock", "--placement", "planted:add_computes_sub", "--path", "jit",
            "--op", "add", "--jobs", "1", "--profile", "ci", "--database", "none", "--time-budget", "60"]  # fmt: skip
PER_SHARD = 3


def run(findings, *extra):
    """``fuzzdce run`` of the campaign into ``findings``; its exit code and summary."""
    code = main(["run", *CAMPAIGN, "--findings", str(findings), *extra])
    return code, json.loads((findings / "summary.json").read_text())


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    """Shards 0 and 1 of 2, their merges in both orders and again, and one process of as many programs."""
    root = tmp_path_factory.mktemp("shards")
    shards = [run(root / f"shard-{i}", "--shard", f"{i}/2", "--max-examples", str(PER_SHARD)) for i in range(2)]
    merged = merge(root / "merged", [root / "shard-0", root / "shard-1"])
    reversed_ = merge(root / "reversed", [root / "shard-1", root / "shard-0"])
    again = merge(root / "again", [root / "merged", root / "shard-1", root / "reversed"])
    single = run(root / "single", "--max-examples", str(2 * PER_SHARD))
    return root, shards, merged, reversed_, again, single


def induced(summary):
    """Placement-induced bugs: key -> (placements, oracles, paths, occurrences)."""
    return {
        b["key"]: (tuple(b["placements"]), tuple(b["oracles"]), tuple(b["paths"]), b["count"])
        for b in summary["bugs"]["regression"]
    }


def shape(summary):
    """Where the placement-induced bugs show: placements and paths. Which oracles show a bug's fault
    besides ``outputs`` depends on the programs a run drew (a guard call that varies a property of
    one program shows the same wrong value to ``guards`` too), and the shards draw other programs
    than the single run."""
    return {(placements, paths) for placements, oracles, paths, _ in induced(summary).values() if "outputs" in oracles}


@pytest.mark.slow
def test_shards_run_their_own_programs_and_say_which_shard(campaigns):
    _, shards, *_ = campaigns
    (code0, s0), (code1, s1) = shards
    assert code0 == code1 == 1
    assert [s["shard"] for s in (s0, s1)] == ["0/2", "1/2"] and s0["campaign_seed"] == s1["campaign_seed"] == SEED
    assert [s["run_id"] for s in (s0, s1)] == [f"{SEED}:0/2", f"{SEED}:1/2"]
    assert s0["seed"] == derive_seed(SEED, "shard", 0, 2) != s1["seed"]


@pytest.mark.slow
def test_two_shards_merged_equal_one_process_of_as_many_programs(campaigns):
    root, shards, merged, _, _, (single_code, single) = campaigns
    s = merged.summary.to_json()
    # ``programs`` counts shrink steps too, and how many each run's shrinking takes depends on what it
    # drew: the single run generates as many programs as both shards (2 x PER_SHARD), and totals are
    # compared with the shards' sums, exactly.
    assert s["programs"] == sum(shard["programs"] for _, shard in shards) >= 2 * PER_SHARD
    assert s["invalid_programs"] == sum(shard["invalid_programs"] for _, shard in shards)
    assert set(s["op_counts"]) == set(single["op_counts"]) == {"add"}
    assert s["op_counts"]["add"] == sum(shard["op_counts"]["add"] for _, shard in shards)
    assert shape(s) == shape(single) == {(("planted:add_computes_sub",), ("jit",))}
    assert len(induced(s)) == len(induced(single)) == 1
    assert merged.exit_code == single_code == 1
    # One fault, on one path, through one oracle: one bug every run finds (a wrong value is one
    # finding whatever the rank of the value), its occurrences the shards' summed in the merge.
    shard_bugs = [induced(shard) for _, shard in shards]
    assert set(induced(s)) == set(induced(single)) == set().union(*shard_bugs) == set.intersection(*map(set, shard_bugs))
    assert all(induced(s)[key][3] == sum(bugs[key][3] for bugs in shard_bugs) for key in induced(s))
    occurrences = {(c["placement"], c["oracle"]): c["occurrences"] for c in s["counts"]}
    assert occurrences[("planted:add_computes_sub", "outputs")] == sum(
        c["occurrences"]
        for _, shard in shards
        for c in shard["counts"]
        if (c["placement"], c["oracle"]) == ("planted:add_computes_sub", "outputs")
    )


@pytest.mark.slow
def test_merging_again_or_in_the_other_order_changes_nothing(campaigns):
    root, _, merged, reversed_, again, _ = campaigns

    def content(folder):
        text = {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}
        return json.loads(json.dumps(text).replace(str(folder), "OUT"))

    assert content(root / "merged") == content(root / "reversed") == content(root / "again")


@pytest.mark.slow
def test_the_report_of_a_merged_folder_lists_its_runs_and_bugs(campaigns):
    from fuzzdce.results.html_report import write_report

    root, _, merged, *_ = campaigns
    html = write_report(root / "merged", root / "merged.html").read_text()
    assert f"run {SEED}:0/2" in html and f"run {SEED}:1/2" in html
    assert all(f"bug {b.id}" in html for b in merged.bugs if b.verdict == Verdict.REGRESSION)

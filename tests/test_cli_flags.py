"""``fuzzdce run``'s options are a table (cli.RUN_FLAGS): each lands in the CampaignConfig group it
is listed under, and the parsed command line becomes the campaign the flags name."""

import argparse

from fuzzdce.cli import FLAG_GROUPS, RUN, RUN_FLAGS, add_run_arguments, config_from, main, parser
from fuzzdce.fuzzing.config import GROUP_OF


def test_each_flag_sets_a_field_of_the_group_it_is_listed_under():
    for flag in RUN_FLAGS:
        assert flag.group in FLAG_GROUPS, flag.flag
        if flag.setting is not None:
            assert GROUP_OF[flag.setting] == flag.group, f"{flag.flag} sets {flag.setting}, a field of {GROUP_OF[flag.setting]}"
        else:
            assert flag.group == RUN or flag.dest in {"placement", "reference", "profile", "shard", "shard_count"}, flag.flag


def test_the_command_line_becomes_the_campaign_it_names(tmp_path):
    args = parser().parse_args(
        ["run", "--path", "jit", "--op", "add", "--seed", "7", "--time-budget", "30", "--timeout", "5",
         "--memory-limit", "4096", "--recycle-jobs", "0", "--findings", str(tmp_path), "--database", "none",
         "--max-examples", "3", "--steer", "--placement", "stock", "--profile", "ci", "--shrink", "regressions"]
    )  # fmt: skip
    config = config_from(args)
    assert config.scope.paths == ("jit",) and config.scope.ops == ("add",) and config.scope.steer
    assert not config.scope.shrink_baseline and config_from(parser().parse_args(["run"])).scope.shrink_baseline
    assert config.scope.placements == ("stock",)
    assert (config.budget.seed, config.budget.time_budget, config.budget.max_examples) == (7, 30, 3)
    assert config.budget.profile == "ci"
    assert (config.workers.timeout, config.workers.memory_limit_mb, config.workers.recycle_jobs) == (5, 4096, 0)
    assert config.output.findings_dir == str(tmp_path) and config.output.database == "none"


def test_the_help_has_one_section_per_group():
    run = argparse.ArgumentParser()
    add_run_arguments(run)
    text = run.format_help()
    for group, about in FLAG_GROUPS.items():
        assert f"{group}: {about}:" in text


def test_thunder_starts_fuzzdce_again_so_only_the_command_line_takes_it(capsys):
    """``--thunder`` restarts the process with that Thunder first on the path: a caller's main() cannot."""
    assert main(["run", "--thunder", "/no/such/thunder"]) == 2
    assert "--thunder starts fuzzdce again: give it on the command line" in capsys.readouterr().err

"""End to end: the fuzzer, not a hand-written program, finds what symcall breaks in thunderfx."""

import json
import os

import pytest

from fuzzdce.cli import main
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig


@pytest.fixture(scope="module")
def symcall_run():
    # Catalog programs only: the symcall split is met where a DCE acts on the catalog's patterns, and a
    # campaign with no time budget shrinks every cause OpInfo programs find in stock Thunder too (at
    # three OpInfo programs in four, seed 0 ran for 15 minutes). What stock shows too is left as
    # generation found it (confirmed all the same): these tests are of what a placement breaks.
    config = CampaignConfig.of(
        ("stock", "rdnp", "symcall", "symcall-fixed"),
        ("thunderfx", "thunderfx-dynamic"),
        max_examples=12,
        seed=0,
        opinfo_rate=0.0,
        shrink_baseline=False,
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    return campaign


@pytest.fixture(scope="module")
def symcall_campaign(symcall_run):
    return symcall_run.store


@pytest.mark.slow
def test_the_symcall_split_is_one_bug_on_both_thunderfx_paths(symcall_run):
    induced = [b for b in symcall_run.ledger.bugs() if b.verdict == "regression"]
    splits = [b for b in induced if "splits" in b.oracles()]
    assert len(splits) == 1, [(b.id, b.oracles(), b.paths()) for b in induced]
    assert splits[0].paths() == ["thunderfx", "thunderfx-dynamic"] and splits[0].placements == ("symcall",)
    assert splits[0].program.n_ops <= 2


@pytest.mark.slow
def test_finds_a_placement_induced_split_under_symcall_only(symcall_campaign):
    induced = [f for f in symcall_campaign if f.verdict == "regression" and f.violation.oracle == "splits"]
    assert induced, [f.signature for f in symcall_campaign]
    assert all(f.placements == ("symcall",) for f in induced)
    assert min(f.program.n_ops for f in induced) <= 2


@pytest.mark.slow
def test_no_exception_split_is_blamed_on_other_placements(symcall_campaign):
    for f in symcall_campaign:
        if f.violation.oracle == "splits" and f.verdict == "regression":
            assert set(f.placements) == {"symcall"}


@pytest.mark.slow
def test_reproducer_of_a_bug_runs_and_fails(symcall_run, tmp_path):
    import subprocess
    import sys

    from fuzzdce.results.reproducers import repro_script as reproducer

    bug = next(b for b in symcall_run.ledger.bugs() if b.verdict == "regression")
    script = tmp_path / "repro.py"
    script.write_text(reproducer(bug))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL" in result.stdout


@pytest.mark.slow
def test_every_finding_is_confirmed_on_replay_and_reproduces_with_the_same_verdict(symcall_run):
    """Confirming replays each bug's smallest program: each finding of it reproduces the same, and
    none replayed fails to (a member shown only by another program is left unknown: None)."""
    store = symcall_run.store
    assert not [(f.id, f.signature) for f in store if f.confirmed is False]
    for bug in symcall_run.ledger.bugs():
        on_smallest = [f for f in bug.members if f.program == bug.smallest.program]
        assert on_smallest and all(f.confirmed for f in on_smallest), [(f.id, f.confirmed) for f in on_smallest]


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    """``fuzzdce run`` with a fault that breaks every program: its exit code, findings folder, summary."""
    folder = tmp_path_factory.mktemp("run") / "findings"
    argv = ["run", "--placement", "stock", "--placement", "planted:colliding_names", "--path", "jit", "--shrink", "regressions"]
    argv += ["--max-examples", "3", "--seed", "5", "--jobs", "1", "--database", "none", "--findings", str(folder)]
    # In a process of its own, as the reruns below: what the planted fault shows depends on what
    # this process compiled before (Thunder keeps generated code), and they must see the same.
    code = run_in_a_fresh_process(argv).returncode
    return argv, code, folder, json.loads((folder / "summary.json").read_text())


@pytest.mark.slow
def test_run_exits_1_on_a_placement_induced_finding_and_writes_the_summary(planted_run):
    argv, code, folder, summary = planted_run
    assert code == 1
    induced = summary["bugs"]["regression"]
    assert induced and all(b["placements"] == ["planted:colliding_names"] for b in induced)
    assert summary["programs"] >= 3 and sum(summary["op_counts"].values()) > 0
    assert {(c["placement"], c["path"]) for c in summary["counts"]} == {("stock", "jit"), ("planted:colliding_names", "jit")}
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == sorted(
        b["id"] for bs in summary["bugs"].values() for b in bs
    )


def run_in_a_fresh_process(argv):
    """``fuzzdce`` in a process of its own: the planted fault's compiles depend on what the process
    compiled before (a ``NameError`` in a fresh process, none after other tests' compiles)."""
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])}
    return subprocess.run([sys.executable, "-m", "fuzzdce", *argv], capture_output=True, text=True, env=env)


@pytest.mark.slow
def test_known_file_suppresses_what_was_filed_and_run_exits_0(planted_run, tmp_path):
    """Each regression pasted from summary.json with a reason is known on the rerun: exit 0. (An
    entry naming a bug by its id alone matches as its signature does: test_bugs, test_findings.)"""
    argv, _, folder, summary = planted_run
    known = tmp_path / "known.json"
    known.write_text(json.dumps([dict(b, reason="filed upstream") for b in summary["bugs"]["regression"]]))
    rerun = run_in_a_fresh_process(argv + ["--known", str(known)])
    assert rerun.returncode == 0, rerun.stdout[-3000:]
    assert "regressions (the reference passes), new: 0 bugs" in rerun.stdout


@pytest.mark.slow
def test_run_clears_only_its_own_earlier_output(planted_run, tmp_path):
    argv, _, folder, _ = planted_run
    (folder / "notes.txt").write_text("mine")
    (folder / "stale").mkdir()
    (folder / "stale" / "bug.json").write_text("{}")
    main(argv + ["--max-examples", "1"])
    assert (folder / "notes.txt").read_text() == "mine" and not (folder / "stale").exists()


def test_bad_known_file_exits_2(capsys):
    assert main(["run", "--known", "/no/such/known.json"]) == 2
    err = capsys.readouterr().err
    assert "known-findings file" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--placement", "nope"], "unknown placement 'nope'"),
        (["run", "--placement", "no_such_mod_q:x"], "cannot import"),
    ],
)
def test_bad_placement_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv", [["run", "--max-examples", "0"], ["run", "--seed", "x"], ["run", "--path", "nvfuser?"]])
def test_bad_values_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2

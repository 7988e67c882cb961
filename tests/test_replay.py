"""Reproducers and ``fuzzdce replay``: fail while the planted bug is applied, pass once it is not."""

import os
import runpy
import subprocess
import sys

import pytest
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import main
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig

TESTS = os.path.dirname(__file__)
ROOT = os.path.dirname(TESTS)
PROGRAM = DEAD_CODE_PROGRAM


def saved_bugs(folder, placement, path):
    """Observe PROGRAM under stock and ``placement`` on ``path``; the bugs go to ``folder``.
    Returns oracle -> the placement-induced bug with a finding of that oracle."""
    campaign = Campaign(CampaignConfig.of(("stock", placement), (path,), findings_dir=str(folder)), log=lambda line: None)
    campaign.observe(PROGRAM)
    return {o: b for b in campaign.ledger.bugs() if b.verdict == "regression" for o in b.oracles()}


@pytest.fixture(scope="module")
def jit_outputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jit")
    return folder, saved_bugs(folder, "planted:add_computes_sub", "jit")["outputs"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "placement, path, oracle",
    [
        ("planted:add_computes_sub", "jit", "outputs"),
        ("planted:colliding_names", "jit", "names"),
        ("planted:failing_splitter", "thunderfx", "splits"),
    ],
)
def test_reproducer_fails_under_the_placement_and_passes_under_stock(tmp_path, placement, path, oracle, capsys):
    bug = saved_bugs(tmp_path, placement, path)[oracle]
    script = runpy.run_path(str(tmp_path / bug.id / "repro.py"), run_name="reproducer")
    assert script["PLACEMENT"] == placement and (path, oracle) in script["CHECKS"]
    assert script["main"]([]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert script["main"](["--placement", "stock"]) == 0, "stock stands for the bug being fixed"
    assert "ok:" in capsys.readouterr().out


@pytest.mark.slow
def test_reproducer_runs_standalone(jit_outputs):
    folder, bug = jit_outputs
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]))
    run = subprocess.run([sys.executable, "repro.py"], cwd=folder / bug.id, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL outputs: output[0]" in run.stdout


@pytest.mark.slow
def test_replay_says_which_placements_still_fail(jit_outputs, capsys):
    folder, bug = jit_outputs
    assert main(["replay", str(folder)]) == 1
    out = capsys.readouterr().out
    assert f"{bug.id} [regression" in out
    assert "STILL FAILS under planted:add_computes_sub; passes under stock, rdnp, symcall, symcall-fixed" in out
    assert "1 of 1 bugs still fail" in out


@pytest.mark.slow
def test_replay_of_one_bug_by_id_exits_0_once_fixed(jit_outputs, capsys):
    folder, bug = jit_outputs
    assert main(["replay", bug.id[:6], "--findings", str(folder), "--placement", "stock"]) == 0
    assert "fixed: passes under stock" in capsys.readouterr().out


@pytest.mark.slow
def test_issue_text_holds_the_program_the_command_and_the_trace_difference(jit_outputs, capsys):
    folder, bug = jit_outputs
    assert main(["issue", bug.id, "--findings", str(folder)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# regression under planted:add_computes_sub against stock: outputs on jit")
    assert bug.program.source().strip() in text and "def make_inputs" in text
    assert f"python {folder / bug.id / 'repro.py'}" in text
    assert "```diff" in text and "ltorch.sub" in text


@pytest.mark.parametrize("argv", [["replay", "/no/such/folder"], ["replay", ".", "--placement", "nope"]])
def test_replay_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("fuzzdce: error:")


@pytest.mark.slow
def test_reproducer_runs_the_paths_own_compile_function(jit_outputs):
    """The plain-Thunder form printed in a reproducer is the source of the function fuzzdce calls."""
    import inspect

    from fuzzdce.running.paths import PATHS

    folder, bug = jit_outputs
    text = (folder / bug.id / "repro.py").read_text()
    assert inspect.getsource(PATHS["jit"].compile) in text
    assert "from fuzzdce.results.repro import reproduce_all" in text


def test_a_reproducer_counts_thunder_raising_only_where_eager_did_not():
    """A grad call eager rejects too (an in-place op on a leaf that requires grad) is no failure of
    Thunder's; a call eager makes, or compiling, is."""
    from fuzzdce.core.model import Call, CallLabel, ErrorInfo, Outcome
    from fuzzdce.results.repro import raised_where_eager_did_not

    leaf = ErrorInfo("RuntimeError", "a leaf Variable that requires grad is being used in an in-place operation.", "", "")
    dynamo = ErrorInfo("TorchRuntimeError", "Dynamo failed to run FX node with fake tensors", "", "")
    eager = Outcome(
        "eager", "stock", calls={CallLabel.PLAIN: Call(CallLabel.PLAIN), CallLabel.GRAD: Call(CallLabel.GRAD, error=leaf)}
    )

    def thunderfx(**errors):
        calls = {label: Call(label, error=errors.get(label)) for label in (CallLabel.PLAIN, CallLabel.GRAD)}
        first = next((e for e in errors.values()), None)
        return Outcome("thunderfx", "stock", calls=calls, error=first)

    assert raised_where_eager_did_not(thunderfx(**{CallLabel.GRAD: dynamo}), eager) is None
    assert raised_where_eager_did_not(thunderfx(**{CallLabel.PLAIN: dynamo}), eager) is dynamo
    compiling = Outcome("thunderfx", "stock", error=dynamo)
    assert raised_where_eager_did_not(compiling, eager) is dynamo


# --- three outcomes: fails, fixed, and not verified -------------------------------------------------


def dead_code_check(path="jit", oracle="outputs", placement="stock"):
    """The reproducer's check of DEAD_CODE_PROGRAM (which stock passes), as a repro.py makes it."""
    from fuzzdce.results.repro import reproduce

    return reproduce(
        PROGRAM.function(), lambda requires_grad=False: PROGRAM.make_inputs(requires_grad=requires_grad), path=path,
        placement=placement, oracle=oracle,
    )  # fmt: skip


@pytest.fixture
def jit_skipped_here(monkeypatch):
    """The jit path cannot run on this machine, as jit-nvfuser cannot without CUDA."""
    import dataclasses

    from fuzzdce.running import paths

    monkeypatch.setitem(
        paths.PATHS, "jit", dataclasses.replace(paths.PATHS["jit"], unavailable=lambda: "planted: no such device")
    )


def test_a_reproducer_whose_path_is_skipped_here_is_not_verified(jit_skipped_here, capsys):
    """It printed "ok ... holds" and exited 0: a jit-nvfuser bug replayed without CUDA counted as fixed."""
    assert dead_code_check() == 4
    assert (
        "NOT VERIFIED outputs on jit under stock: jit skipped on this machine: planted: no such device" in capsys.readouterr().out
    )


def test_a_reproducer_whose_check_fuzzdce_cannot_make_is_not_verified(monkeypatch, capsys):
    from fuzzdce.oracles import ORACLES, names

    monkeypatch.setattr(names, "thunder_check_trace", lambda: None)  # a build without check_trace
    assert dead_code_check(oracle="names") == 4
    assert "NOT VERIFIED names on jit under stock: names on jit under stock could not run check_trace" in capsys.readouterr().out

    def broken(outcome, reference, stock=None):
        raise KeyError("planted")

    monkeypatch.setitem(ORACLES, "outputs", dataclasses_replace(ORACLES["outputs"], check=broken))
    assert dead_code_check() == 4
    assert "NOT VERIFIED outputs on jit under stock: fuzzdce failed while checking: KeyError escaped" in capsys.readouterr().out


def dataclasses_replace(value, **changes):
    import dataclasses

    return dataclasses.replace(value, **changes)


def test_a_reproducer_whose_path_failed_inside_fuzzdce_is_not_verified(monkeypatch, capsys):
    import dataclasses

    from fuzzdce.running import paths

    monkeypatch.setitem(paths.PATHS, "jit", dataclasses.replace(paths.PATHS["jit"], collect=paths.record_thunderfx))
    assert dead_code_check() == 4
    assert "NOT VERIFIED outputs on jit under stock: jit under stock: harness: harness error on jit" in capsys.readouterr().out


def test_a_reproducers_checks_make_one_exit_code():
    from fuzzdce.results.repro import Reproduced, overall

    assert overall([0, 0]) == Reproduced.FIXED == 0
    assert overall([0, 4]) == Reproduced.NOT_VERIFIED == 4  # never fixed while a check was not made
    assert overall([4, 1, 0]) == Reproduced.FAILS == 1
    assert overall([1, 2]) == Reproduced.INVALID == 2


def test_a_reproducer_that_holds_is_fixed(capsys):
    assert dead_code_check() == 0
    assert "ok: outputs holds on jit under stock" in capsys.readouterr().out


@pytest.fixture(scope="module")
def saved_jit_bug(tmp_path_factory):
    """DEAD_CODE_PROGRAM's outputs bug under planted:add_computes_sub on jit, saved to a folder."""
    folder = tmp_path_factory.mktemp("saved")
    return folder, saved_bugs(folder, "planted:add_computes_sub", "jit")["outputs"]


def test_replay_says_a_bug_fails_differently_and_shows_both_failures(saved_jit_bug, capsys):
    """Under a placement that breaks the program another way the old replay said "fixed" and exited 0."""
    folder, bug = saved_jit_bug
    code = main(["replay", str(folder), "--placement", "planted:colliding_names"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FAILS DIFFERENTLY under planted:colliding_names; passes under stock" in out and "fixed:" not in out
    assert "under planted:colliding_names, was: [jit/outputs] output[0]" in out
    assert "under planted:colliding_names, now: [jit/names]" in out
    assert "0 of 1 bugs still fail, 1 fail differently" in out


def test_replay_of_a_bug_whose_path_is_skipped_here_is_not_verified(saved_jit_bug, jit_skipped_here, capsys):
    folder, bug = saved_jit_bug
    assert main(["replay", str(folder), "--placement", "planted:add_computes_sub"]) == 4
    out = capsys.readouterr().out
    assert "NOT VERIFIED under stock (jit skipped on this machine" in out and "fixed:" not in out
    assert "1 not verified (a check could not be made here: not fixed)" in out


def test_replay_that_fails_inside_fuzzdce_is_not_verified(saved_jit_bug, monkeypatch, capsys):
    import dataclasses

    from fuzzdce.running import paths

    folder, bug = saved_jit_bug
    monkeypatch.setitem(paths.PATHS, "jit", dataclasses.replace(paths.PATHS["jit"], collect=paths.record_thunderfx))
    assert main(["replay", str(folder), "--placement", "planted:add_computes_sub"]) == 4
    assert "NOT VERIFIED under stock (fuzzdce failed: harness error on jit under stock" in capsys.readouterr().out


def test_replay_of_a_bug_that_still_fails_exits_1(saved_jit_bug, capsys):
    folder, bug = saved_jit_bug
    assert main(["replay", str(folder), "--placement", "planted:add_computes_sub"]) == 1
    assert "STILL FAILS under planted:add_computes_sub; passes under stock" in capsys.readouterr().out


def test_a_time_out_or_a_crash_is_not_verified_unless_it_is_what_the_oracle_checks():
    from fuzzdce.core.model import FailureKind, JobFailure, Outcome
    from fuzzdce.results.repro import why_not_verified

    timed_out = Outcome("jit", "stock", failure=JobFailure(FailureKind.TIMEOUT, "jit ran past its time limit of 60 s"))
    assert why_not_verified(timed_out, "outputs") == "jit under stock: timeout: jit ran past its time limit of 60 s"
    assert why_not_verified(timed_out, "timeout") == ""  # the timeout oracle's own check: it fails, it is verified
    crashed = Outcome("jit", "stock", failure=JobFailure(FailureKind.CRASH, "worker killed by SIGSEGV"))
    assert why_not_verified(crashed, "names").endswith("crash: worker killed by SIGSEGV")
    assert why_not_verified(crashed, "crash") == ""
    assert why_not_verified(Outcome("jit", "stock"), "outputs") == ""

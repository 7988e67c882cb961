"""End to end: the fuzzer, not a hand-written program, finds what symcall breaks in thunderfx."""

import pytest

from fuzzdce.campaign import Campaign
from fuzzdce.cli import main
from fuzzdce.placements import resolve


@pytest.fixture(scope="module")
def symcall_campaign():
    placements = [resolve(n) for n in ("stock", "rdnp", "symcall", "symcall-fixed")]
    campaign = Campaign(placements, paths=["thunderfx"], max_examples=12, seed=0, log=lambda line: None)
    return campaign.run()


def test_finds_a_placement_induced_split_under_symcall_only(symcall_campaign):
    induced = [f for f in symcall_campaign if f.verdict == "placement-induced" and f.violation.oracle == "splits"]
    assert induced, [f.signature for f in symcall_campaign]
    assert all(f.placements == ["symcall"] for f in induced)
    assert min(f.program.n_ops for f in induced) <= 2


def test_no_exception_split_is_blamed_on_other_placements(symcall_campaign):
    for f in symcall_campaign:
        if f.violation.oracle == "splits" and f.verdict == "placement-induced":
            assert set(f.placements) == {"symcall"}


def test_reproducer_of_a_finding_runs_and_fails(symcall_campaign, tmp_path):
    import subprocess
    import sys

    from fuzzdce.report import reproducer

    finding = next(f for f in symcall_campaign if f.verdict == "placement-induced")
    script = tmp_path / "repro.py"
    script.write_text(reproducer(finding))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL" in result.stdout


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

"""The nightly workflow is linted with actionlint, and its fuzz command parses with fuzzdce's own CLI."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

WORKFLOWS = sorted((Path(__file__).parent.parent / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")


def actionlint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([ACTIONLINT, "-no-color", str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_actionlint(workflow):
    result = actionlint(workflow)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_typo(tmp_path):
    broken = tmp_path / "broken.yml"
    text = (WORKFLOWS[0]).read_text()
    broken.write_text(text.replace("runs-on:", "runs_on:", 1))
    assert actionlint(broken).returncode != 0


def commands(workflow: Path, job: str, marker: str) -> list[list[str]]:
    """The arguments after ``marker`` (e.g. ``./dev fuzz``) of every step of ``job`` that runs it."""
    import yaml

    steps = yaml.safe_load(workflow.read_text())["jobs"][job]["steps"]
    found = []
    for step in steps:
        command = step.get("run", "")
        if marker not in command:
            continue
        # Expressions and shell variables stand for numbers, shard labels or paths the job supplies.
        command = re.sub(r"\$\{\{[^}]*\}\}", "0", command)
        command = re.sub(r"\$\(\./dev venv\)", "venv", command)
        command = re.sub(r"\$\{?SHARD\}?", "0/4", command)
        words = shlex.split(re.sub(r"\$\{?[A-Z_]+\}?", "1", command))
        found.append(words[words.index(marker.split()[-1]) + 1 :])
    return found


NIGHTLY = next(w for w in WORKFLOWS if w.name == "nightly.yml")


def test_every_nightly_fuzz_command_is_a_shard_the_cli_accepts():
    from fuzzdce.cli import parser

    fuzz = commands(NIGHTLY, "fuzz", "./dev fuzz")
    assert fuzz
    for arguments in fuzz:
        args = parser().parse_args(["run", *arguments])
        assert args.profile == "nightly" and args.known and args.findings and args.database and args.seed is not None
        assert args.shard == "0/4"


def test_the_nightly_merge_command_is_accepted_by_the_cli():
    from fuzzdce.cli import parser

    (arguments,) = commands(NIGHTLY, "merge", 'bin/fuzzdce" merge')
    args = parser().parse_args(["merge", *arguments])
    assert args.out == "merged" and args.inputs and args.known and args.markdown


def test_the_nightly_report_command_is_accepted_by_the_cli():
    from fuzzdce.cli import parser

    (arguments,) = commands(NIGHTLY, "merge", 'bin/fuzzdce" report')
    args = parser().parse_args(["report", *arguments])
    assert args.folder == "merged" and args.output == "merged/report.html"


def test_the_shard_label_is_what_fuzzdce_parses():
    import yaml

    from fuzzdce.fuzzing.shards import parse

    label = yaml.safe_load(NIGHTLY.read_text())["jobs"]["fuzz"]["env"]["SHARD"]
    assert label == "${{ strategy.job-index }}/${{ strategy.job-total }}"
    assert parse(label.replace("${{ strategy.job-index }}", "3").replace("${{ strategy.job-total }}", "4")) == (3, 4)


GUARD = next(w for w in WORKFLOWS if w.name == "thunder-guard.yml")


def test_the_guard_fuzzes_the_subject_against_the_reference_ref_and_fails_only_on_regressions():
    """Thunder's repository and refs are its only inputs; its fuzz command is ``--against`` the
    fetched reference (the campaign's reference: the run exits 1 only on regressions) and parses."""
    import yaml

    from fuzzdce.cli import chosen_reference, parser

    workflow = yaml.safe_load(GUARD.read_text())
    inputs = workflow[True]["workflow_dispatch"]["inputs"]  # YAML reads the key `on` as True
    assert set(inputs) == {"thunder_repository", "subject_ref", "reference_ref", "time_budget"}
    assert inputs["subject_ref"]["default"] == "main"
    (arguments,) = commands(GUARD, "guard", 'bin/fuzzdce" run')
    args = parser().parse_args(["run", *arguments])
    assert args.against == ["reference"] and not args.placement and not args.build and args.known and args.findings
    assert chosen_reference(args) == "reference"
    guard_step = next(s for s in workflow["jobs"]["guard"]["steps"] if 'bin/fuzzdce" run' in s.get("run", ""))
    assert "continue-on-error" not in guard_step  # its exit code is the verdict

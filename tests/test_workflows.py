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


def fuzz_arguments(workflow: Path) -> list[str]:
    import yaml

    steps = yaml.safe_load(workflow.read_text())["jobs"]["fuzz"]["steps"]
    command = next(s["run"] for s in steps if "./dev fuzz" in s.get("run", ""))
    # Shell variables stand for numbers or paths the job supplies; any positive integer will do here.
    words = shlex.split(re.sub(r"\$\{?[A-Z_]+\}?", "1", command))
    return words[words.index("fuzz") + 1 :]


def test_nightly_fuzz_command_is_accepted_by_the_cli():
    from fuzzdce.cli import parser

    args = parser().parse_args(["run", *fuzz_arguments(WORKFLOWS[0])])
    assert args.profile == "nightly" and args.known and args.findings and args.database

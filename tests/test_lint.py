"""Lint and format: ruff (configured in pyproject.toml) passes on the package, tests and benchmarks."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TREES = ["fuzzdce", "tests", "benchmarks"]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_passes(command):
    result = subprocess.run([sys.executable, "-m", "ruff", *command, *TREES], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, (
        f"ruff {' '.join(command)}: fix with `ruff check --fix` / `ruff format`\n{result.stdout[-4000:]}{result.stderr[-2000:]}"
    )

"""The suite cannot stall: a stuck test and a crashed worker each end the run as failed, with a
traceback, under the options ./dev test runs with (pyproject's pytest section, xdist's flags)."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

pytestmark = pytest.mark.slow


def dev_test_flags() -> list[str]:
    """The pytest flags ``./dev test`` passes (xdist's worker count and distribution)."""
    line = next(line for line in (ROOT / "dev").read_text().splitlines() if "-m pytest" in line)
    return re.search(r"-m pytest (.*?) \"\$@\"", line).group(1).split()


@pytest.fixture
def project_options(pytester):
    """This project's pytest options (addopts, the per-test limit's method) in a scratch directory,
    with a 4-second limit whose stacks are printed at 2 seconds instead of the project's."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["faulthandler_timeout"] < options["timeout"], "the stacks are printed before the test is ended"
    pytester.makeini(
        f"[pytest]\naddopts = {options['addopts']}\ntimeout = 4\nfaulthandler_timeout = 2\n"
        f"timeout_method = {options['timeout_method']}\n"
    )
    return pytester


def run(pytester):
    return pytester.runpytest_subprocess(*dev_test_flags(), timeout=180)


def test_a_stuck_test_fails_with_its_stack_and_the_run_ends(project_options):
    project_options.makepyfile(
        test_a="def test_quick():\n    pass\n",
        test_b="import time\n\ndef test_stuck():\n    time.sleep(600)\n\ndef test_after():\n    pass\n",
        test_c="def test_quick_too():\n    pass\n",
    )
    result = run(project_options)
    assert result.ret != 0
    assert "test_b.py::test_stuck" in result.stdout.str()
    assert 'test_b.py", line 4 in test_stuck' in result.stderr.str(), result.stderr.str()[-3000:]


def test_a_crashed_worker_fails_the_run_instead_of_hanging_it(project_options):
    project_options.makepyfile(
        test_a="def test_quick():\n    pass\n",
        test_b="import os\n\ndef test_abort():\n    os.abort()\n\ndef test_after():\n    pass\n",
        test_c="def test_one():\n    pass\n\ndef test_two():\n    pass\n",
    )
    result = run(project_options)
    assert result.ret != 0
    assert "test_b.py::test_abort" in result.stdout.str()
    assert "crashed" in result.stdout.str()

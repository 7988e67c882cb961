"""The printed report lists every bug, whatever the number of lanes: a 2-lane run with a baseline
bug (stock Thunder's dce made to fail on programs of two or more ops, in every process of the run)
and placement-induced ones. Its header count, its bug blocks, the findings folder and
``fuzzdce report``'s page all name the same bugs."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent

SITECUSTOMIZE = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import planted
FAULT = planted.failing_dce_in_long_traces(2)  # stock Thunder fails: a baseline bug
FAULT.__enter__()  # (kept referenced: a collected patch would undo itself)
"""


def test_a_two_lane_run_prints_every_bug_and_fuzzdce_report_lists_the_same(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    findings = tmp_path / "findings"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(TESTS), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        "-m",
        "fuzzdce",
        "run",
        "--jobs",
        "2",
        "--placement",
        "stock",
        "--placement",
        "planted:colliding_names",
    ]
    command += ["--path", "jit", "--max-examples", "6", "--seed", "3", "--profile", "ci", "--findings", str(findings)]
    command += [
        "--op",
        "add",
        "--op",
        "mul",
        "--op",
        "neg",
        "--op",
        "exp",
        "--op",
        "abs",
    ]  # cheap, always apply: programs of 2+ ops soon
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert run.returncode == 1, run.stderr[-3000:]
    out = run.stdout
    header = re.search(r"== fuzzdce: (\d+) bugs? \(", out)
    printed = re.findall(r"^--- bug (\w+) under", out, re.M)
    summary = json.loads((findings / "summary.json").read_text())
    in_summary = [b["id"] for bs in summary["bugs"].values() for b in bs]
    verdicts = {b["verdict"] for bs in summary["bugs"].values() for b in bs}
    assert verdicts == {"shared", "regression"}, out
    assert int(header.group(1)) == len(printed) == len(set(printed)) == len(in_summary), out
    assert set(printed) == set(in_summary) == {p.parent.name for p in findings.glob("*/bug.json")}
    baseline = re.search(r"== shared \(the reference fails the same way\): (\d+) bugs? ==", out)
    assert int(baseline.group(1)) == len(summary["bugs"]["shared"]) > 0, out
    page = subprocess.run(
        [sys.executable, "-m", "fuzzdce", "report", str(findings)], capture_output=True, text=True, env=env, timeout=300
    )
    assert page.returncode == 0, page.stderr[-2000:]
    html = (findings / "report.html").read_text()
    assert set(re.findall(r'id="bug-(\w+)"', html)) == set(printed)
    # It prints the run's report again, from the folder: the same bugs, each block the same.
    assert bug_blocks(page.stdout) == bug_blocks(out) and f"issue text: fuzzdce issue {printed[0]} --findings {findings}" in out


def bug_blocks(report: str) -> str:
    """A printed report's lists of bugs: from the first standing's title to the line after the last list."""
    start = report.index("== regressions (the reference passes), new:")
    return report[start : report.index("\n\n", report.index("== shared (the reference fails the same way)"))]


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

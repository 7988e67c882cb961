"""Your Thunder branch against a reference: ``fuzzdce run --against main`` from a branch of a real
checkout. The checkout is made here from the parent snapshot in ``../shared/thunder-upstream/``
(commit ``main``), with two branches of one change each (skipped without the snapshot):

- ``regress``: the torch executor runs ``ltorch.neg`` as ``torch.abs``, so ``thunder.jit(torch.neg)``
  returns ``|x|``: a regression against main, exit 1, at 1 op;
- ``decompose``: ``neg`` decomposes as ``mul(neg(a), 2)``; the torch executor runs ``torch.neg`` for
  the whole symbol, so no result changes: a different decomposition, reported as activity, exit 0.

From ``main`` against ``regress`` the same fault is the reference's alone: fixed, exit 0. Each run
is a process of its own whose ``thunder`` is the checkout's (``PYTHONPATH``), as a user's would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import fuzzdce

# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

SNAPSHOT = Path(__file__).resolve().parent.parent.parent / "shared" / "thunder-upstream" / "thunder-8236d1c97.tar.gz"
FUZZDCE_ROOT = Path(fuzzdce.__file__).resolve().parent.parent
# (file, line, replacement) of each branch.
BRANCHES = {
    "regress": (
        "thunder/executors/torchex.py",
        'neg = _register_torch_operation("neg")',
        'neg = _register_torch_operation("abs")',
    ),
    "decompose": (
        "thunder/torch/__init__.py",
        "def neg(a):\n    return clang.neg(a)",
        "def neg(a):\n    return clang.mul(clang.neg(a), 2)",
    ),
}


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory) -> dict[str, Path]:
    """Branch -> a work tree of it: ``main`` (the snapshot), ``regress`` and ``decompose``."""
    if not SNAPSHOT.is_file():
        pytest.skip(f"no Thunder snapshot {SNAPSHOT} (../shared is absent outside CI)")
    base = tmp_path_factory.mktemp("against")
    root = base / "lightning-thunder"
    with tarfile.open(SNAPSHOT) as tar:
        tar.extractall(base / "unpacked", filter="data")
    (base / "unpacked" / "thunder-8236d1c97").rename(root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the parent snapshot 8236d1c97")
    trees = {"main": root}
    for branch, (file, line, replacement) in BRANCHES.items():
        tree = base / branch
        git(root, "worktree", "add", "-q", "-b", branch, str(tree))
        source = (tree / file).read_text()
        assert source.count(line) == 1, (file, line)
        (tree / file).write_text(source.replace(line, replacement))
        git(tree, "commit", "-q", "-am", branch)
        trees[branch] = tree
    return trees


def run_against(tree: Path, ref: str, findings: Path, cache: Path) -> tuple[int, str, dict]:
    """``fuzzdce run --against REF --op neg --path jit --max-examples 6`` with ``tree`` first on the path."""
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{FUZZDCE_ROOT}", "FUZZDCE_BUILD_CACHE": str(cache)}
    command = [sys.executable, "-m", "fuzzdce", "run", "--against", ref, "--op", "neg", "--path", "jit"]
    command += ["--max-examples", "6", "--seed", "1", "--jobs", "1", "--findings", str(findings)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, cwd=tree)
    summary = json.loads((findings / "summary.json").read_text()) if (findings / "summary.json").is_file() else {}
    return done.returncode, done.stdout + done.stderr, summary


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("build-cache")


def test_a_results_changing_branch_is_a_regression_at_one_op_and_exits_1(checkouts, cache, tmp_path):
    code, out, summary = run_against(checkouts["regress"], "main", tmp_path / "findings", cache)
    assert code == 1, out
    report = out[out.index("== fuzzdce:") :].splitlines()
    assert report[1].startswith("reference: main = thunder 0.2.7.dev0 at ") and "(build main=git:" in report[1], out
    assert report[2].startswith("under test: stock = thunder 0.2.7.dev0 at ") and "(regress)" in report[2], out
    regressions = summary["bugs"]["regression"]
    assert regressions and all(b["placements"] == ["stock"] for b in regressions), out
    assert min(b["n_ops"] for b in regressions) == 1 and "outputs" in {o for b in regressions for o in b["oracles"]}, out
    bug = json.loads((tmp_path / "findings" / regressions[0]["id"] / "bug.json").read_text())
    assert bug["reference"] == "main" and set(bug["thunders"]) == {"main", "stock"}, bug


def test_a_decomposition_only_branch_is_no_finding_and_exits_0(checkouts, cache, tmp_path):
    code, out, summary = run_against(checkouts["decompose"], "main", tmp_path / "findings", cache)
    assert code == 0, out
    assert not summary["bugs"]["regression"], out
    assert "neg" in summary["dce_activity"]["stock"]["decomposition_differs"], summary["dce_activity"]
    assert "stock: decomposition differs from main's in " in out and "neg (" in out, out


def test_the_same_fault_in_the_reference_alone_is_fixed_and_exits_0(checkouts, cache, tmp_path):
    code, out, summary = run_against(checkouts["main"], "regress", tmp_path / "findings", cache)
    assert code == 0, out
    assert not summary["bugs"]["regression"], out
    fixed = summary["bugs"]["fixed"]
    assert fixed and all(b["placements"] == ["regress"] for b in fixed) and "outputs" in {o for b in fixed for o in b["oracles"]}

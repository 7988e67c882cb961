"""Git refs and archives as builds: ``--build NAME=git:REPO_DIR@REF`` extracts REF's ``thunder/``
once into a cache keyed by its commit and fuzzes it as a directory build; ``--against REF`` is the
same for the checkout of the Thunder imported here. The repository is made here: a copy of the
installed Thunder committed, then the planted fault of ``test_builds`` (``add`` run as ``sub``)
committed on top and tagged. Bad repositories and refs: one line, exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import thunder
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import main
from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import STOCK
from fuzzdce.results.store import BUG_FILE
from fuzzdce.running import builds
from fuzzdce.running.builds import against_spec, parse_build
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.placements import resolve

PLANTED_LINE = ('add = _register_torch_operation("add")', 'add = _register_torch_operation("sub")')


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A Thunder git checkout: ``empty`` (no thunder/), ``stock`` (the installed Thunder), then
    ``planted`` (HEAD: its torch executor computes add as sub)."""
    root = tmp_path_factory.mktemp("thunder-git") / "lightning-thunder"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("a Thunder checkout made by a test\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "empty")
    git(root, "tag", "empty")
    shutil.copytree(Path(thunder.__file__).parent, root / "thunder", ignore=shutil.ignore_patterns("__pycache__"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "stock")
    git(root, "tag", "stock-copy")
    torchex = root / "thunder" / "executors" / "torchex.py"
    source = torchex.read_text()
    assert source.count(PLANTED_LINE[0]) == 1
    torchex.write_text(source.replace(*PLANTED_LINE))
    git(root, "commit", "-q", "-am", "plant add as sub")
    git(root, "tag", "planted")
    return root


@pytest.fixture(autouse=True)
def build_cache(tmp_path_factory, monkeypatch) -> Path:
    cache = tmp_path_factory.getbasetemp() / "build-cache"
    monkeypatch.setenv("FUZZDCE_BUILD_CACHE", str(cache))
    return cache


def test_a_ref_is_extracted_once_into_a_cache_keyed_by_its_commit(repo, build_cache, monkeypatch):
    name, build = parse_build(f"p=git:{repo}@planted")
    commit = git(repo, "rev-parse", "planted")
    assert name == "p" and build.path == (str(build_cache / f"git-{commit}"),)
    assert build.spec == f"git:{repo}@{commit}"  # the commit, not the tag
    torchex = Path(build.path[0]) / "thunder" / "executors" / "torchex.py"
    assert PLANTED_LINE[1] in torchex.read_text()
    calls = []
    real_git = builds._git

    def counting_git(repository, *args):
        calls.append(args[0])
        return real_git(repository, *args)

    monkeypatch.setattr(builds, "_git", counting_git)
    assert parse_build(f"again=git:{repo}@{commit[:10]}")[1].path == build.path
    assert calls and "archive" not in calls  # cached: nothing extracted again
    stock_copy = parse_build(f"s=git:{repo}@stock-copy")[1]
    assert (
        stock_copy.path != build.path
        and PLANTED_LINE[0] in (Path(stock_copy.path[0]) / "thunder" / "executors" / "torchex.py").read_text()
    )


def test_the_planted_ref_shows_its_fault_and_the_stock_ref_nothing(repo):
    evaluator = Evaluator()
    try:
        evaluations = evaluator(
            DEAD_CODE_PROGRAM,
            [resolve(f"plantedref=git:{repo}@planted"), resolve(f"copyref=git:{repo}@stock-copy")],
            paths=["jit"],
        )
    finally:
        evaluator.close()
    assert evaluations[STOCK].violations == [] and evaluations["copyref"].violations == []
    assert "outputs" in {v.oracle for v in evaluations["plantedref"].violations}


def test_fuzzdce_run_with_a_git_build_finds_the_fault_and_records_the_commit(repo, tmp_path, capsys):
    findings = tmp_path / "findings"
    code = main(
        [
            "run",
            "--build",
            f"gitmain=git:{repo}@planted",
            "--path",
            "jit",
            "--jobs",
            "1",
            "--op",
            "add",
            "--max-examples",
            "3",
            "--seed",
            "1",
            "--findings",
            str(findings),
            "--time-budget",
            "120",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1, out
    bug = next(
        json.loads(p.read_text()) for p in findings.glob(f"*/{BUG_FILE}") if "gitmain" in json.loads(p.read_text())["placements"]
    )
    assert bug["builds"] == {"gitmain": f"gitmain=git:{repo}@{git(repo, 'rev-parse', 'planted')}"}


def test_against_is_the_ref_of_the_checkout_of_the_imported_thunder(repo):
    assert against_spec("planted", str(repo / "thunder")) == f"planted=git:{repo}@planted"
    assert against_spec("stock", str(repo / "thunder")).startswith("against=git:")  # never named stock
    assert against_spec("origin/main", str(repo / "thunder")) == f"origin-main=git:{repo}@origin/main"
    with pytest.raises(UsageError, match="not in a git checkout"):
        against_spec("main", str(Path(thunder.__file__).parent))  # an installed Thunder


@pytest.mark.parametrize(
    "target, message",
    [
        ("git:{tmp}@main", "is not a git checkout"),
        ("git:{tmp}/missing@main", "is not a directory"),
        ("git:{repo}@no-such-ref", "has no commit 'no-such-ref'"),
        ("git:{repo}@empty", "has no thunder/__init__.py"),
        ("git:{repo}", "give git:REPO_DIR@REF"),
    ],
)
def test_a_bad_repository_or_ref_is_one_line_and_exit_2(repo, tmp_path, capsys, target, message):
    spec = "x=" + target.format(tmp=tmp_path, repo=repo)
    assert main(["run", "--build", spec, "--path", "jit", "--max-examples", "1", "--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert main(["doctor", "--build", spec]) == 2 and message in capsys.readouterr().err


def test_an_archive_holding_thunder_one_folder_down_is_a_build(repo, tmp_path):
    archive = tmp_path / "thunder-planted.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(Path(parse_build(f"p=git:{repo}@planted")[1].path[0]) / "thunder", arcname="thunder-planted/thunder")
    build = parse_build(f"a={archive}")[1]
    assert PLANTED_LINE[1] in (Path(build.path[0]) / "thunder" / "executors" / "torchex.py").read_text()
    empty = tmp_path / "empty.tar.gz"
    with tarfile.open(empty, "w:gz") as tar:
        tar.add(repo / "README.md", arcname="README.md")
    with pytest.raises(UsageError, match="holds no thunder/__init__.py"):
        parse_build(f"e={empty}")


def test_against_compares_the_imported_checkout_with_its_ref(repo, build_cache):
    """A process whose Thunder is the repository's work tree (the planted HEAD): ``--against
    stock-copy`` is that ref of the same checkout, extracted into the cache."""
    root = Path(__file__).resolve().parent.parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(root)]), "FUZZDCE_BUILD_CACHE": str(build_cache)}
    done = subprocess.run(
        [sys.executable, "-P", "-m", "fuzzdce.cli", "doctor", "--against", "stock-copy"],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    commit = git(repo, "rev-parse", "stock-copy")
    assert "thunder  " in done.stdout and str(repo / "thunder") in done.stdout  # this process: the work tree
    assert f"build stock-copy (git:{repo}@{commit})" in done.stdout
    assert str(build_cache / f"git-{commit}" / "thunder") in done.stdout  # the build: the ref, extracted


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

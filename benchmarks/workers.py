"""What starting a sandboxed worker's child costs: spawned, and forked from a forkserver.

Part 1 (``--only start``): a fresh child running one small job (stock, ``--path``, a three-op
program), spawned (``Worker(..., preload=())``: a fresh Python importing torch and Thunder) and
forked from this process's forkserver (``preload=sandbox.CHILD_MODULES``), interleaved ``--trials``
times: seconds from asking for the child to the job's result, and the child's own CPU seconds
(from /proc, read before it stops). The forkserver's own start (its imports, paid once per
process) is timed apart.

Part 2 (``--only files``): the wall and CPU time of pytest over test files that start workers
(``--files``; campaigns, sandboxed jobs, the CLI), on this tree and on ``--before`` (a git
revision, exported to a temporary folder), alternating ``--rounds`` times, each run alone
(``-n 0``) with the suite's own flags (``CI=true``).

    PYTHONPATH=.:tests python benchmarks/workers.py [--only start|files] [--trials 5] [--before HEAD~1]
"""

from __future__ import annotations

import argparse
import multiprocessing.forkserver
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILES = ["tests/test_findings.py", "tests/test_time_budget.py"]


def cpu_seconds(pid: int) -> float:
    """A live process's user + system CPU seconds, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_child(preload: tuple[str, ...], job) -> tuple[float, float, str]:
    """(wall seconds to the job's result, the child's CPU seconds, how it started) for a fresh child."""
    from fuzzdce.running.sandbox import run_job_in_child
    from fuzzdce.running.workers import Worker

    started = time.perf_counter()
    with Worker(run_job_in_child, preload=preload, recycle_jobs=0, recycle_rss_mb=0) as worker:
        result = worker.submit(job, job.timeout)
        seconds = time.perf_counter() - started
        outcome = getattr(result, "outcome", result)  # an eager job's is the Outcome itself
        assert outcome.failure is None and outcome.error is None, result
        return seconds, cpu_seconds(worker.child.pid), worker.child.start_method


def start_costs(trials: int, path: str) -> None:
    from sample_programs import DEAD_CODE_PROGRAM

    from fuzzdce.running.evaluate import Job
    from fuzzdce.running.placements import resolve
    from fuzzdce.running.sandbox import CHILD_MODULES

    job = Job(DEAD_CODE_PROGRAM, resolve("stock"), path, 120.0)
    started = time.perf_counter()
    first = one_child(CHILD_MODULES, job)  # starts the forkserver: its imports, then the first fork
    wall = time.perf_counter() - started
    forkserver = multiprocessing.forkserver._forkserver._forkserver_pid  # multiprocessing's own record
    print(
        f"the forkserver's start and the first forked child's job: {wall:.2f} s wall ({first[2]}); "
        f"the forkserver's CPU (its imports): {cpu_seconds(forkserver):.2f} s, then {first[1]:.2f} s in the child"
    )
    runs: dict[str, list[tuple[float, float]]] = {"spawn": [], "forkserver": []}
    for _ in range(trials):
        for preload in ((), CHILD_MODULES):
            seconds, cpu, method = one_child(preload, job)
            runs[method].append((seconds, cpu))
    print(f"a fresh child and one job (stock, {path}), {trials} trials each, interleaved:")
    print(f"{'start':<12} {'wall s (median, min-max)':>28} {'child CPU s (median, min-max)':>32}")
    for method, values in runs.items():
        walls = [w for w, _ in values]
        cpus = [c for _, c in values]
        print(
            f"{method:<12} {statistics.median(walls):>10.2f} ({min(walls):.2f}-{max(walls):.2f}){'':>6}"
            f" {statistics.median(cpus):>12.2f} ({min(cpus):.2f}-{max(cpus):.2f})"
        )


def export(revision: str, folder: Path) -> Path:
    tree = folder / "before"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def run_files(tree: Path, files: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of pytest and every process under it, pytest's last line) over ``files`` in ``tree``."""
    environment = {**os.environ, "CI": "true", "PYTHONPATH": f"{tree}{os.pathsep}{tree / 'tests'}"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", *files]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    return wall, cpu, last


def file_times(before: str, files: list[str], rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        trees = {f"before ({before})": export(before, Path(folder)), "after (this tree)": ROOT}
        print(f"pytest -n 0 over {' '.join(files)} (CI=true), alternating, {rounds} round(s):")
        for round_ in range(rounds):
            for name, tree in trees.items():
                wall, cpu, last = run_files(tree, files)
                print(f"  round {round_ + 1} {name:<22} {wall:7.1f} s wall {cpu:7.1f} s CPU  {last}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["start", "files"])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--path", default="eager")
    parser.add_argument("--before", default="HEAD~1", help="the git revision to compare the test files' time with")
    parser.add_argument("--files", nargs="+", default=DEFAULT_FILES)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    if args.only in (None, "start"):
        start_costs(args.trials, args.path)
    if args.only in (None, "files"):
        file_times(args.before, args.files, args.rounds)


if __name__ == "__main__":
    main()

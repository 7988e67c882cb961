"""Memory over a long campaign: resident size of every process, with and without recycling workers.

Runs ``fuzzdce run`` (stock only, 2 lanes by default: what the issue measured) for ``--minutes``,
sampling the resident size (VmRSS) of every process under it from /proc every ``--sample-every``
seconds, from outside, so the figures do not depend on the code under test. Prints, per process
(the driver, each lane, each lane's worker, whose successive children are one process here), its
resident MB at the start (after ``--warmup`` seconds of imports) and end, its peak, and its growth
per minute and per 100 jobs, for each variant: ``without`` (``--recycle-jobs 0 --recycle-rss 0
--recycle-lane-growth 0``) and ``with`` (the defaults, or ``--recycle-jobs N`` / ``--recycle-rss MB`` /
``--recycle-lane-growth MB``). Also prints the cost of a worker's fresh child (its first job, imports
included, against the next).

    PYTHONPATH=. python benchmarks/memory.py [--minutes 20] [--jobs 2] [--variant both|with|without]

Run two variants at once (``--variant with`` and ``--variant without`` in two shells) to halve the
wall time; they then share the cores, so say so beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# --- reading /proc, from outside ---------------------------------------------------------------


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process visible in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (ppid, command)
    return table


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def children(table, pid: int) -> list[int]:
    """Child processes of ``pid`` that are fuzzdce's (not multiprocessing's resource tracker)."""
    return sorted(p for p, (ppid, command) in table.items() if ppid == pid and "resource_tracker" not in command)


@dataclass
class Series:
    """One process's samples: (seconds since start, pid, resident MB)."""

    samples: list[tuple[float, int, float]] = field(default_factory=list)

    def after(self, warmup: float) -> list[tuple[float, int, float]]:
        later = [s for s in self.samples if s[0] >= warmup]
        return later or self.samples

    def pids(self) -> int:
        return len({pid for _, pid, _ in self.samples})


class Sampler:
    """Names the processes under a campaign's root (lanes in the order they appear, each lane's
    worker after its lane) and records their resident size. A child of the root that never has a
    child of its own is no lane but the driver's worker (it confirms findings once the lanes are
    done); ``series`` says so once sampling is over."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.lane_slots: list[int | None] = []  # lane index -> pid of its current process
        self.samples: list[tuple[float, int, float, str]] = []
        self.root_children: set[int] = set()
        self.parents: set[int] = set()  # root children seen with a child

    @property
    def series(self) -> dict[str, Series]:
        named: dict[str, Series] = defaultdict(Series)
        for now, pid, mb, name in self.samples:
            if pid in self.root_children and pid not in self.parents:
                name = "driver worker"
            named[name].samples.append((now, pid, mb))
        return named

    def lane_name(self, pid: int, alive: set[int]) -> str:
        if pid not in self.lane_slots:
            free = [i for i, p in enumerate(self.lane_slots) if p not in alive]
            if free:  # a restarted lane takes the slot of the one that ended
                self.lane_slots[free[0]] = pid
            else:
                self.lane_slots.append(pid)
        return f"lane {self.lane_slots.index(pid)}"

    def sample(self, now: float) -> None:
        table = process_table()
        named = {self.root: "driver"}
        lanes = children(table, self.root)
        for pid in lanes:
            self.root_children.add(pid)
            lane = self.lane_name(pid, set(lanes))
            named[pid] = lane
            for worker in children(table, pid):
                self.parents.add(pid)
                named[worker] = f"{lane} worker"
        for pid, name in named.items():
            mb = rss_mb(pid)
            if mb is not None:
                self.samples.append((now, pid, mb, name))


# --- one variant ------------------------------------------------------------------------------


def run_variant(name: str, recycle: list[str], args) -> dict:
    """Run the campaign for ``args.minutes``, sampling; SIGTERM ends it (cleanly, summary written)."""
    with tempfile.TemporaryDirectory() as folder:
        command = [
            sys.executable,
            "-m",
            "fuzzdce.cli",
            "run",
            "--placement",
            "stock",
            "--jobs",
            str(args.jobs),
            "--seed",
            str(args.seed),
            "--profile",
            "nightly",
            "--database",
            "none",
            "--max-examples",
            "1000000",
            "--time-budget",
            str(int(args.minutes * 60) + 600),
            "--findings",
            folder,
            *recycle,
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        log = open(Path(folder) / "stderr.txt", "w")
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=log, cwd=folder)
        sampler = Sampler(process.pid)
        start = time.monotonic()
        while process.poll() is None and time.monotonic() - start < args.minutes * 60:
            sampler.sample(time.monotonic() - start)
            time.sleep(args.sample_every)
        elapsed = time.monotonic() - start
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=300)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        summary_file = Path(folder) / "summary.json"
        summary = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
        lines = (Path(folder) / "stderr.txt").read_text().splitlines()
    recycled_lines = [line for line in lines if "recycled after" in line or "ended without" in line or "Traceback" in line]
    return {
        "name": name,
        "recycle": " ".join(recycle) or "defaults",
        "elapsed": elapsed,
        "series": sampler.series,
        "summary": summary,
        "recycle_log": recycled_lines,
    }


def slope_per_minute(samples) -> float:
    """Least-squares growth in MB per minute over ``samples`` of one pid."""
    if len(samples) < 2:
        return 0.0
    ts = [t / 60 for t, _, _ in samples]
    ms = [m for _, _, m in samples]
    mt, mm = sum(ts) / len(ts), sum(ms) / len(ms)
    var = sum((t - mt) ** 2 for t in ts)
    return sum((t - mt) * (m - mm) for t, m in zip(ts, ms)) / var if var else 0.0


def child_slope(samples) -> float:
    """Growth per minute within each child (pid), weighted by how long each was sampled."""
    by_pid = defaultdict(list)
    for s in samples:
        by_pid[s[1]].append(s)
    weighted = [(slope_per_minute(ss), ss[-1][0] - ss[0][0]) for ss in by_pid.values() if len(ss) > 1]
    total = sum(w for _, w in weighted)
    return sum(s * w for s, w in weighted) / total if total else 0.0


def report(result: dict, args) -> list[str]:
    summary = result["summary"]
    programs = summary.get("programs", 0)
    minutes = result["elapsed"] / 60
    recycled = summary.get("memory", {}).get("recycled", {})
    # Jobs each lane's worker completed (summary.json; programs plus shrink steps and replays).
    jobs = {p["process"].removesuffix(" worker"): p.get("jobs", 0) for p in summary.get("memory", {}).get("processes", [])}
    total_jobs = sum(n for lane, n in jobs.items() if lane.startswith("lane"))
    out = [
        f"== {result['name']} recycling ({result['recycle']}): {minutes:.1f} min, {programs} programs, "
        f"{total_jobs} jobs ({total_jobs / max(minutes, 1e-9) / args.jobs:.0f} jobs/min per lane); "
        f"recycled (summary.json): workers {recycled.get('workers', '?')}, lanes {recycled.get('lanes', '?')} ==",
        f"{'process':<16}{'pids':>5}{'start MB':>10}{'end MB':>9}{'peak MB':>9}{'MB/min':>8}{'MB/min in child':>17}{'MB/100 jobs':>13}",
    ]
    for name in sorted(result["series"], key=lambda n: (n != "driver", n)):
        series = result["series"][name]
        later = series.after(args.warmup)
        start, end = later[0], later[-1]
        span = max((end[0] - start[0]) / 60, 1e-9)
        net = (end[2] - start[2]) / span
        in_child = child_slope(later)
        lane_jobs_per_minute = jobs.get(name.removesuffix(" worker"), 0) / minutes
        per_job = "" if name == "driver" else f"{100 * in_child / max(lane_jobs_per_minute, 1e-9):13.2f}"
        peak = max(m for _, _, m in series.samples)
        out.append(
            f"{name:<16}{series.pids():>5}{start[2]:>10.0f}{end[2]:>9.0f}{peak:>9.0f}{net:>8.1f}{in_child:>17.1f}{per_job}"
        )
    if summary.get("memory"):
        out.append("summary.json memory: " + json.dumps(summary["memory"]))
    out += [f"  {line}" for line in result["recycle_log"][:4]]
    if len(result["recycle_log"]) > 4:
        out.append(f"  ... {len(result['recycle_log'])} recycle lines in all")
    return out


# --- the cost of a fresh child -------------------------------------------------------------------


def restart_cost() -> tuple[float, float]:
    """(seconds of a fresh worker child's first eager job, seconds of the next) on a 1-op program."""
    from fuzzdce.core.model import EAGER, STOCK
    from fuzzdce.core.program import Program, Ref, Step, TensorInput
    from fuzzdce.running.evaluate import Job
    from fuzzdce.running.placements import PLACEMENTS
    from fuzzdce.running.sandbox import SandboxedJobs

    program = Program((TensorInput((2, 3)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)
    jobs = SandboxedJobs()
    try:
        times = []
        for seed in (1, 2):
            start = time.perf_counter()
            jobs(Job(Program(program.inputs, program.steps, program.outputs, seed=seed), PLACEMENTS[STOCK], EAGER, 60))
            times.append(time.perf_counter() - start)
    finally:
        jobs.close()
    return times[0], times[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--jobs", type=int, default=2, help="lanes")
    parser.add_argument("--variant", choices=["both", "with", "without"], default="both")
    parser.add_argument("--recycle-jobs", type=int, help="for the `with` variant (default: fuzzdce's)")
    parser.add_argument("--recycle-rss", type=int, help="for the `with` variant (default: fuzzdce's)")
    parser.add_argument("--recycle-lane-growth", type=int, help="for the `with` variant (default: fuzzdce's)")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=60.0, help="seconds of imports before the start figure")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # Thunder's import-time warnings, from restart_cost
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; fuzzdce run --placement stock --jobs {args.jobs} "
        f"for {args.minutes:g} min; RSS sampled from /proc every {args.sample_every:g} s; start = first sample after "
        f"{args.warmup:g} s; a worker's children count as one process (pids: how many it had)",
        flush=True,
    )
    first, second = restart_cost()
    print(
        f"restart cost: a fresh worker child's first job {first:.1f} s (spawn + torch/Thunder imports), the next {second:.3f} s",
        flush=True,
    )
    with_recycle = []
    if args.recycle_jobs is not None:
        with_recycle += ["--recycle-jobs", str(args.recycle_jobs)]
    if args.recycle_rss is not None:
        with_recycle += ["--recycle-rss", str(args.recycle_rss)]
    if args.recycle_lane_growth is not None:
        with_recycle += ["--recycle-lane-growth", str(args.recycle_lane_growth)]
    variants = {"without": ["--recycle-jobs", "0", "--recycle-rss", "0", "--recycle-lane-growth", "0"], "with": with_recycle}
    for name in ("without", "with") if args.variant == "both" else (args.variant,):
        print("\n".join(report(run_variant(name, variants[name], args), args)), flush=True)


if __name__ == "__main__":
    sys.exit(main())

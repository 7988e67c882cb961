"""fuzzdce on a CUDA machine: what runs there, the device tests, then a campaign on the CUDA paths.

    PYTHONPATH=. python benchmarks/cuda.py [--time-budget 300] [--jobs N] [--seed 7] [--out DIR]

Prints ``fuzzdce doctor`` (which paths run and why the others do not), runs the tests that need
a device (tests/test_devices.py, tests/test_workers.py), then a campaign of stock and the built-in
placements on every CUDA path that runs here, in lanes; the report goes to DIR/report.txt, the
progress lines to DIR/progress.txt and the findings folder, packed, to DIR/findings.tar.gz.
Each step goes on whatever the one before it did. Figures: programs, bugs, wall seconds, the exit
code; every bug in the report is then read by hand (benchmarks/results/cuda-*.txt).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

PLACEMENTS = ("stock", "rdnp", "symcall", "symcall-fixed")


def step(title: str, command: list[str], out: Path, name: str, timeout: float) -> int:
    """Run ``command``, its output to DIR/name (and its tail here); the exit code (124: time)."""
    print(f"== {title}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    with open(out / name, "w") as log:
        try:
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            code = 124
    text = (out / name).read_text(errors="replace").splitlines()
    print("\n".join(text[-25:]))
    print(f"== {title}: exit {code} in {time.perf_counter() - start:.0f} s", flush=True)
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-budget", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=os.environ.get("OUT", "cuda-run"))
    parser.add_argument("--findings", default=None, help="the findings folder (default: OUT/findings)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    step("doctor", [python, "-m", "fuzzdce", "doctor"], out, "doctor.txt", 120)

    from fuzzdce.running.paths import PATHS

    cuda_paths = [name for name, path in PATHS.items() if path.device == "cuda" and not path.unavailable()]
    if not cuda_paths:
        print("no CUDA path runs here: see doctor.txt")
        return 2
    tests = ["tests/test_devices.py", "tests/test_workers.py"]
    step("device tests", [python, "-m", "pytest", "-q", "-p", "fuzzdce.pytest_plugin", *tests], out, "tests.txt", 200)
    findings = Path(args.findings) if args.findings else out / "findings"
    campaign = [python, "-m", "fuzzdce", "run", *(f"--placement={p}" for p in PLACEMENTS)]
    campaign += [*(f"--path={p}" for p in cuda_paths), f"--jobs={args.jobs}", f"--time-budget={args.time_budget}"]
    campaign += [f"--seed={args.seed}", f"--findings={findings}"]
    print(f"== campaign: {' '.join(campaign)}", flush=True)
    start = time.perf_counter()
    with open(out / "report.txt", "w") as report, open(out / "progress.txt", "w") as progress:
        try:
            code = subprocess.run(campaign, stdout=report, stderr=progress, timeout=args.time_budget * 1.6).returncode
        except subprocess.TimeoutExpired:
            code = 124
    wall = time.perf_counter() - start
    print((out / "report.txt").read_text(errors="replace")[:6000])
    print(f"== campaign: exit {code}, {wall:.0f} s wall, {args.jobs} lanes, paths {', '.join(cuda_paths)}")
    summary = findings / "summary.json"
    if summary.exists():
        import json

        memory = json.loads(summary.read_text()).get("memory", {})
        peaks = sorted(p["peak_rss_mb"] for p in memory.get("processes", []) if "worker" in p["process"])
        print(f"== memory: worker peak resident MB {peaks[:1]}..{peaks[-1:]}, recycled {memory.get('recycled')}")
    if findings.exists():
        with tarfile.open(out / "findings.tar.gz", "w:gz") as packed:
            packed.add(findings, arcname="findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())

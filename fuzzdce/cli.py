"""The ``fuzzdce`` command line."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzzdce.core.decisions import describe
from fuzzdce.core.errors import HarnessError, UsageError, harness_message, unexpected_exception
from fuzzdce.core.joining import by_decision
from fuzzdce.core.model import STOCK
from fuzzdce.core.quiet import quiet_library_warnings
from fuzzdce.fuzzing.bisection import bisect_failure, regressions
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import DEFAULT_RECYCLE_LANE_GROWTH_MB, CampaignConfig
from fuzzdce.fuzzing.lanes import raise_keyboard_interrupt, run_lanes
from fuzzdce.fuzzing.minify import Criterion, Failure, Result, run_minify
from fuzzdce.fuzzing.minify_sources import read_subject
from fuzzdce.fuzzing.profiles import PROFILE_EXAMPLES
from fuzzdce.fuzzing.shards import ENVIRONMENT_HELP
from fuzzdce.fuzzing.shards import resolve as resolve_shard
from fuzzdce.fuzzing.time_plan import process_started_at
from fuzzdce.oracles import ORACLES
from fuzzdce.results.html_report import REPORT_FILE, write_report
from fuzzdce.results.issue import issue_markdown, minified_issue, script_of_folder
from fuzzdce.results.merge import markdown as merge_markdown
from fuzzdce.results.merge import merge
from fuzzdce.results.replay import replay_bug
from fuzzdce.results.report import render
from fuzzdce.results.repro import Reproduced, overall
from fuzzdce.results.reproducers import minified_case, verified
from fuzzdce.results.store import (
    DEFAULT_FINDINGS_DIR,
    SUMMARY_FILE,
    bug_folders,
    find_bug,
    load_known,
    read_results,
    read_summary,
)
from fuzzdce.running.builds import FUZZDCE_ROOT, BuildWorker, against_name, against_spec, parse_build
from fuzzdce.running.doctor import diagnosis
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.paths import DEFAULT_PATHS, PATHS
from fuzzdce.running.placements import DEFAULT_PLACEMENTS, PLACEMENTS, resolve
from fuzzdce.running.sandbox import SandboxedJobs
from fuzzdce.running.workers import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_RECYCLE_JOBS, DEFAULT_RECYCLE_RSS_MB
from fuzzdce.strategies import CATALOG, thunder_support
from fuzzdce.strategies.model_blocks import DEFAULT_BLOCK_RATE
from fuzzdce.strategies.opinfo import DEFAULT_OPINFO_RATE


def integer_at_least(minimum: int, what: str):
    """An argparse type: an integer >= ``minimum``, else an error naming ``what`` was expected."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < minimum:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


positive_int = integer_at_least(1, "a positive integer")
count_or_zero = integer_at_least(0, "an integer >= 0 (0: never)")  # a threshold where 0 means never


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share between 0 and 1, got {text!r}")
    return value


def seed_value(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"seed must be in [0, 2**32), got {text!r}")
    return value


@dataclass(frozen=True)
class Flag:
    """One option of ``fuzzdce run``: its flag and argparse's keywords for it, the group of
    ``CampaignConfig`` it belongs to (``RUN`` for the command's own), and the campaign setting it
    gives, through ``convert`` (``setting`` None: ``config_from`` reads it itself)."""

    flag: str
    group: str
    keywords: Mapping[str, Any]
    setting: str | None = None
    convert: Callable[[Any], Any] | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def value(self, args: argparse.Namespace) -> Any:
        value = getattr(args, self.dest)
        return value if self.convert is None else self.convert(value)


RUN = "run"  # the command's own options: how it runs the campaign's lanes and what it prints

# What each group of ``fuzzdce run``'s help is about (CampaignConfig's groups, then the command's own).
FLAG_GROUPS = {
    "scope": "what to fuzz",
    "budget": "how much, and with which seeds",
    "workers": "where Thunder's work runs, within which limits",
    "output": "where results go",
    RUN: "the command itself",
}

# ``fuzzdce run``'s options, in the order its help lists them within each group. --build and
# --against (shared with replay and doctor) are added after --placement.
RUN_FLAGS = (
    Flag("--placement", "scope", dict(
        action="append",
        metavar="NAME",
        help=f"placement to fuzz (repeatable): one of {', '.join(PLACEMENTS)}, or package.module:attr "
        f"naming a zero-argument callable returning a context manager (default: all built-in)",
    )),
    Flag("--reference", "scope", dict(
        metavar="NAME",
        help="the Thunder every other one is judged against, stock or a placement's or build's NAME (default: "
        "the first --against REF, else stock): a finding it does not show is a regression (exit 1), one only it "
        "shows is fixed, one both show is shared",
    )),
    Flag("--path", "scope", dict(
        action="append", choices=list(PATHS), help=f"compile path (repeatable; default: {', '.join(DEFAULT_PATHS)})"
    ), setting="paths", convert=lambda paths: tuple(paths or DEFAULT_PATHS)),
    Flag("--op", "scope", dict(
        action="append",
        metavar="NAME",
        help="draw programs from these catalog entries only (repeatable; default: the whole catalog; `fuzzdce ops` lists them)",
    ), setting="ops", convert=lambda ops: tuple(ops or ())),
    Flag("--shrink", "scope", dict(
        choices=["all", "regressions"],
        help="which bugs to shrink: all, or only regressions (what a placement breaks that the reference passes), "
        "leaving the failures the reference shares as generation found them (default: all)",
    ), setting="shrink_baseline", convert=lambda choice: None if choice is None else choice == "all"),
    Flag("--steer", "scope", dict(
        action="store_true",
        help="steer generation to catalog entries, dtypes and value domains not yet drawn and to programs "
        "where placements change subsymbols (rounds of 15 programs with their own weights)",
    ), setting="steer"),
    Flag("--opinfo-rate", "scope", dict(
        type=share,
        metavar="R",
        help="the share of programs holding one step drawn from Thunder's own OpInfos (thunder.tests.opinfos: "
        "a sample of an op, chained with catalog steps), where the installed Thunder ships them; 0: catalog "
        f"programs only; none with --op (default: {DEFAULT_OPINFO_RATE})",
    ), setting="opinfo_rate"),
    Flag("--block-rate", "scope", dict(
        type=share,
        metavar="R",
        help="the share of programs drawn as a mutated block of the models Thunder ships (thunder/tests/*_model.py: "
        "attention, MLP, norms, rotary embedding, traced at tiny sizes; shapes, dtype, requires_grad, one op swapped, "
        f"inserted or made in place); 0: none; none with --op (default: {DEFAULT_BLOCK_RATE})",
    ), setting="block_rate"),
    Flag("--max-examples", "budget", dict(
        type=positive_int, help="programs to generate, per lane (default: the fuzz profile's: ci 30, dev 60, nightly 5000)"
    ), setting="max_examples"),
    Flag("--time-budget", "budget", dict(
        type=positive_int,
        metavar="S",
        help="the campaign's wall time: generation until the time left is the work waiting (10-40%% of it), shrinking to "
        "95%% less a reserve for confirming the bugs found (at most 10%%), joining to 97.5%%, then confirming and writing "
        "the findings folder "
        "(default: the profile's: ci 300, dev 600, nightly none)",
    ), setting="time_budget"),
    Flag("--profile", "budget", dict(
        choices=list(PROFILE_EXAMPLES),
        help="fuzz profile (Hypothesis settings; default: $HYPOTHESIS_PROFILE, else ci under $CI, else dev)",
    )),
    Flag("--seed", "budget", dict(type=seed_value, help="Hypothesis seed; printed at start when not given"), setting="seed"),
    Flag("--shard", "budget", dict(
        metavar="I/N",
        help="run shard I of N (0-based) of the campaign --seed names: its own seeds, derived from the campaign's, "
        "so N machines never repeat one another's programs and any shard reruns alone; --max-examples and "
        "--time-budget apply per shard (per lane of it); join the shards' folders with `fuzzdce merge`. "
        f"Without --shard, the environment may say: {ENVIRONMENT_HELP.replace('%', '%%')}",
    )),
    Flag("--shard-count", "budget", dict(
        type=positive_int,
        metavar="N",
        help="how many shards, for schedulers that export only the index (Kubernetes indexed Jobs' JOB_COMPLETION_INDEX)",
    )),
    Flag("--timeout", "workers", dict(
        type=positive_int, default=60, help="seconds per compile path (default: 60)"
    ), setting="timeout"),
    Flag("--compile-every-placement", "workers", dict(
        action="store_true",
        help="compile every placement on every path, even where stock's compile, probing it, showed it changes "
        "nothing there (by default such a placement takes stock's outcome there, judged by every oracle)",
    ), setting="share_compiles", convert=lambda every: not every),
    Flag("--memory-limit", "workers", dict(
        type=count_or_zero,
        default=DEFAULT_MEMORY_LIMIT_MB,
        metavar="MB",
        help="memory limit of each worker: its address space, or its resident size where it may use CUDA "
        f"(which cannot start under an address-space limit); past it, the job is a crash; 0: none (default: {DEFAULT_MEMORY_LIMIT_MB})",
    ), setting="memory_limit_mb", convert=lambda mb: mb or None),
    Flag("--recycle-jobs", "workers", dict(
        type=count_or_zero,
        default=DEFAULT_RECYCLE_JOBS,
        metavar="N",
        help="replace each worker's process, between jobs, after N jobs (its memory grows over a long run; "
        f"a fresh one costs a few seconds of imports); 0: never (default: {DEFAULT_RECYCLE_JOBS})",
    ), setting="recycle_jobs"),
    Flag("--recycle-rss", "workers", dict(
        type=count_or_zero,
        default=DEFAULT_RECYCLE_RSS_MB,
        metavar="MB",
        help="replace each worker's process, between jobs, once its resident memory passes MB; "
        f"0: never (default: {DEFAULT_RECYCLE_RSS_MB})",
    ), setting="recycle_rss_mb"),
    Flag("--recycle-lane-growth", "workers", dict(
        type=count_or_zero,
        default=DEFAULT_RECYCLE_LANE_GROWTH_MB,
        metavar="MB",
        help="a lane whose process has grown MB resident since it started stops after its current program, and a "
        "fresh process goes on from its results with the lane's programs and time left; "
        f"0: never (default: {DEFAULT_RECYCLE_LANE_GROWTH_MB})",
    ), setting="recycle_lane_growth_mb"),
    Flag("--findings", "output", dict(
        metavar="DIR",
        default=DEFAULT_FINDINGS_DIR,
        help=f"folder for findings, written as they appear (default: ./{DEFAULT_FINDINGS_DIR}; "
        "what an earlier run wrote there is replaced)",
    ), setting="findings_dir"),
    Flag("--known", "output", dict(
        metavar="FILE",
        help='known-bugs JSON file: [{"signature": BUG_ID_OR_SIGNATURE, "reason": WHY}, ...] (finding '
        "signatures and ids work too); matching bugs are reported as known and do not make the run exit 1",
    ), setting="known", convert=lambda path: load_known(path) if path else {}),
    Flag("--database", "output", dict(
        metavar="SPEC",
        help="example database shared by lanes and machines: a directory, redis://HOST:PORT, or none "
        "(default: the profile's: .hypothesis/examples, none for ci)",
    ), setting="database"),
    Flag("--jobs", RUN, dict(
        type=positive_int,
        default=os.cpu_count() or 1,
        help="parallel lanes, each with its own sandboxed worker (default: all cores); 1: one lane, in this "
        "process, its Thunder work still in a sandboxed worker",
    )),
    Flag("--in-process", RUN, dict(
        action="store_true",
        help="for a debugger: one lane, Thunder's work in this very process, no worker (--jobs is ignored); an abort "
        "in torch or Thunder then ends the campaign, a hang inside a compile stalls it, and no memory limit applies",
    )),
    Flag("--verbose", RUN, dict(
        action="store_true", help="also print findings per placement x path x oracle, and each bug's members"
    )),
)  # fmt: skip


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """``fuzzdce run``'s flags (``RUN_FLAGS``), in one help section per group."""
    sections = {group: run.add_argument_group(f"{group}: {about}") for group, about in FLAG_GROUPS.items()}
    for flag in RUN_FLAGS:
        sections[flag.group].add_argument(flag.flag, **flag.keywords)
        if flag.flag == "--placement":
            add_build_argument(sections["scope"])


def add_build_argument(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--thunder",
        metavar="DIR|git:REPO_DIR@REF|ARCHIVE",
        help="the Thunder to run as stock, instead of the one installed: a directory holding thunder/ (a checkout), "
        "REF's thunder/ in a git checkout, or a .tar.gz holding thunder/ (a snapshot of main); fuzzdce starts again "
        "with it first on PYTHONPATH, and reports name its version and commit",
    )
    command.add_argument(
        "--build",
        action="append",
        default=[],
        metavar="NAME=DIR|PYTHON|git:REPO_DIR@REF|ARCHIVE",
        help="another Thunder build, fuzzed as a placement named NAME against the Thunder fuzzdce runs under "
        "(repeatable): DIR is put first on its path (a lightning-thunder checkout, or a directory from "
        "`pip install --no-deps --target DIR lightning-thunder==VERSION`); PYTHON is another interpreter with "
        "its own Thunder; git:REPO_DIR@REF is REF's thunder/ package in that git checkout, extracted once into a "
        "cache keyed by its commit; ARCHIVE a .tar.gz holding thunder/. Without --placement, run compares stock "
        "with the builds only",
    )
    command.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="REF",
        help="the same as --build REF=git:CHECKOUT@REF, CHECKOUT the git checkout of the Thunder this process "
        "imports: your branch (stock) against REF (repeatable)",
    )


def add_replay_arguments(replay: argparse.ArgumentParser) -> None:
    replay.add_argument(
        "target", metavar="BUG_OR_PATH", help="a bug id (in --findings), a bug folder, or a findings folder holding several"
    )
    replay.add_argument("--findings", default=DEFAULT_FINDINGS_DIR, metavar="DIR", help="findings folder bug ids refer to")
    replay.add_argument(
        "--placement",
        action="append",
        metavar="NAME",
        help="placement to replay under (repeatable; default: every built-in one and those the finding was seen under)",
    )
    add_build_argument(replay)
    replay.add_argument("--timeout", type=positive_int, default=60, help="seconds per compile path (default: 60)")


def add_merge_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("out", metavar="OUT", help="the merged findings folder (its earlier bugs and summary are replaced)")
    merge.add_argument(
        "inputs", nargs="+", metavar="DIR", help="findings folders to join (each with summary.json or bug folders)"
    )
    merge.add_argument("--known", metavar="FILE", help="known-bugs JSON file, as for fuzzdce run")
    merge.add_argument(
        "--markdown", metavar="FILE", help="also write a Markdown summary of the merged bugs (for CI step summaries)"
    )


def add_issue_arguments(issue: argparse.ArgumentParser) -> None:
    issue.add_argument("bug", metavar="BUG", help="a bug id (or a unique prefix of one), or a bug folder")
    issue.add_argument("--findings", default=DEFAULT_FINDINGS_DIR, metavar="DIR", help="findings folder holding the bug")
    issue.add_argument(
        "--script",
        action="store_true",
        help="print only the issue's standalone reproducer (torch and Thunder alone): python/pytest it",
    )


def add_source_arguments(command: argparse.ArgumentParser) -> None:
    """A failing program given as ``minify_sources.read_subject`` reads one: SOURCE and --inputs."""
    command.add_argument(
        "source",
        metavar="SOURCE",
        help="a script Thunder's report tools wrote (class DynamoModule), a file with def program and def make_inputs "
        "(a findings folder's repro.py), FILE.py:FUNCTION or module:FUNCTION with --inputs, or a findings folder's bug folder",
    )
    command.add_argument(
        "--inputs",
        metavar="FACTORY",
        help="the function returning the inputs (FACTORY in SOURCE's file or module, or module:FACTORY)",
    )


def add_minify_arguments(minify: argparse.ArgumentParser) -> None:
    add_source_arguments(minify)
    minify.add_argument(
        "--redraw",
        action="store_true",
        help="redraw tensor inputs by shape, dtype and range (default: the very values SOURCE makes, kept)",
    )
    minify.add_argument(
        "--path", choices=sorted(PATHS), help="the compile path (default: the one SOURCE names, else the first that fails)"
    )
    minify.add_argument("--placement", metavar="NAME", help="the Thunder to fail under (default: SOURCE's, else stock)")
    what = minify.add_mutually_exclusive_group()
    what.add_argument(
        "--any-exception",
        action="store_const",
        const=Criterion.EXCEPTION,
        dest="criterion",
        help="keep any exception Thunder raises",
    )
    what.add_argument("--match", metavar="REGEX", help="keep a failure whose message matches REGEX")
    what.add_argument(
        "--mismatch",
        action="store_const",
        const=Criterion.MISMATCH,
        dest="criterion",
        help="keep any value differing from eager's",
    )
    what.add_argument(
        "--split",
        action="store_const",
        const=Criterion.SPLIT,
        dest="criterion",
        help="keep a thunderfx split because Thunder raised",
    )
    minify.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        help="each candidate's time limit (default: 4 times the original's, at least 20 s); a candidate past it does not fail",
    )
    minify.add_argument(
        "--out", default="minified", metavar="DIR", help="where to write repro.py and issue.md (default: minified)"
    )


def add_bisect_arguments(bisect: argparse.ArgumentParser) -> None:
    add_source_arguments(bisect)
    bisect.add_argument(
        "--placement", metavar="NAME", help="the placement whose decisions to bisect (default: SOURCE's, else symcall)"
    )
    bisect.add_argument(
        "--path",
        choices=sorted(PATHS),
        action="append",
        help="compile path (repeatable; default: the one SOURCE names, else every default path)",
    )
    bisect.add_argument("--timeout", type=float, default=120.0, help="seconds one run may take before it counts as hung")


def add_report_arguments(report: argparse.ArgumentParser) -> None:
    report.add_argument("folder", metavar="DIR", help="findings folder (reads DIR/summary.json and DIR/*/bug.json)")
    report.add_argument("--output", metavar="FILE", help=f"where to write the page (default: DIR/{REPORT_FILE})")


def add_ops_arguments(ops: argparse.ArgumentParser) -> None:
    ops.add_argument(
        "--findings",
        default=DEFAULT_FINDINGS_DIR,
        metavar="DIR",
        help="findings directory of the campaign whose op counts to show (reads DIR/summary.json; default: ./fuzzdce-findings)",
    )


def list_ops(findings: str) -> int:
    """``fuzzdce ops``: one line per catalog entry (op, family, dtypes, Thunder support, campaign count)."""
    summary = Path(findings) / SUMMARY_FILE
    run = read_summary(Path(findings))
    counts = None if run is None else (run.op_counts or {})
    print(f"{'op':<24} {'family':<11} {'thunder':<9} {'count':>6}  dtypes")
    for spec in CATALOG:
        count = "-" if counts is None else str(counts.get(spec.name, 0))
        print(f"{spec.name:<24} {spec.family:<11} {thunder_support(spec):<9} {count:>6}  {','.join(spec.dtypes)}")
    native = {s.torch_name for s in CATALOG if thunder_support(s) == "native"}
    where = f"counts from {summary}" if counts is not None else f"no campaign results in {summary} (run `fuzzdce run` first)"
    print(f"{len(CATALOG)} entries, {len(native)} distinct torch ops with native Thunder symbols; {where}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # A time budget counts from when the command started: the process's start (its imports too) for
    # the command line itself, now for a caller in this process (which may have run for hours).
    args.started_at = process_started_at() if argv is None else time.time()
    if argv is None:  # the command line itself (not a caller in this process): may start afresh
        try:
            start_under_thunder(args)
        except UsageError as e:
            print(f"fuzzdce: error: {e}", file=sys.stderr)
            return 2
        same_hash_seed_everywhere(args)
    elif getattr(args, "thunder", None):
        print("fuzzdce: error: --thunder starts fuzzdce again: give it on the command line", file=sys.stderr)
        return 2
    quiet_library_warnings()
    try:
        return SUBCOMMANDS_BY_NAME[args.command].run(args)
    except UsageError as e:
        print(f"fuzzdce: error: {e}", file=sys.stderr)
        return 2
    except HarnessError as e:  # fuzzdce's own error: the campaign stopped, nothing of it is a Thunder bug
        print(f"fuzzdce: {e}", file=sys.stderr)
        return 3
    except Exception as e:  # escaped a subcommand: fuzzdce's own error too (Thunder's errors are recorded, never raised)
        traceback.print_exc(file=sys.stderr)
        print(f"fuzzdce: {harness_message(f'fuzzdce {args.command}', unexpected_exception(e))}", file=sys.stderr)
        return 3


def config_from(args) -> CampaignConfig:
    """The campaign ``fuzzdce run`` was asked for; UsageError on a bad placement, profile or file."""
    placements = chosen_placements(args)
    for name in placements:
        resolve(name)  # unknown or unimportable: one line naming the choices, now
    settings = {flag.setting: flag.value(args) for flag in RUN_FLAGS if flag.setting is not None}
    config = CampaignConfig.for_profile(args.profile, placements=placements, reference=chosen_reference(args), **settings)
    config.settings()  # validates the database spec now
    config.scope.check_runnable()  # a path this machine cannot run: exit 2 now, saying why
    shard = resolve_shard(args.shard, args.shard_count, os.environ)
    return config.for_shard(*shard) if shard else config.with_seed()


def chosen_placements(args) -> tuple[str, ...]:
    """``--placement``s then ``--build``s; without either, the built-in ones; with builds only,
    stock and the builds (a branch against main)."""
    builds = build_arguments(args)
    if args.placement:
        return (*args.placement, *builds)
    return (STOCK, *builds) if builds else DEFAULT_PLACEMENTS


def chosen_reference(args) -> str:
    """``--reference``; else, with ``--against REF``, the first REF (your branch is under test); else stock."""
    if getattr(args, "reference", None):
        return args.reference
    against = getattr(args, "against", ())
    return against_name(against[0]) if against else STOCK


# Set in the process ``--thunder TARGET`` started again: the target, so that it starts once.
THUNDER_TARGET_ENV = "FUZZDCE_THUNDER"


def start_under_thunder(args) -> None:
    """``--thunder TARGET``: start again with TARGET's Thunder first on ``PYTHONPATH`` (before this
    fuzzdce, before the venv's Thunder), so that it is stock in this process, its lanes and workers;
    a git ref or an archive is extracted first (``builds.parse_build``). Returns in the process that
    already runs under it, after checking that it imports that Thunder."""
    target = getattr(args, "thunder", None)
    if not target:
        return
    try:
        _, build = parse_build(f"stock={target}")
    except UsageError as e:
        why = str(e).removeprefix("build 'stock': ")
        raise UsageError(f"--thunder {target}: {why}") from None
    if not build.path or build.python != sys.executable:
        raise UsageError(f"--thunder {target}: give a directory holding thunder/, git:REPO_DIR@REF or a .tar.gz")
    directory = Path(build.path[0])
    if os.environ.get(THUNDER_TARGET_ENV) == target:
        import thunder  # noqa: PLC0415 - the check is of what this process imports

        if Path(thunder.__file__).resolve().parent.parent != directory.resolve():
            raise UsageError(f"--thunder {target}: this process imports {thunder.__file__}, not {directory}/thunder")
        return
    entries = [str(directory), FUZZDCE_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    environment = {**os.environ, THUNDER_TARGET_ENV: target, "PYTHONPATH": os.pathsep.join(entries)}
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], environment)


def same_hash_seed_everywhere(args) -> None:
    """With another Thunder build, start again with ``PYTHONHASHSEED=0`` unless it is set.

    Thunder's traces depend on the hash seed (set iteration: ``update_aliases`` lists its arguments in
    another order under another seed), and a build's jobs run in a process of its own: stock here and
    the build there must hash alike, or their traces differ for no reason of the build's and DCE
    activity and ``dce-sound`` compare different traces. Lanes, workers and build workers inherit the
    environment, so one seed set here holds in every process of the campaign.
    """
    builds = [
        *getattr(args, "build", ()),
        *getattr(args, "against", ()),
        *(p for p in getattr(args, "placement", None) or () if "=" in p),
    ]
    if builds and "PYTHONHASHSEED" not in os.environ:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONHASHSEED": "0"})


def build_arguments(args) -> tuple[str, ...]:
    """``--build``s, then ``--against``s as the builds they stand for."""
    return (*args.build, *(against_spec(ref) for ref in getattr(args, "against", ())))


def doctor_main(args) -> int:
    """``fuzzdce doctor``: this environment, then each ``--build``'s as its own process sees it."""
    print(diagnosis())
    for spec in build_arguments(args):
        placement = resolve(spec)
        worker = BuildWorker(placement.build)
        try:
            text = worker.doctor()
        finally:
            worker.close()
        print(f"\nbuild {placement.name} ({placement.build}):")
        print("\n".join(f"  {line}" for line in text.splitlines()))
    return 0


def run_main(args) -> int:
    """``fuzzdce run``: 1 when any regression is not in the known file, else 0."""
    config = config_from(args).replaced(started_at=args.started_at)
    # SIGTERM stops a campaign like Ctrl-C: cleanly, with every finding already on disk.
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)
    if args.in_process or args.jobs == 1:
        # Thunder's work runs in a sandboxed worker, as a lane's does: an abort or a hang in torch or
        # Thunder is a crash or timeout finding there, and the campaign goes on. In this process only
        # when asked for by name (a debugger's breakpoints reach it).
        campaign = Campaign(config if args.in_process else config.replaced(sandbox=True))
        campaign.run()
    else:
        campaign = run_lanes(config, args.jobs)
    folder = campaign.folder.root if campaign.folder is not None else None
    print(render(campaign.summary(), folder, verbose=args.verbose))
    if campaign.folder is not None:
        print(f"HTML report (bugs, charts over time, coverage): fuzzdce report {args.findings}")
    if campaign.interrupted:
        print("fuzzdce: interrupted; the bugs above are complete up to that point", file=sys.stderr)
    return 1 if any(b.reportable for b in campaign.ledger.bugs()) else 0


def merge_main(args) -> int:
    """``fuzzdce merge``: 1 when any merged regression is not known, else 0."""
    merged = merge(args.out, args.inputs, load_known(args.known) if args.known else {})
    print(render(merged.summary, merged.out))
    if args.markdown:
        Path(args.markdown).write_text(merge_markdown(merged))
    return merged.exit_code


def replay_main(args) -> int:
    """``fuzzdce replay``: 1 when any bug still fails (itself or differently) under some placement,
    else 4 when any could not be verified, else 0."""
    names = [*(args.placement or []), *build_arguments(args)]
    placements = [resolve(name) for name in names] if names else None
    if Path(args.target).exists():
        folders = bug_folders(args.target)
    else:
        folders = [find_bug(args.findings, args.target)]
    if not folders:
        raise UsageError(f"no bugs under {args.target} (a bug folder holds bug.json)")
    results = [replay_bug(folder, placements, timeout=args.timeout) for folder in folders]
    for result in results:
        print(result.line())
    still = sum(r.still_fails for r in results)
    differently = sum(r.fails_differently and not r.still_fails for r in results)
    unverified = sum(r.result == Reproduced.NOT_VERIFIED for r in results)
    print(
        f"fuzzdce replay: {still} of {len(results)} bugs still fail"
        + (f", {differently} fail differently" if differently else "")
        + (f", {unverified} not verified (a check could not be made here: not fixed)" if unverified else "")
    )
    return int(overall([r.result for r in results]))


def report_main(args) -> int:
    """``fuzzdce report``: the folder's text report printed, its HTML page written, and where."""
    page = write_report(args.folder, args.output)  # first: it says clearly when DIR is no findings folder
    print(render(read_results(Path(args.folder)), args.folder))
    print(f"fuzzdce: HTML report written to {page}")
    return 0


def issue_main(args) -> int:
    """``fuzzdce issue``: one bug's Markdown issue body."""
    folder = find_bug(args.findings, args.bug)
    print(script_of_folder(folder) if args.script else issue_markdown(folder), end="")
    return 0


def minify_main(args) -> int:
    """``fuzzdce minify``: the smallest program failing the same way, as a script and issue text; 0."""
    subject = read_subject(args.source, inputs=args.inputs, redraw=args.redraw)
    placement = resolve(args.placement or subject.placement or STOCK)
    criterion = Criterion.MATCH if args.match else (args.criterion or Criterion.SAME)
    try:
        pattern = re.compile(args.match) if args.match else None
    except re.error as e:
        raise UsageError(f"--match {args.match!r} is no regular expression: {e}") from e
    failure = Failure(criterion, target=subject.target if criterion == Criterion.SAME else None, pattern=pattern)
    for note in subject.notes:
        print(f"fuzzdce minify: {note}", file=sys.stderr)
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    result = run_minify(subject.program, failure, placement, path=args.path or subject.path, timeout=args.timeout, log=log)
    script, issue = minify_outputs(result, subject.origin)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "repro.py").write_text(script)
    (out / "issue.md").write_text(issue)
    print(issue)
    print(f"fuzzdce minify: wrote {out / 'repro.py'} and {out / 'issue.md'}")
    print(result.line())
    return 0


def bisect_main(args) -> int:
    """``fuzzdce bisect``: for each failure the placement shows on SOURCE's program and stock does
    not, the placement's call that breaks it, in words; 1 when a failure was found, else 0."""
    subject = read_subject(args.source, inputs=args.inputs)
    placement = resolve(args.placement or subject.placement or "symcall")
    paths = args.path or ([subject.path] if subject.path else list(DEFAULT_PATHS))
    evaluator = Evaluator(SandboxedJobs(name="bisect worker"))
    try:

        def evaluate(program, placements, paths, timeout=args.timeout, **options):
            return evaluator(program, placements, paths=paths, timeout=timeout, **options)

        failures = regressions(evaluate, subject.program, placement, PLACEMENTS[STOCK], paths)
        if not failures:
            print(f"fuzzdce bisect: {placement.name} shows no failure on {', '.join(paths)} that stock passes")
            return 0
        # One decision is said once, under every failure it causes.
        found = [(failure, bisect_failure(evaluate, subject.program, placement, failure)) for failure in failures]
        for group in by_decision(found, lambda pair: pair[1].identity):
            print("\n".join(f"--- {failure}" for failure, _ in group))
            print("\n".join("    " + line for line in describe(group[0][1], ORACLES)))
        return 1
    finally:
        evaluator.close()


def minify_outputs(result: Result, origin: str) -> tuple[str, str]:
    """The minified program's standalone script and issue text."""
    violation = result.violation
    oracle, message = (violation.oracle, violation.message) if violation is not None else ("", "")
    script = verified(minified_case(result.program, result.path, violation, result.placement), result.placement)
    issue = minified_issue(
        result.program,
        result.path,
        oracle=oracle,
        message=message,
        script=script,
        origin=origin,
        line=result.line(),
        placement=result.placement,
    )
    return script, issue


def ops_main(args) -> int:
    """``fuzzdce ops``: the catalog, with the last campaign's counts."""
    return list_ops(args.findings)


@dataclass(frozen=True)
class Subcommand:
    """One ``fuzzdce`` subcommand: its name and help, what adds its arguments to its parser, and
    what runs it on the parsed arguments (returning the exit code)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# In the order ``fuzzdce --help`` lists them.
SUBCOMMANDS = (
    Subcommand("run", "run a fuzzing campaign", add_run_arguments, run_main),
    Subcommand("replay", "rerun saved bugs under every placement; say which still fail", add_replay_arguments, replay_main),
    Subcommand(
        "merge",
        "join findings folders (shards of one campaign, separate runs, merged folders) into one; exit 1 on any new regression",
        add_merge_arguments,
        merge_main,
    ),
    Subcommand(
        "issue", "print a Markdown issue body for one bug, ready to paste into Thunder's tracker", add_issue_arguments, issue_main
    ),
    Subcommand(
        "minify",
        "reduce a failing program (a Thunder report script, a function and its inputs, a bug) to a minimal standalone script",
        add_minify_arguments,
        minify_main,
    ),
    Subcommand(
        "bisect",
        "name the placement's DCE decision that breaks a failing program: its calls gated one by one and bisected",
        add_bisect_arguments,
        bisect_main,
    ),
    Subcommand("ops", "list the op catalog and how often the last campaign exercised each op", add_ops_arguments, ops_main),
    Subcommand(
        "report",
        "print a findings folder's report and write one self-contained HTML page of it: bugs, charts over time, coverage",
        add_report_arguments,
        report_main,
    ),
    Subcommand(
        "doctor",
        "print python, torch and Thunder (with its path) and what each built-in placement means here",
        add_build_argument,
        doctor_main,
    ),
)
SUBCOMMANDS_BY_NAME = {command.name: command for command in SUBCOMMANDS}


def parser() -> argparse.ArgumentParser:
    """The ``fuzzdce`` parser: one subparser per entry of ``SUBCOMMANDS``."""
    top = argparse.ArgumentParser(prog="fuzzdce", description="Differential fuzzing of Thunder's DCE placements.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_arguments(commands.add_parser(command.name, help=command.help))
    return top


if __name__ == "__main__":
    sys.exit(main())

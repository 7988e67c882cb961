"""The ``fuzzdce`` command line."""

from __future__ import annotations

import argparse
import sys

from fuzzdce.execution import DEFAULT_PATHS, PATHS
from fuzzdce.placements import DEFAULT_PLACEMENTS, PLACEMENTS, UsageError, resolve
from fuzzdce.store import DEFAULT_FINDINGS_DIR


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def seed_value(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"seed must be in [0, 2**32), got {text!r}")
    return value


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="fuzzdce", description="Differential fuzzing of Thunder's DCE placements.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser("run", help="run a fuzzing campaign")
    run.add_argument(
        "--placement",
        action="append",
        metavar="NAME",
        help=f"placement to fuzz (repeatable): one of {', '.join(PLACEMENTS)}, or package.module:attr "
        f"naming a zero-argument callable returning a context manager (default: all built-in)",
    )
    run.add_argument(
        "--path",
        action="append",
        choices=list(PATHS),
        help=f"compile path (repeatable; default: {', '.join(DEFAULT_PATHS)})",
    )
    run.add_argument("--max-examples", type=positive_int, default=60, help="programs per placement (default: 60)")
    run.add_argument("--seed", type=seed_value, help="Hypothesis seed; printed at start when not given")
    run.add_argument("--timeout", type=positive_int, default=60, help="seconds per compile path (default: 60)")
    run.add_argument("--time-budget", type=positive_int, help="stop generating after this many seconds")
    run.add_argument(
        "--findings",
        metavar="DIR",
        default=DEFAULT_FINDINGS_DIR,
        help=f"folder for findings, written as they appear (default: ./{DEFAULT_FINDINGS_DIR}; "
        "what an earlier run wrote there is replaced)",
    )
    run.add_argument(
        "--known",
        metavar="FILE",
        help='known-findings JSON file: [{"signature": SIGNATURE_OR_ID, "reason": WHY}, ...]; '
        "matching findings are reported as known and do not make the run exit 1",
    )
    add_replay_parser(commands)
    return top


def add_replay_parser(commands) -> None:
    replay = commands.add_parser("replay", help="rerun saved findings under every placement; say which still fail")
    replay.add_argument("target", metavar="PATH", help="a finding folder, or a findings folder holding several")
    replay.add_argument(
        "--placement",
        action="append",
        metavar="NAME",
        help="placement to replay under (repeatable; default: every built-in one and those the finding was seen under)",
    )
    replay.add_argument("--timeout", type=positive_int, default=60, help="seconds per compile path (default: 60)")


def quiet_library_warnings() -> None:
    """Programs trigger torch and Thunder warnings by the thousand; they are not findings."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("torch").setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quiet_library_warnings()
    try:
        if args.command == "replay":
            return replay_main(args)
        return run_main(args)
    except UsageError as e:
        print(f"fuzzdce: error: {e}", file=sys.stderr)
        return 2


def run_main(args) -> int:
    """``fuzzdce run``: 1 when any placement-induced finding is not in the known file, else 0."""
    from fuzzdce.store import load_known

    placements = [resolve(name) for name in (args.placement or DEFAULT_PLACEMENTS)]
    known = load_known(args.known) if args.known else {}
    from fuzzdce.campaign import Campaign
    from fuzzdce.report import render

    campaign = Campaign(
        placements,
        paths=args.path or DEFAULT_PATHS,
        max_examples=args.max_examples,
        seed=args.seed,
        timeout=args.timeout,
        time_budget=args.time_budget,
        findings_dir=args.findings,
        known=known,
    )
    store = campaign.run()
    print(render(campaign))
    return 1 if any(f.reportable for f in store) else 0


def replay_main(args) -> int:
    """``fuzzdce replay``: 1 when any finding still fails under some placement, else 0."""
    from fuzzdce.replay import replay_finding
    from fuzzdce.store import finding_folders

    placements = [resolve(name) for name in args.placement] if args.placement else None
    folders = finding_folders(args.target)
    if not folders:
        raise UsageError(f"no findings under {args.target} (a finding folder holds finding.json)")
    results = [replay_finding(folder, placements, timeout=args.timeout) for folder in folders]
    for result in results:
        print(result.line())
    still = sum(r.still_fails for r in results)
    print(f"fuzzdce replay: {still} of {len(results)} findings still fail")
    return 1 if still else 0


if __name__ == "__main__":
    sys.exit(main())

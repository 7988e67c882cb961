"""The ``fuzzdce`` command line."""

from __future__ import annotations

import argparse
import sys

from fuzzdce.execution import DEFAULT_PATHS, PATHS
from fuzzdce.placements import DEFAULT_PLACEMENTS, PLACEMENTS, UsageError, resolve


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
    ops = commands.add_parser("ops", help="list the op catalog and how often the last campaign exercised each op")
    ops.add_argument(
        "--findings",
        default="fuzzdce-findings",
        metavar="DIR",
        help="findings directory of the campaign whose op counts to show (reads DIR/summary.json; default: ./fuzzdce-findings)",
    )
    return top


def list_ops(findings: str) -> int:
    """``fuzzdce ops``: one line per catalog entry (op, family, dtypes, Thunder support, campaign count)."""
    import json
    from pathlib import Path

    from fuzzdce.strategies import CATALOG, thunder_support

    summary = Path(findings) / "summary.json"
    counts = json.loads(summary.read_text()).get("op_counts", {}) if summary.is_file() else None
    print(f"{'op':<24} {'family':<11} {'thunder':<9} {'count':>6}  dtypes")
    for spec in CATALOG:
        count = "-" if counts is None else str(counts.get(spec.name, 0))
        print(f"{spec.name:<24} {spec.family:<11} {thunder_support(spec):<9} {count:>6}  {','.join(spec.dtypes)}")
    native = {s.torch_name for s in CATALOG if thunder_support(s) == "native"}
    where = f"counts from {summary}" if counts is not None else f"no campaign results in {summary} (run `fuzzdce run` first)"
    print(f"{len(CATALOG)} entries, {len(native)} distinct torch ops with native Thunder symbols; {where}")
    return 0


def quiet_library_warnings() -> None:
    """Programs trigger torch and Thunder warnings by the thousand; they are not findings."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger("torch").setLevel(logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    quiet_library_warnings()
    if args.command == "ops":
        return list_ops(args.findings)
    try:
        placements = [resolve(name) for name in (args.placement or DEFAULT_PLACEMENTS)]
    except UsageError as e:
        print(f"fuzzdce: error: {e}", file=sys.stderr)
        return 2
    from fuzzdce.campaign import Campaign
    from fuzzdce.report import render

    campaign = Campaign(
        placements,
        paths=args.path or DEFAULT_PATHS,
        max_examples=args.max_examples,
        seed=args.seed,
        timeout=args.timeout,
        time_budget=args.time_budget,
    )
    store = campaign.run()
    print(render(store, [p.name for p in placements]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

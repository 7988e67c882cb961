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
    return top


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

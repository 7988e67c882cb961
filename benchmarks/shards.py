"""Shards benchmark: do two shards merged list the bugs one campaign of the same programs lists?

Runs shards 0/2 and 1/2 of one campaign with real Thunder (each its own seed, ``--findings`` folder
and time budget, one after the other in this process), then joins their findings two ways:
- as one campaign of the same programs: both shards' stores folded into one (``FindingStore.merge``,
  as a campaign folds its lanes') and joined (``FindingStore.bugs``);
- as ``fuzzdce merge`` of the two findings folders, from the records alone.
Prints both bug lists' sizes and every difference: a bug id one side has and the other lacks, with
its members (path, oracle, fault), and a finding the two sides put in different bugs. No output
under "differences" means the same partition and the same ids.

What this compares is the join, not the search: the shards' own shrinks and settled programs are
each shard's (a campaign of both would also evaluate one shard's settled programs against the
other's causes), so both sides join the same evidence.

Usage: PYTHONPATH=. python benchmarks/shards.py [--seconds 90] [--seed 5] [--placement stock --placement symcall]
       [--path jit ...] [--out DIR]
A quick check: --seconds 20 --path jit (a few minutes with shrinking); the issue's: --seconds 90 on a quiet machine.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fuzzdce.core.findings import FindingStore
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.merge import merge


def run_shard(args, shard: int, out: Path) -> FindingStore:
    """Shard ``shard`` of 2 of the campaign, its findings in ``out``/shard-N: its store."""
    config = CampaignConfig.of(
        tuple(args.placement), tuple(args.path), seed=args.seed, time_budget=args.seconds, max_examples=10**6,
        findings_dir=str(out / f"shard-{shard}"), database="none", profile="ci",
    ).for_shard(shard, 2)  # fmt: skip
    started = time.monotonic()
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    print(f"shard {shard}/2: {campaign.stats.programs} programs, {len(campaign.store)} findings, "
          f"{len(campaign.store.bugs())} bugs, {time.monotonic() - started:.0f} s")  # fmt: skip
    return campaign.store


def described(member) -> str:
    fault = member.fault_text if hasattr(member, "fault_text") else str(member.fault)
    path = member.path if hasattr(member, "path") else member.violation.path
    oracle = member.oracle if hasattr(member, "oracle") else member.violation.oracle
    return f"{path} / {oracle}: {fault[:140]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="time budget of each shard")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--placement", action="append", default=None)
    parser.add_argument("--path", action="append", default=None)
    parser.add_argument("--out", type=Path, default=None, help="where the shards' and the merged folders go")
    args = parser.parse_args()
    args.placement = args.placement or ["stock", "symcall"]
    if args.path is None:
        from fuzzdce.running.paths import DEFAULT_PATHS

        args.path = list(DEFAULT_PATHS)
    out = args.out or Path(tempfile.mkdtemp(prefix="fuzzdce-shards-"))
    stores = [run_shard(args, shard, out) for shard in range(2)]

    campaign = FindingStore()
    for store in stores:
        campaign.merge(store)
    one = {bug.id: {f.id: described(f) for f in bug.members} for bug in campaign.bugs()}
    merged = merge(out / "merged", [out / "shard-0", out / "shard-1"])
    two = {bug.id: {m.id: described(m) for m in bug.members} for bug in merged.bugs}

    print(f"one campaign: {len(one)} bugs, {sum(map(len, one.values()))} findings; "
          f"two shards merged: {len(two)} bugs, {sum(map(len, two.values()))} findings ({out})")  # fmt: skip
    print("differences:")
    differences = 0
    for side, mine, theirs in (("only in the campaign", one, two), ("only in the merge", two, one)):
        for bug_id in sorted(mine.keys() - theirs.keys()):
            differences += 1
            print(f"  {side}: bug {bug_id}")
            for line in sorted(mine[bug_id].values()):
                print(f"    {line}")
    bug_of_one = {f: b for b, members in one.items() for f in members}
    bug_of_two = {f: b for b, members in two.items() for f in members}
    for finding in sorted(bug_of_one.keys() | bug_of_two.keys()):
        if bug_of_one.get(finding) != bug_of_two.get(finding):
            differences += 1
            print(
                f"  finding {finding}: in bug {bug_of_one.get(finding)} of the campaign, {bug_of_two.get(finding)} of the merge"
            )
    print(f"{differences} differences")
    return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A campaign's settings, as plain data: the command line, each lane (a separate process) and
``fuzz_test`` build one ``CampaignConfig``, and ``Campaign`` is made from it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from hypothesis import settings as Settings

from fuzzdce import profiles
from fuzzdce.errors import UsageError
from fuzzdce.model import Placement
from fuzzdce.paths import DEFAULT_PATHS, PATHS
from fuzzdce.placements import DEFAULT_PLACEMENTS, resolve
from fuzzdce.strategies import BY_NAME, CATALOG, OpSpec
from fuzzdce.workers import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_RECYCLE_JOBS, DEFAULT_RECYCLE_RSS_MB

# A lane starts near 660 MB resident (torch and Thunder imported) and grows 3-5 MB a minute (on 2
# shared cores; the issue saw 10 on an idle machine): past 1024 MB, after an hour or more, it hands
# over to a fresh process after its current program: about 10 s of imports, a fraction of a percent.
DEFAULT_RECYCLE_LANE_RSS_MB = 1024


def derive_seed(seed: int, *parts: object) -> int:
    """A 32-bit seed for one part of a campaign (a shard, a lane's next process, a round), derived
    from the campaign's ``seed``: different parts get unrelated seeds, the same parts the same one."""
    return random.Random("/".join(map(str, (seed, *parts)))).getrandbits(32)


@dataclass(frozen=True)
class CampaignConfig:
    """What to fuzz, how much, and where results go.

    ``max_examples`` None means the Hypothesis settings' (the loaded fuzz profile's); ``profile``
    None means Hypothesis's settings as currently loaded (in pytest, the plugin's profile).
    """

    placements: tuple[str, ...] = DEFAULT_PLACEMENTS
    paths: tuple[str, ...] = DEFAULT_PATHS
    max_examples: int | None = None
    seed: int | None = None  # None: a random one, printed at start
    timeout: float | None = 60.0  # seconds per compile path
    time_budget: float | None = None  # seconds of generation; shrinking and grouping get half as long again
    findings_dir: str | None = None
    known: Mapping[str, str] = field(default_factory=dict)  # signature or id -> why it is suppressed
    profile: str | None = None
    database: str | None = None  # example database spec (profiles.database_from)
    sandbox: bool = False  # run Thunder's work in a child process with the limits below
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB
    # A sandboxed worker's child is replaced, between jobs, after this many jobs or past this
    # resident size, whichever comes first (0: never): its memory grows over a long campaign.
    recycle_jobs: int = DEFAULT_RECYCLE_JOBS
    recycle_rss_mb: int = DEFAULT_RECYCLE_RSS_MB
    # A lane (a process of its own) past this resident size stops after its current program and a fresh
    # process carries on with what is left of its programs and time (0: never).
    recycle_lane_rss_mb: int = DEFAULT_RECYCLE_LANE_RSS_MB
    progress_every: float = 10.0  # seconds between progress lines
    confirm: bool = True  # replay each finding's smallest program at the end
    clear_findings: bool = True  # remove an earlier campaign's findings from findings_dir first
    ops: tuple[str, ...] = ()  # catalog entries programs are drawn from (empty: the whole catalog)
    shrink_baseline: bool = True  # baseline bugs fail the Hypothesis test too, so they are shrunk
    # Steer generation to what the campaign has not tested yet (steering.Steering): rounds of
    # steering.ROUND programs with weights from what was drawn, targets on DCE activity and novelty.
    # Off by default: a steered round's examples replay exactly only under the same weights.
    steer: bool = False
    # Shard ``shard`` of ``shards`` (0-based) of the campaign seeded ``campaign_seed``: ``for_shard``
    # sets all three. Unsharded runs are shard 0 of 1, and their campaign seed is their seed.
    shard: int = 0
    shards: int = 1
    campaign_seed: int | None = None
    # Wall-clock time (time.time()) the campaign's clock starts from; None: when it runs. A lanes run
    # gives its lanes the parent's, so their findings' times and timelines compare.
    started_at: float | None = None

    def __post_init__(self) -> None:
        unknown = [p for p in self.paths if p not in PATHS]
        if unknown:
            raise UsageError(f"unknown path {unknown[0]!r}: choose from {', '.join(PATHS)}")
        unknown = [op for op in self.ops if op not in BY_NAME]
        if unknown:
            raise UsageError(f"unknown op {unknown[0]!r}: `fuzzdce ops` lists the catalog's entries")

    def catalog(self) -> tuple[OpSpec, ...]:
        """The catalog entries programs are drawn from."""
        return tuple(BY_NAME[op] for op in self.ops) if self.ops else CATALOG

    @classmethod
    def for_profile(cls, profile: str | None = None, **overrides) -> CampaignConfig:
        """A configuration with the fuzz profile's defaults (programs, time budget) where not overridden."""
        name = profile or profiles.default_profile()
        profiles.check_name(name)
        overrides = {k: v for k, v in overrides.items() if v is not None}
        overrides.setdefault("max_examples", profiles.PROFILE_EXAMPLES[name])
        overrides.setdefault("time_budget", profiles.PROFILE_TIME_BUDGET[name])
        return cls(profile=name, **overrides)

    def with_seed(self) -> CampaignConfig:
        """This configuration with a seed drawn if it has none (so lanes and reruns can share it)."""
        return self if self.seed is not None else dataclasses.replace(self, seed=random.randrange(2**32))

    def lane(self, index: int) -> CampaignConfig:
        """Lane ``index`` of a parallel campaign: seed + index, sandboxed, findings confirmed after merging."""
        seed = None if self.seed is None else self.seed + index
        return dataclasses.replace(
            self, seed=seed, campaign_seed=self.root_seed, sandbox=True, confirm=False, clear_findings=False
        )

    def for_shard(self, shard: int, shards: int) -> CampaignConfig:
        """Shard ``shard`` of ``shards`` of this campaign: a seed derived from the campaign's (its lanes'
        seeds follow from it), so shards never repeat one another's programs and any shard reruns
        alone. Shard 0 of 1 is the campaign itself. Programs and time budget stay per lane, as unsharded."""
        if not 0 <= shard < shards:
            raise UsageError(f"--shard expects I/N with 0 <= I < N, got {shard}/{shards}")
        root = self.with_seed().root_seed
        seed = root if shards == 1 else derive_seed(root, "shard", shard, shards)
        return dataclasses.replace(self, seed=seed, shard=shard, shards=shards, campaign_seed=root)

    @property
    def root_seed(self) -> int | None:
        """The campaign's seed, which shards derive theirs from."""
        return self.campaign_seed if self.campaign_seed is not None else self.seed

    @property
    def shard_label(self) -> str:
        return f"{self.shard}/{self.shards}"

    @property
    def run_id(self) -> str | None:
        """This shard of this campaign, the same on every rerun: what ``fuzzdce merge`` counts once."""
        return None if self.root_seed is None else f"{self.root_seed}:{self.shard_label}"

    def restarted(self, restart: int, programs_left: int, seconds_left: float | None) -> CampaignConfig:
        """This lane's configuration for its ``restart``-th fresh process (after it was recycled):
        a seed of its own, and what is left of the lane's programs and time budget (both are the
        lane's as a whole, across its processes)."""
        seed = None if self.seed is None else derive_seed(self.seed, "restart", restart)
        return dataclasses.replace(self, seed=seed, max_examples=programs_left, time_budget=seconds_left)

    def resolved_placements(self) -> list[Placement]:
        return [resolve(name) for name in self.placements]

    def settings(self) -> Settings:
        """The Hypothesis settings to start from: the named profile (loaded), else the current ones."""
        if self.profile is None:
            return Settings()
        return profiles.load(self.profile, self.database)

    def examples(self, settings: Settings) -> int:
        return self.max_examples if self.max_examples is not None else settings.max_examples

"""A campaign's settings, as plain data: the command line, each lane (a separate process) and
``fuzz_test`` build one ``CampaignConfig``, and ``Campaign`` is made from it."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from hypothesis import settings as Settings

from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import STOCK, Placement
from fuzzdce.fuzzing import profiles
from fuzzdce.running.paths import DEFAULT_PATHS, PATHS
from fuzzdce.running.placements import DEFAULT_PLACEMENTS, resolve
from fuzzdce.running.workers import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_RECYCLE_JOBS, DEFAULT_RECYCLE_RSS_MB
from fuzzdce.strategies import BY_NAME, CATALOG, OpSpec
from fuzzdce.strategies.model_blocks import DEFAULT_BLOCK_RATE
from fuzzdce.strategies.opinfo import DEFAULT_OPINFO_RATE

# A lane's process starts with torch, Thunder and its OpInfos imported, and grows
# (``Campaign.should_pause``): once it has grown this much it hands over to a fresh process after its
# current program (which pays the imports again). Counted as growth, not size: what a process holds
# at its start is no leak and grows with what fuzzdce imports, so a fixed size drifts towards
# recycling every lane after each round.
DEFAULT_RECYCLE_LANE_GROWTH_MB = 1024


def derive_seed(seed: int, *parts: object) -> int:
    """A 32-bit seed for one part of a campaign (a shard, a lane's next process, a round), derived
    from the campaign's ``seed``: different parts get unrelated seeds, the same parts the same one."""
    return random.Random("/".join(map(str, (seed, *parts)))).getrandbits(32)


@dataclass(frozen=True)
class Scope:
    """What to run: the placements and paths, the catalog entries programs are drawn from, and how."""

    placements: tuple[str, ...] = DEFAULT_PLACEMENTS
    # The Thunder every other one is judged against (one of ``placements``, or stock): a finding it
    # does not show is a regression (``findings.verdict_of``).
    reference: str = STOCK
    paths: tuple[str, ...] = DEFAULT_PATHS
    ops: tuple[str, ...] = ()  # catalog entries programs are drawn from (empty: the whole catalog)
    shrink_baseline: bool = True  # baseline bugs fail the Hypothesis test too, so they are shrunk
    # Steer generation to what the campaign has not tested yet (steering.Steering): rounds of
    # steering.ROUND programs with weights from what was drawn, targets on DCE activity and novelty.
    # Off by default: a steered round's examples replay exactly only under the same weights.
    steer: bool = False
    # The share of programs holding one step drawn from Thunder's own OpInfos (``strategies.opinfo``),
    # where this Thunder ships them; 0: catalog programs only. None are drawn when ``ops`` names entries.
    opinfo_rate: float = DEFAULT_OPINFO_RATE
    # The share of programs drawn as a mutated block of the models Thunder ships
    # (``strategies.model_blocks``); 0: none. None are drawn when ``ops`` names entries.
    block_rate: float = DEFAULT_BLOCK_RATE

    def __post_init__(self) -> None:
        if not 0 <= self.opinfo_rate <= 1:
            raise UsageError(f"--opinfo-rate expects a share between 0 and 1, got {self.opinfo_rate}")
        if not 0 <= self.block_rate <= 1:
            raise UsageError(f"--block-rate expects a share between 0 and 1, got {self.block_rate}")
        unknown = [p for p in self.paths if p not in PATHS]
        if unknown:
            raise UsageError(f"unknown path {unknown[0]!r}: choose from {', '.join(PATHS)}")
        names = [p.split("=", 1)[0] for p in self.placements]  # a build's spec is NAME=TARGET
        if self.reference != STOCK and self.reference not in names:
            raise UsageError(f"--reference {self.reference!r} names none of the placements: {', '.join([STOCK, *names])}")
        unknown = [op for op in self.ops if op not in BY_NAME]
        if unknown:
            raise UsageError(f"unknown op {unknown[0]!r}: `fuzzdce ops` lists the catalog's entries")

    def check_runnable(self) -> None:
        """UsageError when a chosen path cannot run on this machine (no CUDA, an executor that does
        not load): said before the campaign starts, with why, rather than skipped program after
        program (``CompilePath.unavailable``; ``fuzzdce doctor`` lists every path)."""
        for name in self.paths:
            why = PATHS[name].unavailable()
            if why:
                runnable = ", ".join(p for p in DEFAULT_PATHS if p in PATHS) or "none"
                raise UsageError(f"--path {name} cannot run here: {why} (paths that run here: {runnable}; see `fuzzdce doctor`)")


@dataclass(frozen=True)
class Budget:
    """How much to run, and which seeds: programs, time, the Hypothesis profile, the shard.

    ``max_examples`` None means the Hypothesis settings' (the loaded fuzz profile's); ``profile``
    None means Hypothesis's settings as currently loaded (in pytest, the user's or ``--fuzz-profile``'s).
    """

    max_examples: int | None = None
    time_budget: float | None = None  # the campaign's wall time, split among its phases (time_plan.TimePlan)
    seed: int | None = None  # None: a random one, printed at start
    profile: str | None = None
    # Shard ``shard`` of ``shards`` (0-based) of the campaign seeded ``campaign_seed``: ``for_shard``
    # sets all three. Unsharded runs are shard 0 of 1, and their campaign seed is their seed.
    shard: int = 0
    shards: int = 1
    campaign_seed: int | None = None
    # Wall-clock time (time.time()) the campaign's clock starts from; None: when it runs. A lanes run
    # gives its lanes the parent's, so their findings' times and timelines compare.
    started_at: float | None = None
    # Lane ``lane`` of ``lanes`` (a lone campaign is lane 0 of 1): lanes draw alike first (Hypothesis
    # starts from the simplest programs), so each shrinks its own share of the causes first
    # (``shrinking.Shrinker.ordered_causes``) rather than both the same ones.
    lane: int = 0
    lanes: int = 1


@dataclass(frozen=True)
class Workers:
    """Where Thunder's work runs and within what limits: timeouts, the sandbox, memory and recycling."""

    timeout: float | None = 60.0  # seconds per compile path
    sandbox: bool = False  # run Thunder's work in a child process with the limits below
    # Stock's compile serves a placement that changes nothing on a path (``running.compile_sharing``);
    # False: every placement compiles on every path.
    share_compiles: bool = True
    # Of each worker: its address space, or its resident size where it may use CUDA (which cannot
    # start under an address-space limit: ``workers.memory_limits``); None: no limit.
    memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB
    # A sandboxed worker's child is replaced, between jobs, after this many jobs or past this
    # resident size, whichever comes first (0: never): its memory grows over a long campaign.
    recycle_jobs: int = DEFAULT_RECYCLE_JOBS
    recycle_rss_mb: int = DEFAULT_RECYCLE_RSS_MB
    # A lane (a process of its own) grown this many MB resident since it started stops after its current
    # program and a fresh process carries on from its results with what is left of its programs and time (0: never).
    recycle_lane_growth_mb: int = DEFAULT_RECYCLE_LANE_GROWTH_MB


@dataclass(frozen=True)
class Output:
    """Where results go and what is done with them: the findings folder, known bugs, the example
    database, progress lines and the final confirmation."""

    findings_dir: str | None = None
    known: Mapping[str, str] = field(default_factory=dict)  # signature or id -> why it is suppressed
    database: str | None = None  # example database spec (profiles.database_from)
    progress_every: float = 10.0  # seconds between progress lines
    confirm: bool = True  # replay each finding's smallest program at the end
    # A lane: the merged campaign joins its findings into bugs and confirms what the lane did not
    # (a lane confirms its own bugs in shrinking's reserve for it, on its warm worker).
    joined_elsewhere: bool = False
    clear_findings: bool = True  # remove an earlier campaign's findings from findings_dir first
    # Whether findings_dir is this campaign's alone. A lane shares it with the other lanes while they
    # run: it rewrites its own bugs and removes no folder (another lane may be writing one it has not
    # seen); the merged campaign removes those of bugs merged away, once every lane has ended.
    owns_findings: bool = True


@dataclass(frozen=True)
class DriverSettings:
    """How the driver generates: from ``hypothesis`` settings, ``max_examples`` programs (evaluated
    in full) within ``time_budget`` seconds, rounds seeded from ``seed``, drawn from ``catalog``'s
    entries (and Thunder's OpInfos in a share ``opinfo_rate`` of programs), steered when ``steer``;
    progress every ``progress_every`` seconds."""

    hypothesis: Settings
    max_examples: int
    seed: int | None = None
    time_budget: float | None = None
    progress_every: float = 10.0
    catalog: tuple[OpSpec, ...] = CATALOG
    steer: bool = False
    opinfo_rate: float = 0.0  # the share of programs holding an OpInfo step (``strategies.opinfo``)
    block_rate: float = 0.0  # the share of programs that are a mutated model block (``strategies.model_blocks``)


@dataclass(frozen=True)
class RunIdentity:
    """Which run a campaign is, the same on every rerun: what its records and summary name it by
    (``run_id``), and the line saying how to rerun it (``seed_line``)."""

    seed: int | None
    campaign_seed: int | None  # the campaign's seed, which shards derive theirs from
    shard: int = 0
    shards: int = 1

    @property
    def shard_label(self) -> str:
        return f"{self.shard}/{self.shards}"

    @property
    def run_id(self) -> str | None:
        """This shard of this campaign, the same on every rerun: what ``fuzzdce merge`` counts once."""
        return None if self.campaign_seed is None else f"{self.campaign_seed}:{self.shard_label}"

    def seed_line(self) -> str:
        """The seed, and for a shard which one: enough to rerun exactly this run."""
        if self.shards == 1:
            return f"seed {self.seed} (rerun with --seed {self.seed})"
        return (
            f"shard {self.shard_label} of campaign seed {self.campaign_seed}, seed {self.seed} "
            f"(rerun with --seed {self.campaign_seed} --shard {self.shard_label})"
        )


@dataclass(frozen=True)
class ShrinkingSettings:
    """What the shrinking phase needs: whether baseline bugs are shrunk too, and which lane of how
    many this is (each lane shrinks its own share of the causes first)."""

    shrink_baseline: bool = True
    lane: int = 0
    lanes: int = 1


@dataclass(frozen=True)
class PhaseSettings:
    """A campaign's settings as its phases read them, built once from a ``CampaignConfig``
    (``CampaignConfig.phases``): which run it is and its clock; the Thunders and paths each program
    runs on; what generation draws (``generation``), where Thunder's work runs (``evaluation``),
    what shrinking takes first (``shrinking``), and where results go and how the campaign ends
    (``output``: confirming, the findings folder's ownership)."""

    run: RunIdentity
    started_at: float | None  # the campaign clock's start (time.time()); None: when it runs
    time_budget: float | None  # the campaign's wall time, split among its phases (time_plan.TimePlan)
    placements: tuple[str, ...]
    reference: str
    paths: tuple[str, ...]
    ops: tuple[str, ...]  # the catalog entries named (empty: the whole catalog), as the start line says
    generation: DriverSettings
    evaluation: Workers
    shrinking: ShrinkingSettings
    output: Output


GROUPS = {"scope": Scope, "budget": Budget, "workers": Workers, "output": Output}
# Each setting's group, by its name: what ``CampaignConfig.of`` and ``replaced`` sort flat settings by.
GROUP_OF = {f.name: group for group, kind in GROUPS.items() for f in dataclasses.fields(kind)}


def grouped(settings: Mapping[str, object]) -> dict[str, dict[str, object]]:
    """Flat settings (``seed=1, paths=...``) sorted into their groups; TypeError naming an unknown one."""
    unknown = [name for name in settings if name not in GROUP_OF]
    if unknown:
        raise TypeError(f"unknown campaign setting {unknown[0]!r}: choose from {', '.join(GROUP_OF)}")
    by_group: dict[str, dict[str, object]] = {group: {} for group in GROUPS}
    for name, value in settings.items():
        by_group[GROUP_OF[name]][name] = value
    return by_group


@dataclass(frozen=True)
class CampaignConfig:
    """What to fuzz (``scope``), how much (``budget``), where Thunder's work runs (``workers``) and
    where results go (``output``). ``CampaignConfig.of(placements, paths, seed=1, ...)`` builds one
    from flat settings, ``replaced(seed=2)`` changes some."""

    scope: Scope = field(default_factory=Scope)
    budget: Budget = field(default_factory=Budget)
    workers: Workers = field(default_factory=Workers)
    output: Output = field(default_factory=Output)

    @classmethod
    def of(
        cls, placements: tuple[str, ...] = DEFAULT_PLACEMENTS, paths: tuple[str, ...] = DEFAULT_PATHS, **settings
    ) -> CampaignConfig:
        """A configuration from flat settings, each put in its group (the groups' defaults elsewhere)."""
        by_group = grouped({"placements": tuple(placements), "paths": tuple(paths), **settings})
        return cls(**{group: GROUPS[group](**values) for group, values in by_group.items()})

    def replaced(self, **settings) -> CampaignConfig:
        """This configuration with the flat ``settings`` changed in their groups."""
        changes = {
            group: dataclasses.replace(getattr(self, group), **values) for group, values in grouped(settings).items() if values
        }
        return dataclasses.replace(self, **changes)

    def phases(self) -> PhaseSettings:
        """This configuration as the campaign's phases read it: each setting read here, once.
        Loads the named Hypothesis profile (``settings``)."""
        scope, budget = self.scope, self.budget
        hypothesis = self.settings()
        generation = DriverSettings(
            hypothesis=hypothesis,
            max_examples=budget.max_examples if budget.max_examples is not None else hypothesis.max_examples,
            seed=budget.seed,
            time_budget=budget.time_budget,
            progress_every=self.output.progress_every,
            catalog=tuple(BY_NAME[op] for op in scope.ops) if scope.ops else CATALOG,
            steer=scope.steer,
            opinfo_rate=0.0 if scope.ops else scope.opinfo_rate,  # none when ``--op`` names the entries to draw
            block_rate=0.0 if scope.ops else scope.block_rate,
        )
        return PhaseSettings(
            run=self.identity(),
            started_at=budget.started_at,
            time_budget=budget.time_budget,
            placements=scope.placements,
            reference=scope.reference,
            paths=scope.paths,
            ops=scope.ops,
            generation=generation,
            evaluation=self.workers,
            shrinking=ShrinkingSettings(scope.shrink_baseline, budget.lane, budget.lanes),
            output=self.output,
        )

    def identity(self) -> RunIdentity:
        """Which run this is (``RunIdentity``): its seed, its campaign's, and its shard."""
        return RunIdentity(self.budget.seed, self.root_seed, self.budget.shard, self.budget.shards)

    @classmethod
    def for_profile(cls, profile: str | None = None, **overrides) -> CampaignConfig:
        """A configuration with the fuzz profile's defaults (programs, time budget) where not overridden."""
        name = profile or profiles.default_profile()
        profiles.check_name(name)
        overrides = {k: v for k, v in overrides.items() if v is not None}
        overrides.setdefault("max_examples", profiles.PROFILE_EXAMPLES[name])
        overrides.setdefault("time_budget", profiles.PROFILE_TIME_BUDGET[name])
        return cls.of(profile=name, **overrides)

    def with_seed(self) -> CampaignConfig:
        """This configuration with a seed drawn if it has none (so lanes and reruns can share it)."""
        return self if self.budget.seed is not None else self.replaced(seed=random.randrange(2**32))

    def lane(self, index: int, lanes: int = 1) -> CampaignConfig:
        """Lane ``index`` of ``lanes`` of a parallel campaign: seed + index, sandboxed, its bugs
        confirmed by itself where time allows, joined (and the rest confirmed) after merging."""
        seed = None if self.budget.seed is None else self.budget.seed + index
        return self.replaced(
            seed=seed, campaign_seed=self.root_seed, sandbox=True, joined_elsewhere=True, clear_findings=False, owns_findings=False,
            lane=index, lanes=max(lanes, index + 1),
        )  # fmt: skip

    def for_shard(self, shard: int, shards: int) -> CampaignConfig:
        """Shard ``shard`` of ``shards`` of this campaign: a seed derived from the campaign's (its lanes'
        seeds follow from it), so shards never repeat one another's programs and any shard reruns
        alone. Shard 0 of 1 is the campaign itself. Programs and time budget stay per lane, as unsharded."""
        if not 0 <= shard < shards:
            raise UsageError(f"--shard expects I/N with 0 <= I < N, got {shard}/{shards}")
        root = self.with_seed().root_seed
        seed = root if shards == 1 else derive_seed(root, "shard", shard, shards)
        return self.replaced(seed=seed, shard=shard, shards=shards, campaign_seed=root)

    @property
    def root_seed(self) -> int | None:
        """The campaign's seed, which shards derive theirs from."""
        budget = self.budget
        return budget.campaign_seed if budget.campaign_seed is not None else budget.seed

    @property
    def run_id(self) -> str | None:
        """This shard of this campaign, the same on every rerun (``RunIdentity.run_id``)."""
        return self.identity().run_id

    def restarted(self, restart: int, programs_left: int) -> CampaignConfig:
        """This lane's configuration for its ``restart``-th fresh process (after it was recycled):
        a seed of its own and what is left of the lane's programs; its time budget and start stay
        (the time plan counts from the campaign's start)."""
        seed = None if self.budget.seed is None else derive_seed(self.budget.seed, "restart", restart)
        return self.replaced(seed=seed, max_examples=programs_left)

    def resolved_placements(self) -> list[Placement]:
        return [resolve(name) for name in self.scope.placements]

    def settings(self) -> Settings:
        """The Hypothesis settings to start from: the named profile (loaded), else the current ones."""
        if self.budget.profile is None:
            return Settings()
        return profiles.load(self.budget.profile, self.output.database)

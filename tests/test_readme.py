"""The README's sample report is what ``fuzzdce run`` prints, checked as doctests check output."""

import dataclasses
import doctest
import pathlib
import re

from builders import StandInEvaluator, split

from fuzzdce.core.decisions import Edit
from fuzzdce.core.faults import UNBOUND_NAME
from fuzzdce.core.model import Outcome
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.report import render

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"

# The exception Thunder 0.2.6's splitter reports for the symcall split (proxy names vary).
SPLIT_EXCEPTION = "'t1'"
SUB = Program((TensorInput((2, 3)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)


# The one edit of symcall's calls that a bisection finds in each program: its DCE raising on the
# splitter's malformed bound symbol (call 7; the others change nothing).
RAISE = Edit(
    7,
    "thunder.core.symbol.Symbol.__call__",
    "raise",
    "Symbol.__call__",
    symbol="sub",
    before="t1 = ltorch.sub(t0, t1, alpha=1)",
    error_type="KeyError",
    error_kind=UNBOUND_NAME,
    error_message="'t1'",
    error_frame="thunder/core/transform_common.py:dce",
    malformed=("output name t1 is also an input",),
    malformation_kinds=("reuses a name",),
)


def splits(placement) -> bool:
    """Symcall splits every program on both thunderfx paths, by its call ``RAISE`` (a gated symcall
    splits where that call is done as symcall does it); stock splits none."""
    if placement.gating is not None:  # a gated symcall
        return placement.gating.applies(RAISE.index)
    return placement.name == "symcall"


def shows(program, placement, paths):
    return [split(path, SPLIT_EXCEPTION, op="sub") for path in paths] if splits(placement) else []


def outcome(program, placement, path):
    gating = placement.gating
    split_here = splits(placement)
    described = gating is not None and gating.observes(RAISE.index)
    calls = 2 * RAISE.index if gating is not None else 0
    made = Outcome(path, placement.name, edits=[RAISE] if described else [], gated_calls=calls)
    # The splitter caught symcall's raise: its split is an edit (DCE activity).
    made.split_reasons = [SPLIT_EXCEPTION] if split_here else []
    made.dce_raise_edits = ["raise"] if split_here and placement.name != "stock" else []
    return made


def sample_report() -> str:
    def one_round(round_number):
        for seed in (1, 2, 3):  # three programs that differ in their inputs' values only
            campaign.observe(dataclasses.replace(SUB, seed=seed))

    config = CampaignConfig.of(("stock", "symcall"), ("thunderfx", "thunderfx-dynamic"), max_examples=3, seed=1)
    campaign = Campaign(config, evaluator=StandInEvaluator(shows, outcome), log=lambda line: None, run_round=one_round)
    campaign.run()
    return render(campaign.summary(), None)


def readme_sample() -> str:
    section = README.read_text().split("## What a campaign prints", 1)[1]
    return re.search(r"```\n(.*?)```", section, re.S).group(1)


def test_the_readme_sample_report_is_what_fuzzdce_prints():
    got = sample_report() + "\n"
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    want = readme_sample()
    assert checker.check_output(want, got, flags), checker.output_difference(doctest.Example("", want), got, flags)

"""The README's sample report is what ``fuzzdce run`` prints, checked as doctests check output."""

import dataclasses
import doctest
import pathlib
import re

from fuzzdce.core.model import Outcome, Violation
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.report import render
from fuzzdce.running.evaluate import Evaluation, Evaluator

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"

# What Thunder 0.2.6's splitter reports for the symcall split (node and proxy names vary).
SPLIT = Violation(
    "splits",
    "thunderfx",
    "EXCEPTION_META_THUNDER_OP: Failed while running meta for node with name: sub and target: "
    "<built-in method sub of type object>, see exception field -- exception: 't1'",
    "EXCEPTION_META_THUNDER_OP",
    key="EXCEPTION_META_THUNDER_OP: 't1'",
)
SUB = Program((TensorInput((2, 3)),), (Step("sub", "torch.sub({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)


class SymcallSplits(Evaluator):
    """Symcall splits every program on both thunderfx paths; stock splits none."""

    def __call__(self, program, placements, *, paths, timeout=None, alone=False, cache=True):
        names = list(dict.fromkeys(([] if alone else ["stock"]) + [p.name for p in placements]))
        shown = {n: [dataclasses.replace(SPLIT, path=path) for path in paths] if n == "symcall" else [] for n in names}
        return {n: Evaluation(program, n, Outcome("eager", "stock"), violations=shown[n]) for n in names}


def sample_report() -> str:
    def one_round(round_number):
        for seed in (1, 2, 3):  # three programs that differ in their inputs' values only
            campaign.observe(dataclasses.replace(SUB, seed=seed))

    config = CampaignConfig.of(("stock", "symcall"), ("thunderfx", "thunderfx-dynamic"), max_examples=3, seed=1)
    campaign = Campaign(config, evaluator=SymcallSplits(), log=lambda line: None, run_round=one_round)
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

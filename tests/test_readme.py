"""The README's sample report is what ``fuzzdce run`` prints, checked as doctests check output."""

import dataclasses
import doctest
import functools
import pathlib
import re

from fuzzdce.core.decisions import Edit
from fuzzdce.core.faults import UNBOUND_NAME
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


class SymcallSplits(Evaluator):
    """Symcall splits every program on both thunderfx paths, by its call ``RAISE`` (a gated symcall
    splits where that call is done as symcall does it); stock splits none."""

    def __call__(self, program, placements, *, paths, timeout=None, alone=False, cache=True, localise=True):
        names = list(dict.fromkeys(([] if alone else ["stock"]) + [p.name for p in placements]))
        gatings = {p.name: p.factory.args[1] for p in placements if isinstance(p.factory, functools.partial)}
        evaluations = {}
        for n in names:
            gating = gatings.get(n)
            splits = n == "symcall" or (gating is not None and gating.applies(RAISE.index))
            described = gating is not None and splits and (gating.record or gating.describe == RAISE.index)
            calls = 2 * RAISE.index if gating is not None else 0
            outcomes = {path: Outcome(path, n, edits=[RAISE] if described else [], gated_calls=calls) for path in paths}
            for outcome in outcomes.values():  # the splitter caught symcall's raise: its split is an edit (activity)
                outcome.split_reasons = [SPLIT.message] if splits else []
                outcome.dce_raise_edits = ["raise"] if splits and n != "stock" else []
            shown = [dataclasses.replace(SPLIT, path=path) for path in paths] if splits else []
            evaluations[n] = Evaluation(program, n, Outcome("eager", "stock"), outcomes, shown)
        return evaluations


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

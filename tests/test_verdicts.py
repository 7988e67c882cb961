"""What became of a failure the reference shows and a Thunder under test does not: fixed (that Thunder
ran the path cleanly, or a named edit of its made it go), masked (it failed the path first its own
way: a raise, a split), or gone, unexplained. Planted: a stock failure in a dead subsymbol (the
decomposition of ``neg`` reads a proxy no trace defines: check_trace's "unknown proxy"), and
placements and a build that remove it, raise on it, or fail the program another way."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import thunder
from builders import malformed, wrong_values
from builders import raised as raised_by_thunder

from fuzzdce.core.decisions import Bisection, Edit, Removed, describe
from fuzzdce.core.findings import FindingStore, triage
from fuzzdce.core.model import STOCK
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Standing, Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.issue import issue_markdown
from fuzzdce.results.records import BugRecord, gone_lines
from fuzzdce.results.report import render

NEG = Program((TensorInput((3,)),), (Step("neg", "torch.neg({0})", (Ref(0),)),), (1,), seed=1)


# --- triage, on synthetic violations ----------------------------------------------------------------


def unknown_proxy(path="jit"):
    return malformed(path, "unknown proxy", detail="check_trace: AssertionError: unknown proxy t0 is used")


def raised(path="jit"):
    return raised_by_thunder(path, "RuntimeError", "planted: DCE of neg cannot handle it", "thunder/core/symbol.py:__call__")


def wrong(path="jit"):
    return wrong_values(path)


def verdicts(by_placement):
    return {t.violation.oracle: t for t in triage(by_placement).values()}


def test_a_failure_hidden_behind_a_raise_of_the_thunder_under_test_is_masked_and_names_it():
    triaged = verdicts({STOCK: [unknown_proxy()], "symcall": [raised()]})
    assert triaged["names"].verdict == Verdict.MASKED and triaged["raises"].verdict == Verdict.REGRESSION
    store = FindingStore()
    for t in triaged.values():
        store.add(t.verdict, t.placements, t.violation, NEG, masked_by=t.masked_by, unclean=t.unclean)
    masked = next(b for b in store.bugs() if b.verdict == Verdict.MASKED)
    regression = next(b for b in store.bugs() if b.verdict == Verdict.REGRESSION)
    assert [m.bug for m in masked.masked_by] == [regression.id]
    # The masking failure is a typed record: who shows it and its finding, read by name.
    (masker,) = masked.smallest.masked_by
    assert masker.placements == ("symcall",) and masker.finding == regression.smallest.identity
    assert [m.placements for m in masked.masked_by] == [("symcall",)]
    record = BugRecord.of(masked, thunders={STOCK: "thunder", "symcall": "thunder, patched"})
    assert record.standing == Standing.MASKED
    assert f"masked by bug {regression.id} under symcall" in "\n".join(gone_lines(record))


def test_precision_a_raise_on_another_path_or_a_failure_the_reference_shares_masks_nothing():
    # symcall raises on thunderfx only: the jit failure went cleanly there.
    assert verdicts({STOCK: [unknown_proxy()], "symcall": [raised("thunderfx")]})["names"].verdict == Verdict.FIXED
    # The reference raises the same way too: that raise is no failure of symcall's own.
    both = verdicts({STOCK: [unknown_proxy(), raised()], "symcall": [raised()]})
    assert both["names"].verdict == Verdict.FIXED and both["names"].unclean == ("symcall",)
    # A wrong value stops nothing: the failure went with the path still failing, which only a named edit explains.
    value = verdicts({STOCK: [unknown_proxy()], "symcall": [wrong()]})["names"]
    assert value.verdict == Verdict.FIXED and value.unclean == ("symcall",) and not value.masked_by


def test_a_failure_gone_where_the_path_still_fails_is_fixed_only_by_a_named_edit():
    store = FindingStore()
    for t in verdicts({STOCK: [unknown_proxy(), wrong()], "symcall": [wrong()]}).values():
        store.add(t.verdict, t.placements, t.violation, NEG, masked_by=t.masked_by, unclean=t.unclean)
    (gone,) = [b for b in store.bugs() if b.verdict == Verdict.FIXED]
    thunders = {STOCK: "thunder", "symcall": "thunder, patched"}
    assert BugRecord.of(gone, thunders=thunders).standing == Standing.UNEXPLAINED
    removal = Removed("t1 = prims.mul(t0, 1.0)", "mul", "neg", 1)
    edit = Edit(3, "thunder.core.symbol.Symbol.__call__", "removal", "Symbol.__call__", removed=(removal,))
    gone.smallest.fixed_by = (
        Bisection("symcall", (edit,), edit, alone=True, without=True, runs=4, path="jit", oracle="names", fixes=True),
    )
    record = BugRecord.of(gone, thunders=thunders)
    assert record.standing == Standing.FIXED
    assert BugRecord.from_json(record.to_json()).standing == Standing.FIXED
    said = "\n".join(gone_lines(record))
    assert "symcall's Symbol.__call__ removes `t1 = prims.mul(t0, 1.0)` from `neg`" in said and "it comes back" in said
    # A bisection that names no edit (or a build, which has none) leaves it unexplained.
    gone.smallest.fixed_by = (Bisection("symcall", note="no call ran", fixes=True),)
    assert BugRecord.of(gone, thunders=thunders).standing == Standing.UNEXPLAINED


# --- planted in Thunder itself ------------------------------------------------------------------------


@pytest.fixture
def stock_fails_in_a_dead_subsymbol(monkeypatch):
    """Thunder as installed, with ``neg``'s decomposition holding a dead ``prims.mul`` that reads a
    proxy no trace defines: stock's check_trace fails ("unknown proxy"), a DCE that removes dead
    subsymbols makes it go. In this process only (the campaigns below run unsandboxed)."""
    import thunder.clang as clang
    from thunder.core import prims
    from thunder.core.proxies import TensorProxy

    original = clang.neg

    def neg_with_a_dead_unknown_read(a):
        prims.mul(TensorProxy(like=a), 1.0)  # named, never produced: only its dead reader holds it
        return original(a)

    monkeypatch.setattr(clang, "neg", neg_with_a_dead_unknown_read)


def campaign_on(program, placements, tmp_path):
    config = CampaignConfig.of(
        placements, ("jit",), max_examples=1, seed=1, shrink_baseline=False, findings_dir=str(tmp_path / "findings")
    )
    campaign = Campaign(config, log=lambda line: None, run_round=lambda _: campaign.observe(program))
    campaign.run()
    return campaign


def bug_of(campaign, verdict):
    return next(b for b in campaign.ledger.bugs() if b.verdict == verdict)


@pytest.mark.slow
def test_a_placement_removing_the_dead_subsymbol_fixes_the_failure_and_says_so(stock_fails_in_a_dead_subsymbol, tmp_path):
    campaign = campaign_on(NEG, (STOCK, "planted_dce:symcall_correct"), tmp_path)
    bug = bug_of(campaign, Verdict.FIXED)
    record = BugRecord.of(bug, thunders=campaign.thunders)
    assert record.standing == Standing.FIXED and bug.oracles() == ["names"]
    (bisection,) = bug.fixed_by
    assert bisection.fixes and bisection.names_an_edit and bisection.culprit.kind == "removal", describe(bisection)
    assert any(r.symbol == "mul" and not r.reasons for r in bisection.culprit.removed)  # dead where it was removed
    said = "\n".join(gone_lines(record))
    assert "removes `" in said and "prims.mul" in said and "it comes back" in said, said
    report = render(campaign.summary(), campaign.folder.root)
    assert "== fixed (" in report and "it comes back" in report
    assert "(fixed)" in issue_markdown(campaign.folder.folder(bug))


@pytest.mark.slow
def test_a_placement_raising_where_stock_fails_masks_the_failure(stock_fails_in_a_dead_subsymbol, tmp_path):
    campaign = campaign_on(NEG, (STOCK, "planted_dce:symcall_dce_raises_on_neg"), tmp_path)
    assert not [b for b in campaign.ledger.bugs() if b.verdict == Verdict.FIXED]
    masked, regression = bug_of(campaign, Verdict.MASKED), bug_of(campaign, Verdict.REGRESSION)
    assert [m.bug for m in masked.masked_by] == [regression.id]
    summary = campaign.summary().to_json()
    (entry,) = summary["bugs"]["masked"]
    assert entry["standing"] == "masked" and entry["masked_by"][0]["bug"] == regression.id
    assert f"masked by bug {regression.id} under planted_dce:symcall_dce_raises_on_neg" in render(campaign.summary(), None)
    from fuzzdce.results.html_report import write_report

    html = write_report(campaign.folder.root).read_text()
    assert "== masked" not in html and f"masked by bug {regression.id}" in html and 'class="bug masked"' in html


@pytest.mark.slow
def test_a_thunderfx_split_of_the_placement_masks_the_failure(stock_fails_in_a_dead_subsymbol):
    """The placement's DCE raises on neg and thunderfx's splitter sends neg to eager: the trace that
    fails check_trace under stock is never made. The split masks the failure; it fixes nothing."""
    from fuzzdce.running.evaluate import Evaluator, violations_of
    from fuzzdce.running.placements import resolve

    placements = [resolve(STOCK), resolve("planted_dce:symcall_dce_raises_on_neg")]
    triaged = list(triage(violations_of(Evaluator()(NEG, placements, paths=["thunderfx"]))).values())
    names = [t for t in triaged if t.violation.oracle == "names"]
    assert names and all(t.verdict == Verdict.MASKED for t in names), [(t.verdict, t.violation.oracle) for t in triaged]
    (split,) = [t for t in triaged if t.violation.oracle == "splits"]
    assert split.verdict == Verdict.REGRESSION and all(t.masked_by[0].violation.oracle == "splits" for t in names)


@pytest.fixture
def neg_raising_build(tmp_path) -> str:
    """NAME=DIR of a copy of the installed Thunder whose ``neg`` raises while tracing."""
    root = tmp_path / "neg-raises"
    shutil.copytree(Path(thunder.__file__).parent, root / "thunder", ignore=shutil.ignore_patterns("__pycache__"))
    ltorch = root / "thunder" / "torch" / "__init__.py"
    source = ltorch.read_text()
    line = "def neg(a):\n    return clang.neg(a)\n"
    assert source.count(line) == 1
    ltorch.write_text(source.replace(line, "def neg(a):\n    raise RuntimeError('planted: neg')\n"))
    return f"negraises={root}"


@pytest.mark.slow
def test_a_build_failing_the_program_another_way_masks_and_never_fixes(
    stock_fails_in_a_dead_subsymbol, neg_raising_build, tmp_path
):
    campaign = campaign_on(NEG, (STOCK, neg_raising_build), tmp_path)
    assert not [b for b in campaign.ledger.bugs() if b.verdict == Verdict.FIXED]
    masked = bug_of(campaign, Verdict.MASKED)
    assert BugRecord.of(masked, thunders=campaign.thunders).standing == Standing.MASKED
    assert [m.placements for m in masked.masked_by] == [("negraises",)]


def test_a_triaged_failure_keeps_what_masked_it_through_pickling():
    import pickle

    (t,) = [t for t in triage({STOCK: [unknown_proxy()], "symcall": [raised()]}).values() if t.verdict == Verdict.MASKED]
    again = pickle.loads(pickle.dumps(t))
    assert again == t and again.masked_by == t.masked_by and dataclasses.is_dataclass(again.violation)

"""Triage, deduplication and the findings folder, on synthetic violations and one planted fault."""

import dataclasses
import json
import os

import pytest
from builders import StandInEvaluator, raised, wrong_values

from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import signature
from fuzzdce.core.findings import FindingStore, triage
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.signatures import normalise
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import GenerationEnd, failure_type
from fuzzdce.results.store import load_known, write_atomically

ADD_THEN_COS = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))), Step("cos", "torch.cos({0})", (Ref(2),))),
    (3,),
    seed=1,
)
ONE_OP = Program((TensorInput((3,)),), (Step("add", "torch.add({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)


def key_error(name, path="jit", frame="thunder/core/transform_common.py:dce"):
    return raised(path, "KeyError", f"'{name}'", frame)


def test_proxy_names_numbers_and_addresses_are_normalised():
    assert signature(key_error("t1")) == signature(key_error("t8"))
    assert normalise("<function f at 0x7f30d2a8d440> got 1.5e-3, nan") == "<function f at <addr>> got <num>, <num>"


@pytest.mark.parametrize(
    "other",
    [key_error("t1", frame="thunder/core/symbol.py:__call__"), key_error("t1", path="thunderfx"), wrong_values("jit")],
    ids=["frame", "path", "oracle"],
)
def test_a_different_frame_path_or_oracle_is_a_different_signature(other):
    assert signature(other) != signature(key_error("t1"))


def test_stock_failing_one_oracle_does_not_mask_a_placement_induced_failure_of_another():
    triaged = triage({"stock": [key_error("t3")], "symcall": [key_error("t5"), wrong_values("jit")], "rdnp": []})
    verdicts = {t.violation.oracle: (t.verdict, t.placements) for t in triaged.values()}
    assert verdicts == {"raises": (Verdict.SHARED, ("stock", "symcall")), "outputs": (Verdict.REGRESSION, ("symcall",))}


def test_store_counts_occurrences_and_keeps_the_smallest_program():
    store = FindingStore()
    first, change = store.add(Verdict.REGRESSION, ("symcall",), key_error("t9"), ADD_THEN_COS)
    again, change_again = store.add(Verdict.REGRESSION, ("symcall",), key_error("t1"), ONE_OP)
    assert (change, change_again) == ("new", "smaller") and first is again
    assert len(store) == 1 and first.count == 2 and first.program is ONE_OP
    other, _ = store.add(Verdict.REGRESSION, ("symcall", "rdnp"), key_error("t1"), ONE_OP)
    assert other is not first, "placements are part of the signature"


def test_known_findings_are_suppressed_by_id_or_full_signature():
    probe = FindingStore()
    by_sig, _ = probe.add(Verdict.REGRESSION, ("symcall",), key_error("t1"), ONE_OP)
    by_id, _ = probe.add(Verdict.REGRESSION, ("rdnp",), key_error("t1"), ONE_OP)
    store = FindingStore({by_sig.signature: "filed as #1", by_id.id: "filed as #2"})
    a, _ = store.add(Verdict.REGRESSION, ("symcall",), key_error("t4"), ONE_OP)
    b, _ = store.add(Verdict.REGRESSION, ("rdnp",), key_error("t4"), ONE_OP)
    c, _ = store.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit"), ONE_OP)
    assert (a.known_reason, b.known_reason, c.known_reason) == ("filed as #1", "filed as #2", None)
    assert [f.reportable for f in (a, b, c)] == [False, False, True]


def test_atomic_write_keeps_the_old_file_when_the_move_fails(tmp_path, monkeypatch):
    target = tmp_path / "finding.json"
    write_atomically(target, "old")

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        write_atomically(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["finding.json"]


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "cannot read"),
        ("{not json", "not JSON"),
        ('[{"signature": "abc"}]', "needs a string 'signature' and a string 'reason'"),
        ('{"abc": " "}', "empty reason"),
    ],
)
def test_bad_known_file_is_a_usage_error(tmp_path, content, message):
    path = tmp_path / "known.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=message):
        load_known(path)


def test_known_file_forms(tmp_path):
    (tmp_path / "list.json").write_text('[{"signature": "abc", "reason": "filed", "count": 3}]')
    (tmp_path / "map.json").write_text('{"abc": "filed"}')
    assert load_known(tmp_path / "list.json") == load_known(tmp_path / "map.json") == {"abc": "filed"}


# The sandboxed observation starts a worker process: slow (./dev test -m "not slow" runs the in-process one).
@pytest.fixture(scope="module", params=[False, pytest.param(True, marks=pytest.mark.slow)], ids=["in-process", "sandboxed"])
def planted_observation(request, tmp_path_factory):
    """One program observed under stock and a planted fault (add computes sub), findings on disk;
    in-process, and in a sandboxed worker (which sends traces back only when a finding needs them)."""
    folder = tmp_path_factory.mktemp("findings")
    config = CampaignConfig.of(("stock", "planted:add_computes_sub"), ("jit",), findings_dir=str(folder), sandbox=request.param)
    campaign = Campaign(config, log=lambda line: None)
    try:
        to_shrink = campaign.observe(ADD_THEN_COS)
    finally:
        campaign.evaluator.close()
    return campaign, to_shrink, folder


def test_planted_fault_is_placement_induced_and_written_as_it_appears(planted_observation):
    campaign, to_shrink, folder = planted_observation
    (finding,) = list(campaign.store)
    assert to_shrink == [finding]
    assert (finding.verdict, finding.placements, finding.violation.oracle) == (
        Verdict.REGRESSION,
        ("planted:add_computes_sub",),
        "outputs",
    )
    (bug,) = campaign.ledger.bugs()
    record = json.loads((folder / bug.id / "bug.json").read_text())
    for key in ("verdict", "placements", "paths", "oracles", "key", "message", "n_ops", "count", "program", "members"):
        assert record[key] not in (None, "", []), key
    assert record["members"][0]["signature"] == finding.signature
    # No seed, so no rerun of this run: its id (what merge counts once) is one of a kind, never None.
    assert campaign.summary().run_id.startswith("unseeded:")
    assert set(record["members"][0]["counts_by_run"]) == {campaign.summary().run_id}
    assert record["versions"]["torch"] and record["versions"]["thunder"]
    assert (folder / bug.id / "repro.py").is_file()
    traces = {p.parent.name for p in (folder / bug.id / "traces").glob("*/*.txt")}
    assert traces == {"planted-add_computes_sub", "stock"}, "the placement's traces and stock's for comparison"
    assert "torch.sub" in "".join(p.read_text() for p in (folder / bug.id / "traces").glob("planted*/*.txt"))
    assert "ltorch.sub" in (folder / bug.id / "trace-diff.txt").read_text()


def test_stock_alone_finds_nothing_in_the_same_program(tmp_path):
    campaign = Campaign(CampaignConfig.of(("stock",), ("jit",), findings_dir=str(tmp_path)), log=lambda line: None)
    assert campaign.observe(ADD_THEN_COS) == [] and len(campaign.store) == 0
    assert list(tmp_path.iterdir()) == []


def test_a_second_occurrence_only_updates_the_count(planted_observation):
    campaign, _, folder = planted_observation
    (finding,) = list(campaign.store)
    campaign.observe(dataclasses.replace(ADD_THEN_COS, seed=2))  # the same program on other input values
    (bug,) = campaign.ledger.bugs()
    assert json.loads((folder / bug.id / "bug.json").read_text())["count"] == finding.count == 2


def test_a_shrink_step_records_only_its_own_finding():
    """A shrink step runs under the finding's placements only: triage of any other violation
    there would name too few placements (a baseline finding "under stock, symcall" that every
    placement shows), so only the finding being shrunk may be recorded from it."""
    induced, everywhere = key_error("t1", path="thunderfx"), wrong_values("thunderfx")
    showing = {"stock": [everywhere], "rdnp": [everywhere], "symcall": [induced, everywhere]}

    def showing_by_placement(program, placement, paths):
        return showing[placement.name]

    config = CampaignConfig.of(("stock", "rdnp", "symcall"), ("thunderfx",))
    campaign = Campaign(config, evaluator=StandInEvaluator(showing_by_placement), log=lambda line: None)
    campaign.observe(ADD_THEN_COS)
    assert {(f.verdict, f.placements) for f in campaign.store} == {
        (Verdict.REGRESSION, ("symcall",)),
        (Verdict.SHARED, ("stock", "rdnp", "symcall")),
    }
    assert campaign.observe(ONE_OP)  # smaller: a shrink step, evaluated under stock and symcall only
    assert {(f.verdict, f.placements) for f in campaign.store} == {
        (Verdict.REGRESSION, ("symcall",)),
        (Verdict.SHARED, ("stock", "rdnp", "symcall")),
    }
    assert next(f for f in campaign.store if f.verdict == Verdict.REGRESSION).program is ONE_OP


def test_a_campaign_goes_on_in_rounds_until_its_programs_are_spent():
    """A round that ends early (Hypothesis ran out of its examples, or a stand-in raised) is
    followed by another, with a seed of its own, until the campaign's programs are spent."""
    from fuzzdce.fuzzing.driver import derived_seed

    seeds = []

    def hypothesis_run_ending_at_a_failure(round_number):
        seeds.append(derived_seed(3, round_number))
        for i in range(4):
            campaign.observe(dataclasses.replace(ONE_OP, seed=10 * round_number + i))
        raise failure_type("a signature")("found")

    config = CampaignConfig.of(("stock", "symcall"), ("jit",), max_examples=10, seed=3, confirm=False)
    campaign = Campaign(config, evaluator=StandInEvaluator(), log=lambda line: None, run_round=hypothesis_run_ending_at_a_failure)
    campaign.run()
    assert campaign.full_evaluations == 10 and len(seeds) == 3 and campaign.driver.ended == GenerationEnd.PROGRAMS
    assert seeds[0] == 3 and len(set(seeds)) == 3


def test_a_round_that_finds_nothing_and_draws_no_new_program_ends_the_campaign():
    """Hypothesis has run out of programs (a tiny catalog): another round would only repeat them."""
    rounds = []

    def quiet_run(round_number):
        rounds.append(round_number)
        for _ in range(4):
            campaign.observe(ONE_OP)

    config = CampaignConfig.of(("stock",), ("jit",), max_examples=10, seed=3, confirm=False)
    campaign = Campaign(config, evaluator=StandInEvaluator(), log=lambda line: None, run_round=quiet_run)
    campaign.run()
    assert rounds == [0, 1] and campaign.driver.ended == GenerationEnd.NOTHING_NEW


def test_a_quiet_round_that_ran_short_is_followed_by_another():
    """A round can end having evaluated fewer programs than it was given (programs smaller than an
    unshrunk finding's only check that finding): the campaign goes on until its programs are spent."""
    rounds = []

    def short_quiet_run(round_number):
        rounds.append(round_number)
        for i in range(3):
            campaign.observe(dataclasses.replace(ONE_OP, seed=100 * round_number + i))

    config = CampaignConfig.of(("stock",), ("jit",), max_examples=10, seed=3, confirm=False)
    campaign = Campaign(config, evaluator=StandInEvaluator(), log=lambda line: None, run_round=short_quiet_run)
    campaign.run()
    assert campaign.full_evaluations == 10 and rounds == [0, 1, 2, 3]


@pytest.mark.slow  # draws 70 programs
def test_fuzz_test_evaluates_as_many_programs_as_the_profile_says(tmp_path):
    """``fuzz_test`` is the campaign's own Hypothesis test: under a profile of N examples it
    evaluates N programs (it once stopped at the campaign's default of 60)."""
    from hypothesis import settings

    from fuzzdce.testing import fuzz_test

    class Request:  # what pytest hands the test: its config, with --fuzz-findings in tmp_path
        class config:
            @staticmethod
            def getoption(name, default=None):
                return str(tmp_path) if name == "fuzz_findings" else default

    evaluator = StandInEvaluator()
    settings.register_profile("fuzzdce-test-70", max_examples=70, database=None, derandomize=True)
    before = settings.get_current_profile_name()
    settings.load_profile("fuzzdce-test-70")
    try:
        # Catalog programs alone: drawing an OpInfo step builds torch's sample inputs, most of the
        # draw's time, and what is counted here is the programs, not what they hold.
        fuzz_test(["stock"], ["jit"], evaluator=evaluator, opinfo_rate=0.0)(Request())
    finally:
        settings.load_profile(before)
    assert len(evaluator.calls) == 70


def test_a_seeded_round_keeps_the_example_database(tmp_path):
    """Hypothesis's ``seed`` drops the database from settings applied before it: a seeded round
    must still save its failures (a shared database replays them on other machines)."""
    from hypothesis import settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    from fuzzdce.fuzzing.config import DriverSettings
    from fuzzdce.fuzzing.driver import HypothesisDriver

    class NothingEvaluated:
        """A driver host that evaluates nothing."""

        def examine(self, program, choices, weights):
            return []

        def evaluated(self):
            return 0

        distinct = evaluated

        def new_round(self):
            pass

        def progress(self):
            pass

        def should_pause(self):
            return False

        generation_over = should_pause

        def log(self, line):
            pass

    database = DirectoryBasedExampleDatabase(str(tmp_path / "db"))
    driver = HypothesisDriver(NothingEvaluated(), DriverSettings(settings(database=database), max_examples=1, seed=7))
    assert driver.hypothesis_test()._hypothesis_internal_use_settings.database is database


def test_a_bug_is_confirmed_by_the_replays_of_its_smallest_program_alone():
    """``Shrinker.confirm`` replays a bug's smallest program only: a member of the bug on another
    program, never replayed, leaves the bug confirmed (it read ``confirmed: None``); a member of the
    smallest program not replayed, or not reproduced, does not."""
    from fuzzdce.core.findings import confirmation_words
    from fuzzdce.results.records import BugRecord
    from fuzzdce.results.report import bug_lines

    store = FindingStore()
    on_smallest, _ = store.add(Verdict.REGRESSION, ("symcall",), key_error("t1"), ONE_OP)
    elsewhere, _ = store.add(Verdict.REGRESSION, ("symcall",), key_error("t1", path="thunderfx"), ADD_THEN_COS)
    (bug,) = store.bugs()
    assert bug.smallest is on_smallest and len(bug.members) == 2
    on_smallest.confirmed = True  # replayed and reproduced; ``elsewhere`` was never replayed
    assert bug.confirmed is True
    assert bug_lines(BugRecord.of(bug))[1].strip() == confirmation_words(True)
    elsewhere.confirmed = False  # a replay of another program says nothing of the reproducer
    assert bug.confirmed is True
    on_smallest.confirmed = None  # the reproducer not replayed: the report says so
    assert bug.confirmed is None and "NOT REPLAYED" in "\n".join(bug_lines(BugRecord.of(bug)))
    on_smallest.confirmed = False
    assert bug.confirmed is False and "NOT CONFIRMED" in "\n".join(bug_lines(BugRecord.of(bug)))

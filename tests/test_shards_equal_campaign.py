"""Shards equal the campaign: the same programs found in one campaign, and in two shards whose
findings folders ``fuzzdce merge`` joins, make the same bugs: the same partition of findings, the
same bug ids. Merge joins the members' stored identities by the campaign's one rule
(``joining.joined``), so nothing but the fields a record keeps decides."""

from pathlib import Path

import pytest
from builders import chain, malformed, split, store_of, wrong_values

from fuzzdce.core.decisions import Bisection, Edit, Removed
from fuzzdce.core.findings import FindingStore, triage
from fuzzdce.core.model import ErrorInfo, Violation
from fuzzdce.core.program import Program
from fuzzdce.core.signatures import identity_id
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles.raises import raised
from fuzzdce.results.merge import merged_bugs, read_source
from fuzzdce.results.records import BugRecord
from fuzzdce.results.store import write_bug


def program(*ops: str, seed: int = 1) -> Program:
    """A chain of ``ops`` on one input that requires grad (``builders.chain``)."""
    return chain(*ops, seed=seed, shape=(3,), requires_grad=True)


def store_of_units(units) -> FindingStore:
    """A campaign's store of ``units`` (program, violations by placement), each program taken as a
    finished shrink's result (the hand-written programs are minimal)."""
    return store_of(
        *(
            (t.verdict, t.placements, t.violation, prog, True)
            for prog, by_placement in units
            for t in triage(by_placement).values()
        )
    )


def partition(bugs) -> dict[str, frozenset[str]]:
    """Bug id -> its members' ids."""
    return {b.id: frozenset(m.id for m in b.members) for b in bugs}


def campaign_and_shards(units, in_first_shard, tmp_path: Path) -> tuple[dict, dict]:
    """The bugs of one campaign of every unit, and of two shards' folders merged (the units
    ``in_first_shard`` picks in one, the rest in the other), each as ``partition``."""
    folders = []
    for i, shard in enumerate(([u for u in units if in_first_shard(u)], [u for u in units if not in_first_shard(u)])):
        root = tmp_path / f"shard-{i}"
        for bug in store_of_units(shard).bugs():
            record = BugRecord.of(bug, run_id=f"1:{i}/2")
            write_bug(root / record.id, record)
        folders.append(read_source(root))
    merged = [record for record, _ in merged_bugs(folders, {})]
    for record in merged:  # each member's stored fields give back its id
        assert all(identity_id(m.identity) == m.id for m in record.members)
    return partition(store_of_units(units).bugs()), partition(merged)


# --- without Thunder: faults as the oracles make them ------------------------------------------------

INDEX_ADD_GRAD = ErrorInfo(
    "RuntimeError",
    "Failed to find a gradient transform for bound symbol bsym=t3 = prims.index_add(a, t0, b, 0)",
    "thunder/transforms/autodiff.py:process_bsym",
    "traceback",
    "index_add",
)
EXP_BROKEN = ErrorInfo("RuntimeError", "planted: exp is broken", "planted.py:_raise_on_exp", "traceback", "")
KEY_ERROR = ErrorInfo("KeyError", "'shape'", "thunder/core/transforms.py:grad", "traceback", "sum")


def regression(*violations: Violation) -> dict[str, list[Violation]]:
    return {"stock": [], "planted": list(violations)}


# index_add's missing grad rule in two wordings on two paths (a raise on jit-grad, thunderfx's split):
# one fault, whose findings are in different shards and share no program.
INDEX_ADD_SPLIT = split(
    "thunderfx", "VJP for PrimIDs.INDEX_ADD is not implemented", op="index_add", reason="EXCEPTION_PROXY_THUNDER_OP"
)
UNITS = [
    (program("index_add"), regression(raised("jit-grad", INDEX_ADD_GRAD))),
    (program("cos", "index_add"), regression(INDEX_ADD_SPLIT)),
    (program("add"), regression(wrong_values("jit", "add"))),  # one wrong value in both shards, on two programs
    (program("add", "add"), regression(wrong_values("jit", "add"))),
    (program("mul"), regression(wrong_values("thunderfx", "mul"), raised("jit-grad", KEY_ERROR))),  # joined by their program
    (program("mul", "cos"), regression(wrong_values("jit", "mul"))),  # mul's wrong value on another path: one fault
    (program("sum"), regression(raised("jit", KEY_ERROR))),
    # A raise in words on jit, and the split it causes on thunderfx (in the same words, at exp), each
    # in its own shard: one fault, known to be one by the settled program that shows both.
    (program("exp"), regression(raised("jit", EXP_BROKEN))),
    (program("exp"), regression(split("thunderfx", EXP_BROKEN.message, op="exp"))),
]


def test_two_shards_merged_make_the_campaigns_bugs(tmp_path):
    in_first = {id(UNITS[i]) for i in (0, 2, 4, 7)}
    campaign, shards = campaign_and_shards(UNITS, lambda u: id(u) in in_first, tmp_path)
    assert shards == campaign
    # index_add's raise and split are one bug (by the op both name); add's wrong value one finding
    # (its smaller program's); mul's wrong values on two paths one bug, and the KeyError on two
    # paths another (its program shows mul's wrong value too, but a bug holds one fault label).
    about = {f.id: (f.violation.path, f.site) for f in store_of_units(UNITS).findings.values()}
    index_add = {i for i, (path, site) in about.items() if site == "index_add"}
    assert {about[i][0] for i in index_add} == {"jit-grad", "thunderfx"}
    exp = {i for i, (path, site) in about.items() if site == "exp"} | {
        i for i, (path, site) in about.items() if path == "jit" and not site
    }
    assert index_add in campaign.values() and exp in campaign.values() and len(exp) == 2
    assert sorted(map(len, campaign.values())) == [1, 2, 2, 2, 2]


# --- the evidence a campaign joins by, kept in the records -----------------------------------------
#
# Each test builds the stores two shards' campaigns end with, and compares what ``benchmarks/shards.py``
# compares: the shards' stores folded into one (``FindingStore.merge``, as a campaign folds its lanes')
# and joined, against ``fuzzdce merge`` of the records each shard wrote.

NAMES = malformed("jit", "a name is unbound")


def decided(placement: str, symbol: str) -> Bisection:
    """A bisection naming one removal of ``placement``'s (of ``prims.symbol``) as the decision that breaks."""
    removed = Removed(f"t1 = prims.{symbol}(a)", symbol, "t1 = ltorch.x(a)", 0, ("parent output",), ("its output",))
    edit = Edit(3, "thunder.core.symbol.Symbol.__call__", "removal", "Symbol.__call__", removed=(removed,))
    return Bisection(placement, (edit,), edit, alone=True, without=True, runs=4, path="jit", oracle="raises")


def add(store: FindingStore, violation: Violation, prog: Program, *, shrunk=True, decision=None, times: int = 1):
    """``violation`` seen on ``prog`` under "planted" (a regression) ``times`` times in ``store``;
    its program settled unless ``shrunk`` says otherwise, and bisected to ``decision``."""
    for _ in range(times):
        finding, _ = store.add(Verdict.REGRESSION, ("planted",), violation, prog)
    finding.shrunk, finding.decision = shrunk, decision
    return finding


def folded_and_merged(shards, tmp_path: Path) -> tuple[dict, dict]:
    """``shards`` (a function making each shard's store afresh) as one campaign (their stores folded
    in order, then joined) and as ``fuzzdce merge`` of their records, each as ``partition``."""
    folders = []
    for i, store in enumerate(shards()):
        root = tmp_path / f"shard-{i}"
        for bug in store.bugs():
            record = BugRecord.of(bug, run_id=f"1:{i}/2")
            write_bug(root / record.id, record)
        folders.append(read_source(root))
    campaign = FindingStore()
    for store in shards():
        campaign.merge(store)
    return partition(campaign.bugs()), partition(record for record, _ in merged_bugs(folders, {}))


def members_of(parts: dict, *findings) -> bool:
    """Are ``findings`` in one bug of ``parts``?"""
    return any({f.id for f in findings} <= members for members in parts.values())


@pytest.mark.parametrize("x_error, z_error", [("TypeError", "ValueError"), ("ValueError", "TypeError"),
                                              ("KeyError", "IndexError"), ("IndexError", "KeyError")])  # fmt: skip
def test_a_link_one_shard_kept_apart_is_followed_where_the_campaign_follows_it(x_error, z_error, tmp_path):
    """Shard 0's shrink linked X (a raise) to Y (a name left unbound: no label) but its join may not
    follow the link: Y and Z (another kind of raise) share a settled program there, and a bug holds
    one raised kind. Shard 1 settled Y on a smaller program: in one campaign of both, Y and Z share
    nothing and the link joins X and Y. Merge follows the link from the records (bug.json keeps the
    links its campaign found, followed or not) and joins nothing because shard 0's bug held Y and Z."""
    x = raised("jit", ErrorInfo(x_error, "x went wrong", "thunder/x.py:f", "traceback", "sin"))
    z = raised("jit-grad", ErrorInfo(z_error, "z went wrong", "thunder/z.py:g", "traceback", "cos"))

    def shards():
        first, second = FindingStore(), FindingStore()
        x_found = add(first, x, program("sin", "exp"))
        y_found = add(first, NAMES, program("cos", "cos"))
        add(first, z, program("cos", "cos"))
        first.link(x_found, y_found, "shown by the settled minimal program of X")
        add(second, NAMES, program("cos"))
        return first, second

    campaign, merged = folded_and_merged(shards, tmp_path)
    assert merged == campaign
    y = next(f for f in shards()[0].findings.values() if f.violation.oracle == "names")
    x_found = next(f for f in shards()[0].findings.values() if f.violation.path == "jit" and f is not y)
    assert members_of(campaign, x_found, y), "the campaign follows the link"


def test_the_link_each_shard_found_is_in_its_records_followed_or_not(tmp_path):
    """bug.json keeps every link of its campaign's store that touches one of its causes, though
    its join did not follow it (two raised kinds in one bug), and merge's records keep it again."""
    store = FindingStore()
    x = add(store, raised("jit", ErrorInfo("TypeError", "x", "thunder/x.py:f", "tb", "sin")), program("sin"))
    z = add(store, raised("jit", ErrorInfo("ValueError", "z", "thunder/z.py:g", "tb", "cos")), program("cos"))
    store.link(x, z, "shown by X's settled program")
    bugs = store.bugs()
    assert len(bugs) == 2, "two raised kinds stay apart"
    root = tmp_path / "shard"
    for bug in bugs:
        record = BugRecord.of(bug, run_id="1:0/1")
        assert [link.pair for link in record.links] == [tuple(sorted((x.cause_key, z.cause_key), key=identity_id))]
        write_bug(root / record.id, record)
    for record, _ in merged_bugs([read_source(root)], {}):
        assert [link.why for link in record.links] == ["shown by X's settled program"]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_of_two_copies_of_one_size_the_same_program_wins_in_the_campaign_and_the_merge(order, tmp_path):
    """A finding on two programs of one size (the same statements, inputs of other seeds), one per
    shard; in shard 1 its program is settled with another finding's. Which copy stays decides the
    join: the campaign and merge keep the one ``program_rank`` puts first (not the first folded in,
    nor the record whose JSON sorts first), whichever order the shards come in."""

    def shards():
        first, second = FindingStore(), FindingStore()
        add(first, NAMES, program("add", seed=1), times=2)
        add(second, NAMES, program("add", seed=2))
        add(second, wrong_values("thunderfx", "add"), program("add", seed=2))
        return [(first, second)[i] for i in order]

    campaign, merged = folded_and_merged(shards, tmp_path)
    assert merged == campaign
    assert sorted(map(len, campaign.values())) == [1, 1], "the seed-1 copy stays: nothing joins it to shard 1's"


def test_a_decision_bisected_on_a_larger_copy_joins_nothing_in_the_merge_as_in_the_campaign(tmp_path):
    """Shard 0 holds a finding's smallest program, not bisected; shard 1 bisected it, on a larger
    one, to the decision that also breaks a split there. The campaign keeps the smaller program
    and no decision (a decision goes with the program it was bisected on: ``FindingStore.merge``),
    so the raise stays apart from the split until it is decided on its own program; so does merge."""
    found = decided("planted", "sum")

    def shards():
        first, second = FindingStore(), FindingStore()
        add(first, raised("jit", KEY_ERROR), program("sum"))
        add(second, raised("jit", KEY_ERROR), program("sum", "cos"), decision=found)
        add(second, INDEX_ADD_SPLIT, program("sum", "cos"), decision=found)
        return first, second

    campaign, merged = folded_and_merged(shards, tmp_path)
    assert merged == campaign
    assert sorted(map(len, campaign.values())) == [1, 1], "no decision made on the kept program joins them"


def test_a_smaller_copy_bisected_to_no_decision_keeps_it_in_the_merge_as_in_the_campaign(tmp_path):
    """Shard 0 bisected a finding's smallest program and found no single edit; shard 1 bisected it
    on a larger one to a decision that also breaks a split there. The campaign keeps the smaller
    program's bisection (it says what breaks there): no decision, so the finding stays apart from
    the split. Merge knows from the record that shard 0's copy was bisected, and does the same."""
    found, none = decided("planted", "sum"), Bisection("planted", (), None, runs=3)

    def shards():
        first, second = FindingStore(), FindingStore()
        add(first, raised("jit", KEY_ERROR), program("sum"), decision=none)
        add(second, raised("jit", KEY_ERROR), program("sum", "cos"), decision=found)
        add(second, INDEX_ADD_SPLIT, program("sum", "cos"), decision=found)
        return first, second

    campaign, merged = folded_and_merged(shards, tmp_path)
    assert merged == campaign
    assert sorted(map(len, campaign.values())) == [1, 1]


def test_a_copy_settled_on_other_inputs_does_not_settle_the_program_kept(tmp_path):
    """A finding's copy in shard 0 is on a program not settled; shard 1's, on the same statements
    with other inputs, is settled, beside another finding settled on shard 0's program. The
    campaign keeps shard 0's program (``program_rank``) unsettled, as a settled program is its
    statements and its inputs: the two stay apart, in the merge too."""

    def shards():
        first, second = FindingStore(), FindingStore()
        add(first, NAMES, program("exp", seed=1), shrunk=None)
        add(second, NAMES, program("exp", seed=2))
        add(second, wrong_values("thunderfx", "exp"), program("exp", seed=1))
        return first, second

    campaign, merged = folded_and_merged(shards, tmp_path)
    assert merged == campaign
    assert sorted(map(len, campaign.values())) == [1, 1]


# --- with Thunder: planted faults --------------------------------------------------------------------

PLANTED = ("stock", "planted:add_and_mul_computed_wrong", "planted:exp_raises")
# (program, paths, shard): two faulty placements, three faults (add's and mul's wrong values, exp's
# raise), each in both shards; exp's raise on jit in shard 0 and the split it causes on thunderfx
# (other words, another path) in shard 1, on the same program.
PLANTED_UNITS = [
    (("add",), ("jit", "jit-grad"), 0),
    (("mul",), ("jit",), 0),
    (("exp",), ("jit",), 0),
    (("add",), ("thunderfx",), 1),
    (("mul", "mul"), ("jit", "thunderfx"), 1),
    (("exp",), ("thunderfx",), 1),
    (("cos", "exp"), ("jit-grad",), 1),
]


@pytest.fixture(scope="module")
def planted_units():
    """Each unit evaluated once under every planted placement: (program, violations by placement, shard)."""
    from fuzzdce.running.evaluate import Evaluator, violations_of
    from fuzzdce.running.placements import resolve

    evaluate, placements = Evaluator(), [resolve(name) for name in PLANTED]
    units = []
    for ops, paths, shard in PLANTED_UNITS:
        prog = program(*ops)
        units.append((prog, violations_of(evaluate(prog, placements, paths=list(paths))), shard))
    return units


@pytest.mark.slow
def test_two_shards_of_planted_faults_merged_make_the_campaigns_bugs(planted_units, tmp_path):
    units = [(prog, by_placement) for prog, by_placement, _ in planted_units]
    first = {id(units[i]) for i, (_, _, shard) in enumerate(planted_units) if shard == 0}
    campaign, shards = campaign_and_shards(units, lambda u: id(u) in first, tmp_path)
    assert shards == campaign
    store = store_of_units(units)
    placements = {f.placements for f in store.findings.values()}
    assert placements == {("planted:add_and_mul_computed_wrong",), ("planted:exp_raises",)}, "every fault was shown"
    exp = [b for b in store.bugs() if b.placements == ("planted:exp_raises",)]
    assert len(exp) == 1 and {f.violation.path for f in exp[0].members} >= {"jit", "thunderfx"}, "exp's raise is one bug"

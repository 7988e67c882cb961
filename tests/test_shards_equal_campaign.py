"""Shards equal the campaign: the same programs found in one campaign, and in two shards whose
findings folders ``fuzzdce merge`` joins, make the same bugs: the same partition of findings, the
same bug ids. Merge joins the members' stored identities by the campaign's one rule
(``joining.joined``), so nothing but the fields a record keeps decides."""

from pathlib import Path

import pytest
from builders import chain, split, store_of, wrong_values

from fuzzdce.core.findings import FindingStore, triage
from fuzzdce.core.model import ErrorInfo, Violation
from fuzzdce.core.program import Program
from fuzzdce.core.signatures import identity_id
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
    return store_of(*((*triaged, prog, True) for prog, by_placement in units for triaged in triage(by_placement).values()))


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

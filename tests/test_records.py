"""The records of bug.json and summary.json (no Thunder compile): records round-trip with every field,
every reader refuses a folder of another schema version, the campaign's join is merge's."""

import json
from pathlib import Path

import pytest

from fuzzdce.cli import main
from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import value_fault
from fuzzdce.core.joining import connected
from fuzzdce.core.signatures import short_id
from fuzzdce.core.vocabulary import Standing, Verdict
from fuzzdce.results.html_report import write_report
from fuzzdce.results.issue import issue_markdown
from fuzzdce.results.merge import merge
from fuzzdce.results.records import SCHEMA_FIELD, SCHEMA_VERSION, BugRecord, MemberRecord, RunSummary, by_standing
from fuzzdce.results.store import FindingsFolder, read_bug, read_summary, write_bug

PROGRAM = "def program(v0, v1):\n    v2 = torch.add(v0, v1)\n    return (v2,)\n"
INPUTS = "def make_inputs(requires_grad=False):\n    return [torch.ones(2), torch.ones(2)]\n"

MEMBER = MemberRecord(
    id=short_id("S"), signature="S", violation_signature="VS", path="jit", oracle="outputs", message="outputs differ",
    count=3, counts_by_run={"1:0/1": 3}, n_ops=1, confirmed=True, why="the finding of the bug's smallest program",
    first_seen_seconds=4.5, fault_data=value_fault("outputs", "", "jit").to_json(),
)  # fmt: skip
BUG = BugRecord(
    id=short_id("K"), key="K", verdict=Verdict.REGRESSION, placements=("symcall",), placement="symcall",
    members=(MEMBER,), paths=("jit",), oracles=("outputs",), message="outputs differ", count=3,
    first_seen_seconds=4.5, n_ops=1, n_inputs=2, ops=("add",), program=PROGRAM, inputs=INPUTS, confirmed=True,
    thunders={"stock": "thunder 0.2.6 at .../thunder", "symcall": "thunder 0.2.6 at .../thunder, patched"},
    versions={"torch": "2.9.1"},
)  # fmt: skip
SHARED_BUG = BugRecord(
    id=short_id("KB"), key="KB", verdict=Verdict.SHARED, placements=("stock", "symcall"), placement="stock",
    members=(MemberRecord(id=short_id("SB"), signature="SB", path="jit", oracle="grads", message="boom", count=1,
                          counts_by_run={"1:0/1": 1}, fault_data=value_fault("grads", "", "jit").to_json()),),
    paths=("jit",), oracles=("grads",), message="boom", count=1, first_seen_seconds=5.0, n_ops=1, n_inputs=2,
    ops=("add",), program=PROGRAM, inputs=INPUTS,
)  # fmt: skip
SUMMARY = RunSummary(
    seed=1, campaign_seed=1, shard="0/1", run_id="1:0/1", placements=("stock", "symcall"), paths=("jit",),
    thunders=dict(BUG.thunders), programs=6, invalid_programs=1, evaluation_seconds=3.0, wall_seconds=6.0,
    bugs=(BUG, SHARED_BUG), op_counts={"add": 6}, dce_activity={}, phases={"generation": 6.0},
    generation_ended=("programs",),
    counts=({"placement": "symcall", "path": "jit", "oracle": "outputs", "findings": 1, "occurrences": 3},),
    timeline=({"seconds": 0.0, "programs": 0, "bugs": 0}, {"seconds": 6.0, "programs": 6, "bugs": 2}),
    memory={"processes": [], "recycled": {}}, versions={"torch": "2.9.1"},
)  # fmt: skip


def written_folder(root: Path) -> Path:
    """A findings folder as ``fuzzdce run`` writes it: the summary and each bug's folder."""
    summary = RunSummary(**{**SUMMARY.__dict__, "findings_dir": str(root)})
    FindingsFolder(root).write_summary(summary)
    for record in summary.bugs:
        write_bug(root / record.id, record)
        (root / record.id / "repro.py").write_text("# reproducer\n")
    return root


def test_records_round_trip_with_every_field(tmp_path):
    for record in (BUG, SHARED_BUG):
        data = record.to_json()
        assert data[SCHEMA_FIELD] == SCHEMA_VERSION and BugRecord.from_json(data) == record
        assert set(data["members"][0]) == set(MemberRecord.__dataclass_fields__)
    root = written_folder(tmp_path / "f")
    assert read_bug(root / BUG.id) == BUG
    summary = read_summary(root)
    assert RunSummary.from_json(summary.to_json()) == summary
    assert summary.reference == "stock" and summary.thunders == BUG.thunders
    assert summary.covered_runs() == {"1:0/1": summary.run_part()}
    # summary.json's bug entries hold what a reader would otherwise derive: inputs, the placement.
    (entry,) = json.loads((root / "summary.json").read_text())["bugs"]["regression"]
    assert entry["n_inputs"] == 2 and entry["placement"] == "symcall" and entry["signature"] == "K"
    assert summary.bugs[0].n_inputs == 2 and summary.bugs[0].standing == Standing.NEW


@pytest.mark.parametrize("version", [None, SCHEMA_VERSION + 1])
def test_every_reader_refuses_a_folder_of_another_schema_version(tmp_path, version, capsys):
    root = written_folder(tmp_path / "f")
    for path in (root / "summary.json", root / BUG.id / "bug.json"):
        data = json.loads(path.read_text())
        data.pop(SCHEMA_FIELD) if version is None else data.update({SCHEMA_FIELD: version})
        path.write_text(json.dumps(data))
    said = "no schema version" if version is None else f"schema version {version}"
    readers = (
        lambda: read_summary(root),
        lambda: read_bug(root / BUG.id),
        lambda: issue_markdown(root / BUG.id),
        lambda: write_report(root),
        lambda: merge(tmp_path / "merged", [root]),
    )
    for reader in readers:
        with pytest.raises(UsageError, match=f"{said}; this fuzzdce reads schema version {SCHEMA_VERSION} only"):
            reader()
    assert main(["report", str(root)]) == 2
    assert "rewrite the findings folder with this fuzzdce" in capsys.readouterr().err


def test_bugs_are_listed_by_standing_and_joined_as_the_campaign_joins_them():
    known = BugRecord.from_json({**BUG.to_json(), "key": "K2", "id": short_id("K2"), "known": "filed"})
    assert [len(records) for _, records in by_standing([SHARED_BUG, known, BUG])] == [1, 1, 0, 0, 0, 1]
    assert sorted([SHARED_BUG, known, BUG], key=lambda r: r.order) == [BUG, known, SHARED_BUG]
    # One shared name joins two items; a chain of them joins all.
    assert connected(["a", "b", "c", "d"], lambda x: {"a": [1], "b": [2], "c": [1, 2], "d": [3]}[x]) == [["a", "b", "c"], ["d"]]


def test_fuzzdce_report_prints_the_folders_report_and_writes_its_page(tmp_path, capsys):
    root = written_folder(tmp_path / "f")
    assert main(["report", str(root)]) == 0
    out = capsys.readouterr().out
    assert "== fuzzdce: 2 bugs (2 findings) in 6 programs (1 invalid), 6 s, 0.50 s/program; seed 1 ==" in out
    assert "reference: stock = thunder 0.2.6 at .../thunder\nunder test: symcall = thunder 0.2.6 at .../thunder, patched" in out
    assert "    | def program(v0, v1):" in out  # the program, from bug.json (summary.json lists none)
    assert f"reproduce: python {root / BUG.id / 'repro.py'}   issue text: fuzzdce issue {BUG.id} --findings {root}" in out
    assert out.index(f"bug {BUG.id}") < out.index(f"bug {SHARED_BUG.id}") and (root / "report.html").is_file()

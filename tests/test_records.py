"""The records of bug.json and summary.json (no Thunder compile): folders written before records had a
schema version still load, in every reader; records round-trip; the campaign's join is merge's."""

import json
from pathlib import Path

from fuzzdce.core.findings import connected
from fuzzdce.core.signatures import short_id
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.results.html_report import write_report
from fuzzdce.results.issue import issue_markdown
from fuzzdce.results.merge import merge
from fuzzdce.results.records import SCHEMA_FIELD, BugGroup, BugRecord, RunSummary, grouped
from fuzzdce.results.store import read_bug, read_summary

PROGRAM = "def program(v0, v1):\n    v2 = torch.add(v0, v1)\n    return (v2,)\n"
INPUTS = "def make_inputs(requires_grad=False):\n    return [torch.ones(2), torch.ones(2)]\n"

# bug.json as store.bug_record wrote it before records: every key, no schema version, no n_inputs.
UNVERSIONED_BUG = {
    "id": short_id("K"), "key": "K", "verdict": "regression", "placements": ["symcall"], "placement": "symcall",
    "builds": {}, "paths": ["jit"], "oracles": ["outputs"], "message": "outputs differ", "count": 3,
    "first_seen_seconds": 4.5, "n_ops": 1, "ops": ["add"], "program": PROGRAM, "inputs": INPUTS, "known": None,
    "confirmed": True, "shrink": None, "versions": {"torch": "2.9.1"},
    "members": [{
        "id": short_id("S"), "signature": "S", "violation_signature": "VS", "path": "jit", "oracle": "outputs",
        "error_type": None, "frame": None, "message": "outputs differ", "count": 3, "counts_by_run": {"1:0/1": 3},
        "n_ops": 1, "confirmed": True, "known": None, "why": "the finding of the bug's smallest program",
        "first_seen_seconds": 4.5,
    }],
}  # fmt: skip

# An older bug.json, as campaigns before runs, builds and first-seen times wrote it.
OLDER_BUG = {
    "id": short_id("KB"), "key": "KB", "verdict": "shared", "placements": ["stock", "symcall"], "paths": ["jit"],
    "oracles": ["grads"], "message": "boom", "count": 1, "n_ops": 1, "ops": ["add"], "program": PROGRAM,
    "inputs": INPUTS, "known": None, "confirmed": None, "versions": {"torch": "2.9.1"},
    "members": [{"id": short_id("SB"), "signature": "SB", "path": "jit", "oracle": "grads", "message": "boom",
                 "count": 1, "n_ops": 1, "confirmed": None, "known": None, "why": ""}],
}  # fmt: skip

# summary.json as report.summary wrote it before records (its bug entries: report.bug_entry's).
UNVERSIONED_SUMMARY = {
    "seed": 1, "campaign_seed": 1, "shard": "0/1", "run_id": "1:0/1", "placements": ["stock", "symcall"],
    "paths": ["jit"], "programs": 6, "invalid_programs": 1, "evaluation_seconds": 3.0, "wall_seconds": 6.0,
    "seconds_per_program": 0.5, "programs_per_minute": 60.0, "unsupported_splits": 0, "phases": {"generate": 6.0},
    "generation_ended": ["programs"], "n_bugs": 1, "n_findings": 1,
    "bugs": {"regression": [{
        **{k: UNVERSIONED_BUG[k] for k in BugRecord.SUMMARY_FIELDS}, "signature": "K",
        "members": [{k: UNVERSIONED_BUG["members"][0][k] for k in ("id", "signature", "path", "oracle", "message", "count",
                                                                   "counts_by_run", "why")}],
        "folder": f"F/{short_id('K')}",
    }], "shared": []},
    "new_regressions": 1,
    "counts": [{"placement": "symcall", "path": "jit", "oracle": "outputs", "findings": 1, "occurrences": 3}],
    "op_counts": {"add": 6}, "dropped_steps": {}, "dce_activity": {}, "notes": [],
    "timeline": [{"seconds": 0.0, "programs": 0, "bugs": 0}, {"seconds": 6.0, "programs": 6, "bugs": 1}],
    "findings_dir": "F", "memory": {"processes": [], "recycled": {}}, "versions": {"torch": "2.9.1"},
}  # fmt: skip


def old_folder(root: Path) -> Path:
    """A findings folder in the layouts written before records: an unversioned bug and summary, and an older bug."""
    root.mkdir()
    (root / "summary.json").write_text(json.dumps(UNVERSIONED_SUMMARY))
    for record in (UNVERSIONED_BUG, OLDER_BUG):
        (root / record["id"]).mkdir()
        (root / record["id"] / "bug.json").write_text(json.dumps(record))
        (root / record["id"] / "repro.py").write_text("# reproducer\n")
    return root


def test_an_old_folder_loads_in_every_reader(tmp_path):
    root = old_folder(tmp_path / "old")
    bug, older = read_bug(root / UNVERSIONED_BUG["id"]), read_bug(root / OLDER_BUG["id"])
    assert bug.verdict == Verdict.REGRESSION and bug.n_inputs == 2 and bug.members[0].counts_by_run == {"1:0/1": 3}
    assert bug.reportable and bug.group == BugGroup.NEW
    # What the older record lacks is derived (placement, inputs) or left unknown.
    assert older.placement == "stock" and older.n_inputs == 2 and older.builds == {} and older.first_seen_seconds is None
    assert older.members[0].counts_by_run == {} and older.members[0].violation_signature == ""
    assert older.group == BugGroup.SHARED and not older.reportable
    summary = read_summary(root)
    assert summary.n_bugs == 1 and summary.new_regressions == 1 and summary.programs_per_minute == 60.0
    assert summary.covered_runs("unused") == {"1:0/1": summary.run_part()}
    # Every reader takes the folder as it is.
    assert "torch.add(v0, v1)" in issue_markdown(root / UNVERSIONED_BUG["id"])
    assert f"bug {older.id}" in write_report(root).read_text()
    merged = merge(tmp_path / "merged", [root])
    assert [b.key for b in merged.bugs] == ["K", "KB"] and merged.summary.programs == 6 and merged.exit_code == 1
    assert merged.bugs[1].members[0].counts_by_run == {"1:0/1": 1}  # derived from its count, for the folder's run


def test_records_round_trip_and_keep_every_key_the_old_layout_had(tmp_path):
    root = old_folder(tmp_path / "old")
    for record in (UNVERSIONED_BUG, OLDER_BUG):
        loaded = BugRecord.from_json(record)
        data = loaded.to_json()
        assert data[SCHEMA_FIELD] == 1 and BugRecord.from_json(data) == loaded
    assert set(BugRecord.from_json(UNVERSIONED_BUG).to_json()) >= set(UNVERSIONED_BUG)
    summary = read_summary(root)
    data = summary.to_json()
    assert RunSummary.from_json(data) == summary
    assert {k: v for k, v in data.items() if k not in (SCHEMA_FIELD, "bugs")} == {
        k: v for k, v in UNVERSIONED_SUMMARY.items() if k != "bugs"
    }
    assert data["bugs"]["regression"][0] == UNVERSIONED_SUMMARY["bugs"]["regression"][0]


def test_bugs_are_grouped_and_joined_as_the_campaign_groups_and_joins_them():
    new = BugRecord.from_json(UNVERSIONED_BUG)
    known = BugRecord.from_json({**UNVERSIONED_BUG, "key": "K2", "id": short_id("K2"), "known": "filed"})
    baseline = BugRecord.from_json(OLDER_BUG)
    assert [len(records) for _, records in grouped([baseline, known, new])] == [1, 1, 0, 1]
    assert sorted([baseline, known, new], key=lambda r: r.order) == [new, known, baseline]
    # One shared name joins two items; a chain of them joins all.
    assert connected(["a", "b", "c", "d"], lambda x: {"a": [1], "b": [2], "c": [1, 2], "d": [3]}[x]) == [["a", "b", "c"], ["d"]]

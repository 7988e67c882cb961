"""``fuzzdce merge`` on synthetic findings folders (no Thunder): joining, smallest program, counts,
idempotence, order independence, exit codes and bad input."""

import json
from pathlib import Path

import pytest
from builders import malformed, raised, wrong_values

from fuzzdce.cli import main
from fuzzdce.core.errors import UsageError
from fuzzdce.core.faults import Fault, value_fault
from fuzzdce.core.joining import cause_key, cause_text
from fuzzdce.core.model import Violation
from fuzzdce.core.signatures import identity_id, short_id
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.results.issue import issue_markdown
from fuzzdce.results.merge import merge
from fuzzdce.results.records import SCHEMA_FIELD, SCHEMA_VERSION, CauseLink
from fuzzdce.results.store import bug_folders

ONE_OP = "def program(v0):\n    v1 = torch.add(v0, v0)\n    return (v1,)\n"
TWO_OPS = "def program(v0):\n    v1 = torch.add(v0, v0)\n    v2 = torch.cos(v1)\n    return (v2,)\n"
TWO_INPUTS = "def program(v0, v1):\n    v2 = torch.add(v0, v1)\n    return (v2,)\n"


# The cause of S2 (wrong outputs on thunderfx, not localised, under symcall): what the shards' bug is known by.
S2_CAUSE = cause_text(Verdict.REGRESSION, ("symcall",), value_fault("outputs", "", "thunderfx"))
S2_ID = identity_id(cause_key(Verdict.REGRESSION, ("symcall",), value_fault("outputs", "", "thunderfx")))


def member(signature, count, violation: Violation | None = None, **extra):
    """A member of ``violation`` (its oracle's, ``builders``; by default wrong outputs on jit, not
    localised) with its fault as data, as a campaign records it."""
    v = violation if violation is not None else wrong_values("jit")
    return {"id": short_id(signature), "signature": signature, "path": v.path, "oracle": v.oracle, "message": f"{v.oracle} on {v.path}",
            "count": count, "n_ops": 1, "confirmed": True, "known": None, "why": "", "error_type": v.error_type,
            "frame": v.frame, "site": v.site, "fault_data": v.fault.to_json(), **extra}  # fmt: skip


def raised_member(signature, error_type, path="jit", frame="thunder/core/symbol.py:__call__"):
    """A member for Thunder raising ``error_type`` at ``frame``, as a campaign records it."""
    return member(signature, 1, raised(path, error_type, "went wrong", frame))


def cause_of(m) -> tuple:
    """A member's cause (``joining.cause_key``), from its stored fields."""
    return cause_key(Verdict(m["verdict"]), tuple(m["placements"]), Fault.from_json(m["fault_data"]))


def bug(key, members, program=ONE_OP, verdict="regression", **extra):
    """A bug record as a campaign writes it: each member with its verdict, placements and program;
    its first member's cause linked to each other member's (the evidence that joined them, as a
    campaign's shrink finds it: a settled program showing both), unless ``links`` says otherwise."""
    inputs = "def make_inputs(requires_grad=False):\n    return []\n"
    for m in members:
        m.setdefault("verdict", verdict)
        m.setdefault("placements", extra.get("placements", ["symcall"]))
        m.setdefault("program", program)
        m.setdefault("inputs", inputs)
        m.setdefault("n_inputs", 2 if program == TWO_INPUTS else 1)
        m["n_ops"] = program.count("torch.")
    extra.setdefault(
        "links",
        [
            CauseLink(cause_of(members[0]), cause_of(m), "shown").to_json()
            for m in members[1:]
            if cause_of(m) != cause_of(members[0])
        ],
    )
    return {
        SCHEMA_FIELD: SCHEMA_VERSION, "n_inputs": 2 if program == TWO_INPUTS else 1, "id": short_id(key), "key": key, "verdict": verdict, "placements": ["symcall"], "placement": "symcall", "builds": {},
        "paths": sorted({m["path"] for m in members}), "oracles": sorted({m["oracle"] for m in members}),
        "message": "wrong", "count": sum(m["count"] for m in members), "n_ops": program.count("torch."), "ops": ["add"],
        "program": program, "inputs": "def make_inputs(requires_grad=False):\n    return []\n", "known": None,
        "confirmed": True, "members": members, "versions": {"torch": "2.9.1"}, **extra,
    }  # fmt: skip


def run_summary(run_id, programs, wall, **extra):
    seed, shard = run_id.split(":")
    return {
        SCHEMA_FIELD: SCHEMA_VERSION, "reference": "stock", "thunders": {"stock": "thunder", "symcall": "thunder, patched"},
        "bugs": {}, "seed": int(seed), "campaign_seed": int(seed), "shard": shard, "run_id": run_id, "placements": ["stock", "symcall"],
        "paths": ["jit"], "programs": programs, "invalid_programs": 1, "evaluation_seconds": 2.0 * programs,
        "wall_seconds": wall, "unsupported_splits": 0,
        "counts": [{"placement": "symcall", "path": "jit", "oracle": "outputs", "findings": 1, "occurrences": programs}],
        "op_counts": {"add": programs}, "dropped_steps": {"cos": 1}, "notes": [{"path": "jit", "note": "n", "programs": 1}],
        "dce_activity": {"symcall": {"programs": programs, "programs_changed": 1, "fraction_changed": 0.0, "exercised": True,
                                     "symbols": [{"symbol": "add", "depth": 0, "removed": 2, "added": 0}], "per_program": [2]}},
        "versions": {"torch": "2.9.1"}, **extra,
    }  # fmt: skip


def write_folder(root: Path, summary, bugs, tag=None):
    """A findings folder as ``fuzzdce run`` writes it (each member counted for the summary's run);
    each repro.py says which folder it came from."""
    root.mkdir(parents=True)
    if summary is not None:
        (root / "summary.json").write_text(json.dumps(summary))
    for record in bugs:
        for m in record["members"]:
            m.setdefault("counts_by_run", {summary["run_id"]: m["count"]})
        folder = root / record["id"]
        (folder / "traces" / "stock").mkdir(parents=True)
        (folder / "bug.json").write_text(json.dumps(record))
        (folder / "repro.py").write_text(f"# from {tag or root.name}\n")
        (folder / "traces" / "stock" / "00-t.txt").write_text("trace\n")
    return root


@pytest.fixture
def shards(tmp_path):
    """Two shards: the same bug under two keys (joined by a shared member), the smaller program in
    shard b; and a bug of each shard's own."""
    a = write_folder(
        tmp_path / "a",
        run_summary("7:0/2", 10, 100.0, timeline=[{"seconds": 0.0, "programs": 0, "bugs": 0}, {"seconds": 50.0, "programs": 10, "bugs": 2}],
                    memory={"processes": [{"process": "lane 0", "peak_rss_mb": 100.0}], "recycled": {"workers": 1}}),
        [bug("K1", [member("S1", 3), member("S2", 2, wrong_values("thunderfx"))], program=TWO_OPS, first_seen_seconds=40.0),
         bug("KA", [member("SA", 1, wrong_values("jit-grad", oracle="grads", call="grad"))], verdict="shared", first_seen_seconds=45.0)],
    )  # fmt: skip
    b = write_folder(
        tmp_path / "b",
        run_summary("7:1/2", 20, 120.0, timeline=[{"seconds": 30.0, "programs": 20, "bugs": 1}],
                    memory={"processes": [{"process": "lane 0", "peak_rss_mb": 50.0}], "recycled": {"workers": 2}}),
        [bug("K2", [member("S2", 4, wrong_values("thunderfx")), member("S3", 1, wrong_values("jit-grad"))], first_seen_seconds=10.0)],
    )  # fmt: skip
    return a, b


def comparable(folder: Path) -> dict:
    """Everything merge wrote, with the merged folder's own path taken out."""
    text = {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}
    return json.loads(json.dumps(text).replace(str(folder), "OUT"))


def test_bugs_sharing_a_member_are_one_bug_with_the_smallest_program_and_summed_counts(shards, tmp_path):
    a, b = shards
    merged = merge(tmp_path / "m", [a, b])
    (joined,) = [r for r in merged.bugs if r.verdict == Verdict.REGRESSION]
    # Known, as the campaign knows a bug, by the cause of its smallest program's finding (S2's, in b).
    assert joined.key == S2_CAUSE and joined.id == S2_ID and joined.program == ONE_OP
    assert {m.signature: m.count for m in joined.members} == {"S1": 3, "S2": 6, "S3": 1}
    assert joined.count == 10 and joined.paths == ("jit", "jit-grad", "thunderfx")
    assert next(m for m in joined.members if m.signature == "S2").counts_by_run == {"7:0/2": 2, "7:1/2": 4}
    assert joined.first_seen_seconds == 10.0
    assert (tmp_path / "m" / joined.id / "repro.py").read_text() == "# from b\n"
    assert (tmp_path / "m" / joined.id / "traces" / "stock" / "00-t.txt").is_file()
    s = json.loads((tmp_path / "m" / "summary.json").read_text())
    assert s == merged.summary.to_json()
    assert s["programs"] == 30 and s["invalid_programs"] == 2 and s["evaluation_seconds"] == 60.0
    assert s["wall_seconds"] == 120.0 and s["machine_seconds"] == 220.0 and s["programs_per_minute"] == 15.0
    assert s["n_bugs"] == 2 and s["n_findings"] == 4 and s["new_regressions"] == 1 and s["campaign_seed"] == 7
    assert s["op_counts"] == {"add": 30} and s["dropped_steps"] == {"cos": 2} and s["notes"][0]["programs"] == 2
    assert s["dce_activity"]["symcall"]["programs"] == 30 and s["dce_activity"]["symcall"]["symbols"][0]["removed"] == 4
    cell = next(c for c in s["counts"] if (c["placement"], c["path"], c["oracle"]) == ("symcall", "jit", "outputs"))
    assert cell == {"placement": "symcall", "path": "jit", "oracle": "outputs", "findings": 1, "occurrences": 30}
    assert sorted(s["runs"]) == ["7:0/2", "7:1/2"]
    # Timeline: programs summed over runs at each sample time; bugs by their first-seen time.
    assert s["timeline"] == [
        {"seconds": 0.0, "programs": 0, "bugs": 0},
        {"seconds": 30.0, "programs": 20, "bugs": 1},  # shard a's programs at 0 s, shard b's at 30 s
        {"seconds": 50.0, "programs": 30, "bugs": 2},  # merged bugs first seen at 10 s and 45 s
    ]
    assert [p["process"] for p in s["memory"]["processes"]] == ["7:0/2 lane 0", "7:1/2 lane 0"]
    assert s["memory"]["recycled"] == {"workers": 3}


def test_one_finding_in_two_runs_is_one_member_whatever_its_record_says(tmp_path):
    """Merge knows a finding by its identity (its fields), not by the text its record holds."""
    a = write_folder(tmp_path / "a", run_summary("1:0/1", 5, 10.0), [bug("K", [member("S1", 2)])])
    b = write_folder(tmp_path / "b", run_summary("2:0/1", 5, 10.0), [bug("K9", [member("S9", 3)], program=TWO_OPS)])
    (joined,) = merge(tmp_path / "m", [a, b]).bugs
    assert joined.count == 5 and [m.signature for m in joined.members] == ["S1"]  # the smaller program's copy
    assert merge(tmp_path / "m2", [a, b]).summary.campaign_seed is None  # two campaigns


def test_bugs_raising_different_exception_types_stay_apart_though_they_share_a_member(tmp_path):
    """Two runs each joined the same wrong-values finding to a different raised exception (one
    program shows all three): merge keeps the two raised types apart, as the campaign does."""
    wrong = member("S-values", 1)
    type_error = raised_member("S-type", "TypeError")
    value_error = raised_member("S-value", "ValueError", path="jit-grad")
    a = write_folder(tmp_path / "a", run_summary("1:0/1", 5, 10.0), [bug("KT", [type_error, wrong])])
    b = write_folder(tmp_path / "b", run_summary("2:0/1", 5, 10.0), [bug("KV", [value_error, wrong])])
    bugs = merge(tmp_path / "m", [a, b]).bugs
    groups = [{m.signature for m in b.members} for b in bugs]
    assert not any({"S-type", "S-value"} <= g for g in groups)
    assert sorted(s for g in groups for s in g) == ["S-type", "S-value", "S-values"]  # one finding is in one bug


def test_bugs_raised_at_two_frames_stay_apart_though_they_share_a_member(tmp_path):
    """Two exceptions of one type raised at two places in Thunder are two faults: merge keeps them
    apart by frame, as the campaign does (``joining.kept_apart``)."""
    wrong = member("S-values", 1)
    here = raised_member("S-here", "RuntimeError", frame="thunder/core/transforms.py:grad")
    there = raised_member("S-there", "RuntimeError", frame="thunder/core/prims.py:take_meta")
    a = write_folder(tmp_path / "a", run_summary("1:0/1", 5, 10.0), [bug("KH", [here, wrong])])
    b = write_folder(tmp_path / "b", run_summary("2:0/1", 5, 10.0), [bug("KT", [there, wrong])])
    bugs = merge(tmp_path / "m", [a, b]).bugs
    groups = [{m.signature for m in b.members} for b in bugs]
    assert not any({"S-here", "S-there"} <= g for g in groups)
    assert sorted(s for g in groups for s in g) == ["S-here", "S-there", "S-values"]  # one finding is in one bug


def test_bugs_of_two_faulty_placements_stay_apart_though_a_member_shows_under_both(tmp_path):
    """Run a joined a finding that symcall and a planted fault both show into symcall's bug, run b
    into the planted fault's: merge joins each run's bug with one of them, never all three, and a
    joined bug is under the placements every record of it lists."""
    both = member("S-both", 1, malformed("thunderfx"))
    a = write_folder(tmp_path / "a", run_summary("1:0/1", 5, 10.0), [bug("KS", [member("S-sym", 1), both])])
    b = write_folder(
        tmp_path / "b", run_summary("2:0/1", 5, 10.0),
        [bug("KP", [member("S-planted", 1), both], placements=["planted"], placement="planted"),
         bug("KS2", [member("S-sym", 2)], program=TWO_OPS, placements=["symcall", "planted"])],
    )  # fmt: skip
    bugs = merge(tmp_path / "m", [a, b]).bugs
    assert sorted(b.placements for b in bugs) == [("planted",), ("symcall",)]
    assert sorted(b.placement for b in bugs) == ["planted", "symcall"]


def test_merging_is_idempotent_and_order_independent(shards, tmp_path):
    a, b = shards
    ab, ba = merge(tmp_path / "ab", [a, b]), merge(tmp_path / "ba", [b, a])
    merge(tmp_path / "ab_b", [tmp_path / "ab", b])
    merge(tmp_path / "ab_ab", [tmp_path / "ab", tmp_path / "ba"])
    merge(tmp_path / "a_ab", [a, tmp_path / "ab"])
    expected = comparable(tmp_path / "ab")
    for other in ("ba", "ab_b", "ab_ab", "a_ab"):
        assert comparable(tmp_path / other) == expected, other
    assert ab.summary.programs == ba.summary.programs == 30


def test_one_run_seen_twice_counts_once_keeping_the_copy_with_more_programs(tmp_path):
    early = write_folder(tmp_path / "early", run_summary("3:0/1", 4, 10.0), [bug("K", [member("S", 1)])])
    late = write_folder(tmp_path / "late", run_summary("3:0/1", 9, 20.0), [bug("K", [member("S", 5)])])
    for order in ([early, late], [late, early]):
        merged = merge(tmp_path / f"m-{order[0].name}", order)
        assert merged.summary.programs == 9 and merged.bugs[0].count == 5


def test_a_run_without_an_id_is_a_usage_error(tmp_path):
    """Merge counts each run once by its id, which every campaign writes (``test_findings``: one
    without a seed too): a summary without one was not written by this fuzzdce."""
    unseeded = write_folder(tmp_path / "unseeded", {**run_summary("4:0/1", 2, 1.0), "run_id": None}, [])
    with pytest.raises(UsageError, match="no run id"):
        merge(tmp_path / "m", [unseeded])


def test_exit_code_known_file_and_markdown(shards, tmp_path, capsys):
    a, b = shards
    md = tmp_path / "summary.md"
    assert main(["merge", str(tmp_path / "m"), str(a), str(b), "--markdown", str(md)]) == 1
    out = capsys.readouterr().out
    assert "regressions (the reference passes), new: 1 bug" in out and f"bug {S2_ID}" in out
    text = md.read_text()
    assert text.startswith("# fuzzdce: 1 new regression") and "```python\n" + ONE_OP.rstrip() in text
    assert text.index("regressions, known") < text.index("shared (the reference") < text.index("30 programs")
    known = tmp_path / "known.json"
    known.write_text(json.dumps([{"signature": "S1", "reason": "filed as #1"}]))  # a member's signature: not the bug's identity
    assert main(["merge", str(tmp_path / "m2"), str(a), str(b), "--known", str(known)]) == 1
    known.write_text(json.dumps([{"signature": S2_CAUSE, "reason": "filed as #1"}]))  # the bug's key
    assert main(["merge", str(tmp_path / "m3"), str(a), str(b), "--known", str(known)]) == 0
    summary = json.loads((tmp_path / "m3" / "summary.json").read_text())
    assert summary["bugs"]["regression"][0]["known"] == "filed as #1" and summary["new_regressions"] == 0


def test_a_merged_folder_serves_issue_and_bug_folders(shards, tmp_path):
    a, b = shards
    merged = merge(tmp_path / "m", [a, b])
    assert len(bug_folders(tmp_path / "m")) == 2
    body = issue_markdown(tmp_path / "m" / merged.bugs[0].id)
    assert "torch.add(v0, v0)" in body and "10 occurrences" in body


def test_bad_input_is_a_usage_error_and_exit_code_2(shards, tmp_path, capsys):
    a, _ = shards
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="neither summary.json nor bug folders"):
        merge(tmp_path / "m", [tmp_path / "empty"])
    with pytest.raises(UsageError, match="also an input"):
        merge(a, [a])
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_saved_traces_leave_out_pass_times_so_two_runs_of_one_program_save_the_same_text():
    """Thunder heads a trace with its pass's wall time: two runs (the shards a merge joins, or the
    reference beside the placement) differ in that line alone, and a trace diff must not show it."""
    from fuzzdce.results.store import trace_diff

    def trace(ms, symbol="ltorch.add(t0, t0)"):
        return f"# Constructed by Transform for execution (took {ms} milliseconds)\ndef computation(t0):\n  t1 = {symbol}\n"

    assert trace_diff([("jit forward 0", trace(14))], [("jit forward 0", trace(7))], "symcall") == ""
    changed = trace_diff([("jit forward 0", trace(14))], [("jit forward 0", trace(7, "ltorch.sub(t0, t0)"))], "symcall")
    assert "ltorch.sub" in changed and "milliseconds" not in changed


def test_writers_of_one_bug_at_once_never_fail_and_leave_one_whole_traces_folder(tmp_path):
    """Lanes share a findings folder, and two lanes that found one bug write its traces at once: a
    writer that removed the folder while the other wrote into it crashed a lane, losing its report."""
    import threading

    from fuzzdce.results.store import write_traces

    errors = []

    def writer(n):
        try:
            for _ in range(30):
                write_traces(tmp_path / "traces", {"stock": [(f"jit forward {i}", f"trace {n}\n") for i in range(5)]})
        except Exception as e:  # noqa: BLE001 (any error fails the test)
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces"]
    texts = {p.read_text() for p in (tmp_path / "traces" / "stock").iterdir()}
    assert len(list((tmp_path / "traces" / "stock").iterdir())) == 5 and len(texts) == 1


def test_a_lane_rewriting_its_bugs_removes_no_folder_another_lane_may_be_writing(tmp_path):
    """A lane's end rewrote the shared folder as if it knew every bug there, deleting another lane's
    bug folder while that lane wrote its traces (FileNotFoundError, a harness error). Only the
    merged campaign, which knows every bug once the lanes have ended, removes folders."""
    from fuzzdce.fuzzing.config import CampaignConfig
    from fuzzdce.results.store import BUG_FILE, FindingsFolder

    other_lanes_bug = tmp_path / "0123456789"
    other_lanes_bug.mkdir()
    (other_lanes_bug / BUG_FILE).write_text("{}")
    lane = CampaignConfig.of(findings_dir=str(tmp_path)).lane(0, 2)
    assert lane.output.owns_findings is False and CampaignConfig.of().output.owns_findings is True
    FindingsFolder(tmp_path).sync([], remove_others=lane.output.owns_findings)
    assert other_lanes_bug.exists()
    FindingsFolder(tmp_path).sync([], remove_others=True)
    assert not other_lanes_bug.exists()

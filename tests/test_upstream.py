"""Thunder upstream: the parent 8236d1c97, the merge bc399d4a3 (subsymbol DCE in ``Symbol.__call__``,
the thunderfx splitter fix) and main's 1e22aacb1, from ``../shared/thunder-upstream/`` (tar.gz
archives, fuzzed as archive builds beside the installed Thunder). Skipped when that folder is absent
(outside CI).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.model import STOCK
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.running.builds import BuildWorker
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.paths import DEFAULT_PATHS
from fuzzdce.running.placements import resolve

SNAPSHOTS = Path(__file__).resolve().parent.parent.parent / "shared" / "thunder-upstream"
PARENT, MERGE, MAIN = "8236d1c97", "bc399d4a3", "1e22aacb1"

# ``torch.clip`` with scalar bounds has no Thunder symbol there: thunderfx splits it off and hands it
# to ``torch._inductor.compile`` (fuzzdce's stand-in), which Thunder main calls with ``options=``.
CLIP_THEN_COS = Program(
    (TensorInput((3, 2)),),
    (Step("clip", "torch.clip({0}, -0.5, 0.5)", (Ref(0),)), Step("cos", "torch.cos({0})", (Ref(1),))),
    (2,),
    seed=1,
)


def snapshot(commit: str) -> str:
    """NAME=ARCHIVE of one snapshot (extracted once into the build cache)."""
    archive = SNAPSHOTS / f"thunder-{commit}.tar.gz"
    if not archive.is_file():
        pytest.skip(f"no Thunder snapshot {archive} (../shared is absent outside CI)")
    return f"{commit}={archive}"


@pytest.fixture(scope="module")
def every_path_on_every_snapshot():
    specs = [snapshot(c) for c in (PARENT, MERGE, MAIN)]
    evaluator = Evaluator()
    try:
        return {
            p.name: evaluator(p, [resolve(s) for s in specs], paths=DEFAULT_PATHS) for p in (DEAD_CODE_PROGRAM, CLIP_THEN_COS)
        }
    finally:
        evaluator.close()


@pytest.mark.parametrize("commit", [PARENT, MERGE, MAIN])
def test_every_path_runs_on_the_snapshot_as_on_the_installed_thunder(every_path_on_every_snapshot, commit):
    """No harness error (it would have stopped the evaluation), the thunderfx paths compile and run,
    and every path shows what the installed Thunder shows, nothing more."""
    for program, evaluations in every_path_on_every_snapshot.items():
        build = evaluations[commit]
        assert set(build.outcomes) == set(DEFAULT_PATHS)
        for path in ("thunderfx", "thunderfx-dynamic"):
            outcome = build.outcomes[path]
            assert outcome.error is None and outcome.failure is None, (program, path, outcome.error, outcome.failure)
            assert outcome.calls["grad"].outputs, (program, path)
        shown = {(v.path, v.oracle) for v in build.violations}
        assert shown <= {(v.path, v.oracle) for v in evaluations[STOCK].violations}, (program, build.violations)


def doctor_of(spec: str) -> str:
    worker = BuildWorker(resolve(spec).build)
    try:
        return worker.doctor()
    finally:
        worker.close()


@pytest.mark.parametrize("commit", [MERGE, MAIN])
def test_doctor_knows_both_changes_are_native_from_the_merge_on(commit):
    text = doctor_of(snapshot(commit))
    assert re.search(r"subsymbol DCE in Symbol.__call__ +native", text), text
    assert re.search(r"proxies and symbol in one trace +native", text), text
    symcall_fixed = next(line for line in text.splitlines() if line.strip().startswith("symcall-fixed"))
    assert " native " in symcall_fixed, symcall_fixed  # it equals stock there


def test_doctor_on_the_parent_needs_both_patches():
    text = doctor_of(snapshot(PARENT))
    assert re.search(r"subsymbol DCE in Symbol.__call__ +absent", text), text
    assert re.search(r"proxies and symbol in one trace +absent", text), text
    symcall_fixed = next(line for line in text.splitlines() if line.strip().startswith("symcall-fixed"))
    assert "needs patch" in symcall_fixed


# Run with the parent first on the path, so that stock is the parent and the build is the merge.
MERGE_AGAINST_PARENT = """
import json, sys
import thunder
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.placements import resolve
from fuzzdce.core.program import Program, Ref, Step, TensorInput

program = Program(
    (TensorInput((3, 4)),),
    (Step("softmax", "torch.softmax({0}, 1)", (Ref(0),)), Step("sum", "torch.sum({0}, 0)", (Ref(1),))),
    (2,),
    seed=1,
)
evaluator = Evaluator()
try:
    evaluation = evaluator(program, [resolve(sys.argv[1])], paths=["jit", "jit-symbolic"])["merged"]
finally:
    evaluator.close()
print(json.dumps({
    "stock": thunder.__file__,
    "activity": {p: sorted(o.dce_activity.items()) for p, o in evaluation.outcomes.items()},
    "violations": [str(v) for v in evaluation.violations],
}))
"""


def test_the_merge_shows_dce_activity_against_its_parent_and_dce_sound_passes():
    """What bc399d4a3 changed, measured: subsymbols removed under symbolic values (its duplicated
    ``shape``/``eq`` queries), none of them live."""
    parent, merge = snapshot(PARENT), snapshot(MERGE)
    parent_dir = resolve(parent).build.path[0]
    root = Path(__file__).resolve().parent.parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([parent_dir, str(root)])}
    done = subprocess.run(
        [sys.executable, "-c", MERGE_AGAINST_PARENT, merge.replace(f"{MERGE}=", "merged=", 1)],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["stock"].startswith(parent_dir)
    assert found["activity"]["jit-symbolic"], found  # the merge removes subsymbols the parent keeps
    assert found["violations"] == [], found


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow


MINIMUM = Program(
    (TensorInput((3,)), TensorInput((3,))), (Step("minimum", "torch.minimum({0}, {1})", (Ref(0), Ref(1))),), (2,), seed=1
)


@pytest.mark.slow
def test_run_with_thunder_fuzzes_a_snapshot_as_stock_and_names_its_commit(tmp_path):
    """``fuzzdce run --thunder ARCHIVE``: the snapshot is stock (fuzzdce starts again with it first on
    PYTHONPATH), and the report names its version and commit (from the archive's header), for the
    campaign and for each bug."""
    archive = snapshot(MAIN).split("=", 1)[1]
    env = {**os.environ, "FUZZDCE_BUILD_CACHE": str(tmp_path / "cache")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    command = [sys.executable, "-m", "fuzzdce", "run", "--thunder", archive, "--placement", "stock", "--path", "jit-grad"]
    command += [
        "--op",
        "minimum",
        "--max-examples",
        "2",
        "--jobs",
        "1",
        "--seed",
        "1",
        "--database",
        "none",
        "--findings",
        str(tmp_path / "f"),
    ]
    run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    main_line = f"thunder 0.2.7.dev0 at {tmp_path / 'cache'}/archive-"
    assert (
        f"reference: stock = {main_line}" in run.stdout and ", git 1e22aacb1aef (archive thunder-1e22aacb1.tar.gz)" in run.stdout
    )
    assert f"    shown on: {main_line}" in run.stdout and "(archive thunder-1e22aacb1.tar.gz) (as stock)" in run.stdout
    bug = next((tmp_path / "f").glob("*/bug.json"))
    assert "git 1e22aacb1aef" in json.loads(bug.read_text())["thunders"]["stock"]

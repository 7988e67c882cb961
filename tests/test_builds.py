"""Another Thunder build as a placement: a copy of the installed Thunder with one line changed (its
torch executor runs ``add`` as ``torch.sub``), put first on a worker's path, is fuzzed against the
installed Thunder. The fault shows under that build only, shrunk, with a reproducer selecting it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import thunder
import torch
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import config_from, parser
from fuzzdce.core.errors import UsageError
from fuzzdce.core.model import EAGER, STOCK, Outcome
from fuzzdce.core.portable_trace import PortableTrace
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.replay import replay_bug
from fuzzdce.results.store import BUG_FILE, REPRO_FILE
from fuzzdce.running import buildworker
from fuzzdce.running.builds import BuildRequest, BuildWorker, build_specs, parse_build
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import resolve
from fuzzdce.running.sandbox import SandboxedJobs

PLANTED_LINE = ('add = _register_torch_operation("add")', 'add = _register_torch_operation("sub")')


@pytest.fixture(scope="module")
def planted_build(tmp_path_factory) -> str:
    """NAME=DIR of a copy of the installed Thunder whose torch executor computes add as sub."""
    root = tmp_path_factory.mktemp("planted-thunder")
    shutil.copytree(Path(thunder.__file__).parent, root / "thunder", ignore=shutil.ignore_patterns("__pycache__"))
    torchex = root / "thunder" / "executors" / "torchex.py"
    source = torchex.read_text()
    assert source.count(PLANTED_LINE[0]) == 1
    torchex.write_text(source.replace(*PLANTED_LINE))
    return f"planted={root}"


# Appended to the copy's thunder/core/transform_common.py: after every DCE, the first subsymbol of
# each decomposition that a later sibling reads is dropped (``planted:dce_drops_live`` as a build).
DROPS_LIVE = """

# --- planted by fuzzdce's tests: a DCE that drops a live subsymbol -----------------------------------
_planted_dce = dce


def _planted_drop_first_read(subs):
    for i, s in enumerate(subs):
        outs = {o.name for o in s.flat_proxy_outs}
        read = any(outs & {a.name for a in later.flat_proxy_args} for later in subs[i + 1 :])
        if read and not has_tags(s, {prims.OpTags.DONT_DCE, prims.OpTags.IN_PLACE}):
            return subs[:i] + subs[i + 1 :]
    return subs


def _planted_rebuild(bsym):
    if not bsym.subsymbols:
        return bsym
    return bsym.from_bsym(subsymbols=[_planted_rebuild(s) for s in _planted_drop_first_read(list(bsym.subsymbols))])


def dce(trace, *args, **kwargs):
    result = _planted_dce(trace, *args, **kwargs)
    result.bound_symbols = [_planted_rebuild(b) for b in result.bound_symbols]
    return result
"""


@pytest.fixture(scope="module")
def drops_live_build(tmp_path_factory) -> str:
    """NAME=DIR of a copy of the installed Thunder whose DCE drops a live subsymbol."""
    root = tmp_path_factory.mktemp("drops-live-thunder")
    shutil.copytree(Path(thunder.__file__).parent, root / "thunder", ignore=shutil.ignore_patterns("__pycache__"))
    module = root / "thunder" / "core" / "transform_common.py"
    source = module.read_text()
    assert "\ndef dce(" in source and "has_tags" in source
    module.write_text(source + DROPS_LIVE)
    return f"dropslive={root}"


@pytest.mark.slow
def test_a_build_whose_dce_drops_a_live_subsymbol_is_caught_by_dce_sound(drops_live_build):
    """The build's traces come back portable and are aligned with stock's here: DCE activity and
    ``dce-sound`` work for a build as for a patch placement (``planted:dce_drops_live``)."""
    evaluator = Evaluator()
    try:
        evaluations = evaluator(DEAD_CODE_PROGRAM, [resolve(drops_live_build)], paths=["jit"], timeout=60.0)
    finally:
        evaluator.close()
    build = evaluations["dropslive"]
    assert evaluations[STOCK].violations == []
    sound = [v for v in build.violations if v.oracle == "dce-sound"]
    assert sound and any("read by kept" in v.key for v in sound), build.violations
    assert build.outcomes["jit"].dce_activity  # what the build changed, measured against stock


@pytest.mark.slow
def test_a_build_runs_in_its_own_process_with_its_own_thunder(planted_build):
    placement = resolve(planted_build)
    worker = BuildWorker(placement.build)
    try:
        text = worker.doctor()
        reference = Outcome(EAGER, STOCK)
        result = worker.run(BuildRequest(DEAD_CODE_PROGRAM, "jit", "planted", 60.0, reference))
    finally:
        worker.close()
    assert placement.build.path[0] in text  # the build's Thunder, not this process's
    outputs = result.outcome.calls["plain"].outputs
    assert outputs and all(hasattr(o, "dtype") for o in outputs)  # tensors come back for the oracles here


@pytest.mark.slow
def test_outputs_of_a_build_are_compared_here_with_eager_and_stock(planted_build):
    evaluator = Evaluator()
    try:
        evaluations = evaluator(DEAD_CODE_PROGRAM, [resolve(planted_build)], paths=["jit"], timeout=60.0)
    finally:
        evaluator.close()
    assert evaluations[STOCK].violations == []
    assert {v.oracle for v in evaluations["planted"].violations} >= {"outputs"}


def test_a_build_workers_answer_holds_portable_traces_and_no_violation_for_a_sound_thunder():
    """What a build's child answers, computed in this process with the installed Thunder (no child
    started): the outcome with its traces portable, and the trace oracles' violations, none here."""
    reference = run_path(EAGER, DEAD_CODE_PROGRAM, resolve(STOCK), timeout=60.0)
    result = buildworker.answer(BuildRequest(DEAD_CODE_PROGRAM, "jit", "same", 60.0, reference))
    assert result.outcome.error is None and result.trace_violations == []
    assert result.outcome.traces and all(isinstance(t, PortableTrace) for _, t in result.outcome.traces)


@pytest.mark.slow
def test_the_same_thunder_run_by_another_python_process_shows_nothing():
    """NAME=PYTHON, here this very interpreter: outcomes that crossed processes compare as equal as
    in-process ones (no oracle fires on a build identical to the reference)."""
    evaluator = Evaluator()
    try:
        evaluations = evaluator(DEAD_CODE_PROGRAM, [resolve(f"same={sys.executable}")], paths=["jit", "thunderfx"])
    finally:
        evaluator.close()
    assert evaluations["same"].violations == [] and evaluations[STOCK].violations == []
    assert evaluations["same"].outcomes["thunderfx"].calls["grad"].grads is not None
    for outcome in evaluations["same"].outcomes.values():  # traces compared with stock's: nothing changed
        assert outcome.traces and all(isinstance(t, PortableTrace) for _, t in outcome.traces)
        assert outcome.dce_activity == {} and outcome.dce_not_compared == []


@pytest.mark.slow
def test_a_build_worker_recycles_after_n_jobs_and_its_results_do_not_change():
    """A build's child is recycled like a sandbox's, between jobs: no failure, the same outcome
    from the fresh child as from the one that ran the jobs before (here the build is this Python)."""
    lines = []
    worker = BuildWorker(resolve(f"same={sys.executable}").build, recycle_jobs=2, recycle_rss_mb=0, log=lines.append)
    request = BuildRequest(DEAD_CODE_PROGRAM, "jit", "same", 60.0, Outcome(EAGER, STOCK))
    try:
        results = [worker.run(request) for _ in range(3)]  # two in the first child, one in the next
    finally:
        worker.close()
    assert worker.recycled == 1 and worker.worker.restarts == 0
    assert len(lines) == 1 and "recycled after 2 jobs" in lines[0], lines
    first, *later = [r.outcome for r in results]
    for outcome in later:
        assert outcome.failure is None and outcome.error is None
        # Structure, names and keep-tags, as stock's are compared (the printed source's file name
        # differs from process to process).
        assert outcome.traces == first.traces
        for name, call in first.calls.items():
            assert all(torch.equal(a, b) for a, b in zip(call.outputs or (), outcome.calls[name].outputs or (), strict=True))
    assert all(r.trace_violations == results[0].trace_violations for r in results)


@pytest.mark.slow
def test_a_sandboxed_job_runs_a_build_in_a_process_of_its_own_too(planted_build):
    """Lanes run jobs in a sandboxed worker; its jobs under a build go on to the build's process."""
    evaluator = Evaluator(SandboxedJobs())
    try:
        evaluations = evaluator(DEAD_CODE_PROGRAM, [resolve(planted_build)], paths=["jit"], timeout=60.0)
    finally:
        evaluator.close()
    assert evaluations[STOCK].violations == []
    assert "outputs" in {v.oracle for v in evaluations["planted"].violations}


@pytest.fixture(scope="module")
def planted_campaign(planted_build, tmp_path_factory):
    folder = tmp_path_factory.mktemp("findings")
    # A few ops, the planted one among them, so that it is drawn whatever the generator's other choices.
    ops = ("add", "mul", "abs", "exp", "cos", "sum_all")
    config = CampaignConfig.of(
        (STOCK, planted_build), ("jit",), max_examples=12, seed=0, findings_dir=str(folder), timeout=60.0, ops=ops
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    return campaign, folder


@pytest.mark.slow
def test_the_planted_fault_shows_under_that_build_only_and_shrunk(planted_campaign):
    campaign, _ = planted_campaign
    induced = [f for f in campaign.store if f.violation.oracle == "outputs" and f.verdict == "regression"]
    assert induced, [f.signature for f in campaign.store]
    assert all(f.placements == ("planted",) for f in induced)
    assert min(f.program.n_ops for f in induced) == 1
    assert all(f.confirmed for f in induced)


@pytest.mark.slow
def test_the_reproducer_selects_the_build(planted_campaign, planted_build):
    campaign, folder = planted_campaign
    bug = next(b for b in campaign.ledger.bugs() if b.verdict == "regression" and "outputs" in b.oracles())
    finding_folder = folder / bug.id
    record = json.loads((finding_folder / BUG_FILE).read_text())
    assert record["builds"] == {"planted": planted_build}
    script = finding_folder / REPRO_FILE
    assert repr(planted_build) in script.read_text()
    under_build = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert under_build.returncode == 1 and "FAIL outputs" in under_build.stdout, under_build.stdout + under_build.stderr
    under_stock = subprocess.run(
        [sys.executable, str(script), "--placement", "stock"], capture_output=True, text=True, timeout=300
    )
    assert under_stock.returncode == 0, under_stock.stdout + under_stock.stderr
    replayed = replay_bug(finding_folder, [resolve(planted_build)])
    assert replayed.failing == ["planted"] and replayed.passing == [STOCK]


@pytest.mark.slow
def test_run_with_builds_only_compares_stock_with_them(planted_build):
    config = config_from(parser().parse_args(["run", "--build", planted_build, "--path", "jit"]))
    assert [p.name for p in config.resolved_placements()] == [STOCK, "planted"]
    both = config_from(parser().parse_args(["run", "--placement", "symcall", "--build", planted_build]))
    assert both.scope.placements == ("symcall", planted_build)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("x=/nonexistent", "neither a directory"),
        ("=/tmp", "NAME=DIR"),
        ("x=" + str(Path(__file__).parent), "no thunder/__init__.py"),
    ],
)
def test_a_bad_build_says_what_to_give(spec, message):
    with pytest.raises(UsageError, match=message):
        parse_build(spec)


def test_a_campaign_names_each_build_by_its_spec_and_refuses_two_builds_under_one_name():
    same, other = resolve(f"same={sys.executable}"), resolve("same=/bin/sh")
    assert build_specs([resolve(STOCK), same]) == {"same": f"same={sys.executable}"}
    with pytest.raises(UsageError, match="give the other build another name"):
        build_specs([same, other])


@pytest.mark.slow
def test_with_a_build_every_process_hashes_alike():
    """Thunder's traces depend on the hash seed (``update_aliases`` orders its arguments by set
    iteration), so ``fuzzdce`` with a build starts again under ``PYTHONHASHSEED=0`` when it is unset,
    and the build's worker inherits it: stock's traces and the build's compare."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}
    environment["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-m", "fuzzdce.cli", "doctor", "--build", f"samehash={sys.executable}"],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seeds = [line.split()[1] for line in done.stdout.splitlines() if line.strip().startswith("hashseed")]
    assert seeds == ["0", "0"], done.stdout  # this process, then the build's worker

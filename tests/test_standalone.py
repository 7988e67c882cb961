"""The standalone reproducer of ``fuzzdce issue`` (torch and Thunder only) and upstream references.

Each script runs in a process that cannot import fuzzdce (``python -S``: no ``.pth`` file of the
venv is read, so neither is fuzzdce's editable install; torch and Thunder come from site-packages
on ``PYTHONPATH``). It must fail on a Thunder showing the bug and pass on one that does not: a
planted fault is the bug made absent or present at will (stock Thunder, or Thunder with the cos
gradient's sign flipped by a module that imports Thunder alone); a real Thunder 0.2.6 bug (no VJP
for ``minimum``) shows that a shared bug's script fails on the Thunder installed, under python and
pytest, and passes once the missing grad rule is registered.
"""

import dataclasses
import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from textwrap import indent

import pytest
import torch
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.cli import main
from fuzzdce.core.model import ScriptCheck
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.html_report import REPORT_FILE, write_report
from fuzzdce.results.issue import issue_markdown, script_of_folder
from fuzzdce.results.records import Upstream
from fuzzdce.results.report import render
from fuzzdce.results.reproducers import TO_DEVICE, bug_case, compile_call, fails, minified_case, standalone_script
from fuzzdce.results.store import load_known, read_bug
from fuzzdce.running.paths import PATHS

# A real bug of Thunder 0.2.6 (and main): torch.minimum has no gradient rule in thunder.jit.
MINIMUM = Program(
    (TensorInput((3,)), TensorInput((3,))),
    (Step("minimum", "torch.minimum({0}, {1})", (Ref(0), Ref(1))),),
    (2,),
    seed=1,
)

# The planted fault without fuzzdce: what a Thunder carrying the bug is, imported before the script runs.
FLIPPED_COS = """
from thunder.core import prims, transforms
from thunder.core.langctxs import Languages, langctx


def flipped(a):
    forward = prims.cos(a)
    transforms.put_grad(a, transforms.get_grad(forward) * prims.sin(a))
    return forward


transforms._grad_fn_map[prims.PrimIDs.COS] = langctx(Languages.TORCH)(flipped)
"""


# The real bug fixed, without fuzzdce: minimum's grad rule, written as Thunder writes maximum's.
MINIMUM_GRAD = """
from thunder.core import prims
from thunder.core.transforms import get_grad, put_grad, register_grad


def minimum_grad(a, b, /):
    forward = prims.minimum(a, b)
    g = get_grad(forward)
    shared = prims.where(a == b, g / 2, g)  # ties split the gradient, as maximum's rule does
    put_grad(a, prims.where(a > b, 0.0, shared))
    put_grad(b, prims.where(b > a, 0.0, shared))
    return forward


register_grad(prims.PrimIDs.MINIMUM, minimum_grad)
"""


def observed(folder: Path, placements, program, paths, **settings):
    """``program`` observed by a campaign writing to ``folder``; its bugs."""
    config = CampaignConfig.of(tuple(placements), tuple(paths), findings_dir=str(folder), **settings)
    campaign = Campaign(config, log=lambda line: None)
    campaign.observe(program)
    return campaign, campaign.ledger.bugs()


# Printed by a script's process where fuzzdce could be imported once the script had imported
# torch and Thunder and run (``run_without_fuzzdce``).
FUZZDCE_IMPORTABLE = "fuzzdce could be imported where the script ran"
AFTER_THE_SCRIPT = f"""
import importlib.util, sys
if importlib.util.find_spec("fuzzdce") is not None or "fuzzdce" in sys.modules:
    print({FUZZDCE_IMPORTABLE!r}, file=sys.stderr)
"""


def run_without_fuzzdce(script: Path, *, plant: str = "", pytest_it: bool = False) -> subprocess.CompletedProcess:
    """``script`` in a process where fuzzdce cannot be imported: ``python -S``, site-packages on the
    path for torch and Thunder; ``plant``: a module run first (a Thunder carrying a fault). Run as a
    script, its process then checks that fuzzdce cannot be imported there, torch and Thunder
    imported by the script (whether it passed or failed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # fuzzdce's pytest plugin is an entry point
    if pytest_it:
        command = [sys.executable, "-S", "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    else:
        run = f"import runpy\ntry:\n    runpy.run_path({str(script)!r}, run_name='__main__')\nfinally:\n{indent(AFTER_THE_SCRIPT, '    ')}"
        command = [sys.executable, "-S", "-c", f"{plant}\n{run}"]
    done = subprocess.run(command, cwd=script.parent, env=env, capture_output=True, text=True, timeout=600)
    assert FUZZDCE_IMPORTABLE not in done.stderr, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def shared_bug(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    _, bugs = observed(folder, ["stock"], MINIMUM, ["jit-grad"])
    (bug,) = bugs
    return folder, bug


@pytest.fixture(scope="module")
def planted_bug(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted")
    _, bugs = observed(folder, ["stock", "planted:cos_grad_flipped"], DEAD_CODE_PROGRAM, ["jit-grad"])
    (bug,) = [b for b in bugs if b.verdict == "regression"]
    return folder, bug


def written_script(folder: Path, bug, tmp_path: Path) -> Path:
    script = tmp_path / f"repro_{bug.id}.py"
    script.write_text(script_of_folder(folder / bug.id))
    return script


@pytest.mark.slow
def test_fuzzdce_cannot_be_imported_where_scripts_run(tmp_path):
    """Each script run as a script is followed, in its process, by a check that fuzzdce cannot be
    imported there (``run_without_fuzzdce``, in the script tests below): a process of its own here
    would import torch and Thunder once more. That check fails where fuzzdce can be imported."""
    probe = tmp_path / "probe.py"
    probe.write_text("import sys\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)  # fuzzdce importable: the check must say so
    check = f"import runpy\nrunpy.run_path({str(probe)!r})\n{AFTER_THE_SCRIPT}"
    done = subprocess.run([sys.executable, "-S", "-c", check], env=env, capture_output=True, text=True, timeout=120)
    assert FUZZDCE_IMPORTABLE in done.stderr, done.stderr[-2000:]


@pytest.mark.slow
def test_a_planted_bugs_script_fails_on_a_thunder_carrying_it_and_passes_on_one_without(planted_bug, tmp_path):
    folder, bug = planted_bug
    script = written_script(folder, bug, tmp_path)
    text = script.read_text()
    assert "import fuzzdce" not in text and "from fuzzdce" not in text
    assert "patch placement planted:cos_grad_flipped" in text
    assert len(text.splitlines()) <= 40, text
    carrying = run_without_fuzzdce(script, plant=FLIPPED_COS)
    assert carrying.returncode == 1, carrying.stdout + carrying.stderr[-3000:]
    assert "AssertionError: the gradient of v0 differs from eager's: Tensor-likes are not close!" in carrying.stderr
    without = run_without_fuzzdce(script)
    assert without.returncode == 0, without.stdout + without.stderr[-3000:]


@pytest.mark.slow
def test_a_real_shared_bugs_script_fails_on_thunder_as_installed_and_passes_once_fixed(shared_bug, tmp_path):
    folder, bug = shared_bug
    script = written_script(folder, bug, tmp_path)
    assert len(script.read_text().splitlines()) <= 40, script.read_text()
    run = run_without_fuzzdce(script)
    assert run.returncode == 1, run.stdout + run.stderr[-3000:]
    assert "minimum" in run.stderr.splitlines()[-1], run.stderr[-3000:]  # Thunder's exception, naming the op
    under_pytest = run_without_fuzzdce(script, pytest_it=True)
    assert under_pytest.returncode == 1 and "1 failed" in under_pytest.stdout, under_pytest.stdout[-3000:]
    fixed = run_without_fuzzdce(script, plant=MINIMUM_GRAD)  # the same Thunder, the rule it lacks added
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr[-3000:]


def test_the_issue_text_lists_each_failing_path_once_and_holds_the_script(planted_bug):
    folder, bug = planted_bug
    text = issue_markdown(folder / bug.id)
    actual = text.split("## Actual", 1)[1].split("## Reproduce", 1)[0]
    assert actual.count("- `jit-grad`") == 1
    assert '```python\n"""grads on jit-grad' in text and "def test_repro():" in text
    assert "must carry that patch" in text and "repro.py" in text
    assert main(["issue", bug.id, "--findings", str(folder), "--script"]) == 0


def test_an_upstream_reference_goes_from_the_known_file_to_the_report_bug_json_and_page(shared_bug, tmp_path, capsys):
    _, bug = shared_bug
    known_file = tmp_path / "known.json"
    upstream = {"number": 1234, "title": "minimum has no grad rule"}
    known_file.write_text(json.dumps([{"signature": bug.id, "reason": "filed", "upstream": upstream}]))
    folder = tmp_path / "f"
    campaign, (again,) = observed(folder, ["stock"], MINIMUM, ["jit-grad"], known=load_known(known_file))
    record = read_bug(folder / again.id)
    assert record.upstream == Upstream(1234, "minimum has no grad rule")
    assert json.loads((folder / again.id / "bug.json").read_text())["upstream"]["number"] == 1234
    campaign.write_summary()
    summary = campaign.summary()
    report = render(summary, folder)
    assert (
        f"--- bug {again.id} under stock   known upstream: Lightning-AI/lightning-thunder#1234 (minimum has no grad rule)"
        in report
    )
    write_report(folder)
    page = (folder / REPORT_FILE).read_text()
    assert 'href="https://github.com/Lightning-AI/lightning-thunder/issues/1234"' in page
    assert "- known upstream: Lightning-AI/lightning-thunder#1234" in issue_markdown(folder / again.id)
    # An entry without one still reads, as before.
    known_file.write_text(json.dumps([{"signature": bug.id, "reason": "filed"}]))
    assert load_known(known_file)[bug.id] == "filed" and load_known(known_file)[bug.id].upstream is None


# --- the writer itself, in this process ---------------------------------------------------------------

# Bug 5af38b3fb8 of a default campaign: hstack of a 1-D input loses requires_grad under thunder.jit
# (Thunder 0.2.6 and main), so addcdiv's gradient through it is dropped.
HSTACK = Program(
    (TensorInput((1,), "float64"),),
    (
        Step("hstack", "torch.hstack([{0}, {0}])", (Ref(0),)),
        Step("addcdiv", "torch.addcdiv({0}, {1}, {0}, value=2.0)", (Ref(0), Ref(1))),
    ),
    (2,),
    seed=3,
)


@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("check", list(ScriptCheck))
def test_every_check_on_every_path_is_a_short_script_of_torch_and_thunder(path, check):
    case = minified_case(MINIMUM, path, None)
    text = standalone_script(dataclasses.replace(case, check=check))
    compile(text, "repro.py", "exec")
    assert "fuzzdce" not in text.split('"""', 2)[2] and "def test_repro():" in text
    assert len(text.splitlines()) <= (40 if not PATHS[path].device else 60), text


def test_the_compile_call_is_the_paths_own_return_expression():
    assert compile_call("jit") == (["import thunder"], "thunder.jit(program)")
    imports, call = compile_call("jit-torchcompile")
    assert "from thunder.executors.torch_compile import torch_compile_ex" in imports
    assert call == "thunder.jit(program, executors=[torch_compile_ex, *thunder.get_default_executors()])"
    assert compile_call("thunderfx-dynamic") == (["from thunder.dynamo import thunderfx"], "thunderfx(program, dynamic=True)")


def test_to_device_keeps_aliasing_strides_and_requires_grad():
    namespace = {"torch": torch, "DEVICE": "cpu"}
    exec(TO_DEVICE, namespace)
    base = torch.randn(4, 3).mT.detach().requires_grad_()
    inputs = [base, base[...], 2.0, torch.arange(6)[::2]]
    moved = namespace["to_device"](inputs)
    assert moved[0].untyped_storage().data_ptr() != base.untyped_storage().data_ptr()  # a copy
    assert moved[0].stride() == base.stride() and moved[0].is_leaf and moved[0].requires_grad
    assert moved[1].untyped_storage().data_ptr() == moved[0].untyped_storage().data_ptr()  # still a view of it
    assert moved[1].grad_fn is not None and moved[2] == 2.0 and moved[3].stride() == (2,)
    assert all(torch.equal(a, b) for a, b in zip(moved[:2] + moved[3:], inputs[:2] + inputs[3:]))


# hstack alone: its output does not require grad under Thunder, eager's does.
HSTACK_ALONE = HSTACK.prefix(0)


@pytest.mark.parametrize("program, check", [(HSTACK_ALONE, ScriptCheck.FLAGS), (HSTACK, ScriptCheck.GRADS)])
def test_a_path_with_a_device_moves_the_inputs_and_runs_eager_there(monkeypatch, program, check):
    """A path declaring a device (here the CPU, as a CUDA path would declare "cuda") runs eager and
    Thunder on the moved inputs; the real hstack bug still fails."""
    monkeypatch.setitem(PATHS, "jit-grad-device", dataclasses.replace(PATHS["jit-grad"], name="jit-grad-device", device="cpu"))
    text = standalone_script(dataclasses.replace(minified_case(program, "jit-grad-device", None), check=check))
    assert "DEVICE = 'cpu'" in text and "to_device(make_inputs(True))" in text
    assert fails(text) is True


def test_a_script_that_passes_once_fixed_is_told_from_one_that_fails():
    """``fails`` runs the script: hstack's flags differ; one sin's do not; a program eager rejects
    cannot be checked."""
    sine = Program((TensorInput((3,), "float64"),), (Step("sin", "torch.sin({0})", (Ref(0),)),), (1,))
    flags = dataclasses.replace(minified_case(HSTACK_ALONE, "jit-grad", None), check=ScriptCheck.FLAGS)
    assert fails(standalone_script(flags)) is True
    assert fails(standalone_script(dataclasses.replace(flags, program=sine.source(), inputs=sine.inputs_source()))) is False
    invalid = dataclasses.replace(HSTACK, inputs=(TensorInput((3,), "float64"),))  # (3,) and (6,) do not broadcast
    assert fails(standalone_script(dataclasses.replace(flags, program=invalid.source(), inputs=invalid.inputs_source()))) is None


def test_a_bugs_script_checks_what_the_finding_is_and_fails_here(tmp_path):
    """The hstack bug of a campaign: its script compares the gradient of the input (the finding), in
    at most 40 lines, and fails on this Thunder (ones_like cotangents show it)."""
    folder = tmp_path / "f"
    _, bugs = observed(folder, ["stock"], HSTACK, ["jit-grad"])
    (bug,) = bugs
    text = script_of_folder(folder / bug.id)
    assert "the gradient of v{i} differs from eager's" in text and "torch.ones_like" in text
    assert len(text.splitlines()) <= 40 and fails(text) is True


def test_a_bugs_script_checks_a_failure_its_smallest_program_shows():
    """A bug joined by one decision held a split on a 1-op program and a wrong gradient on a 4-op
    one; its script, of the 1-op program, checked the gradient (the first path and check) and
    passed while the bug was there. It checks what the smallest program shows."""
    from test_records import BUG, MEMBER

    elsewhere = dataclasses.replace(MEMBER, path="jit", oracle="grads", program="def program(v0):\n    return (v0,)\n")
    shown = dataclasses.replace(MEMBER, path="thunderfx", oracle="outputs", program=BUG.program, inputs=BUG.inputs)
    record = dataclasses.replace(BUG, members=(elsewhere, shown))
    case = bug_case(record)
    assert (case.path, case.oracle) == ("thunderfx", "outputs")
    assert bug_case(dataclasses.replace(record, members=(elsewhere,))).path == "jit"  # none shown: the first still

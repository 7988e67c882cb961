"""Paths on a device: inputs moved there as made (aliasing, strides, requires_grad), eager judged
on the same device, the environment told apart from Thunder, what Thunder prints kept with the
finding. Runs without a GPU, as CI must; the CUDA run itself is benchmarks/cuda.py's."""

import dataclasses
import sys

import pytest
import torch
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.errors import UsageError, why_the_machines
from fuzzdce.core.model import EAGER, FailureKind, Placement
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.fuzzing.config import Scope
from fuzzdce.running import paths
from fuzzdce.running.calls import transfer
from fuzzdce.running.evaluate import Evaluator, Job, LocalJobs
from fuzzdce.running.path_running import run_path
from fuzzdce.running.placements import resolve

STOCK = resolve("stock")


def inputs_as_made():
    """An input, a view of it (the generator's ``inputs[0][...]``), a strided and a transposed one."""
    base = torch.randn(3, 4, dtype=torch.float32).requires_grad_(True)
    strided = torch.randn(3, 8)[..., ::2].detach().requires_grad_(True)
    transposed = torch.randn(4, 3).mT.detach()
    return [base, base[...], strided, transposed, 2.5, torch.tensor([1, 2])]


@pytest.mark.parametrize(
    "where", [dict(floating=torch.float64), dict(device="meta"), dict(device="meta", floating=torch.float64)]
)
def test_transfer_keeps_strides_views_and_requires_grad(where):
    made = inputs_as_made()
    moved = transfer(made, **where)
    for before, after in zip(made[:4], moved[:4]):
        assert after.shape == before.shape and after.stride() == before.stride()
        assert after.storage_offset() == before.storage_offset()
        assert after.requires_grad == before.requires_grad
        assert after.dtype == where.get("floating", before.dtype)
        assert after.device == torch.device(where.get("device", "cpu"))
    assert moved[0].is_leaf and not moved[1].is_leaf, "the view is made again as a view, not a leaf"
    assert moved[1]._base is moved[0]
    assert moved[4] == 2.5 and moved[5].dtype == torch.int64


def test_transfer_copies_and_keeps_aliasing_between_inputs():
    made = inputs_as_made()
    moved = transfer(made, floating=torch.float64)  # a real copy: other bytes, other storage
    assert moved[0].untyped_storage().data_ptr() != made[0].untyped_storage().data_ptr()
    torch.testing.assert_close(moved[2], made[2].double())
    with torch.no_grad():
        moved[1].add_(1)  # a write through the view shows in its base, as in the inputs as made
    torch.testing.assert_close(moved[0], made[0].double() + 1)
    assert torch.equal(made[0], made[1]), "the inputs as made are untouched"


def test_gradients_reach_an_input_through_its_moved_view():
    made = inputs_as_made()
    moved = transfer(made, floating=torch.float64)
    (grad,) = torch.autograd.grad((moved[1] * 3).sum(), [moved[0]])
    torch.testing.assert_close(grad, torch.full((3, 4), 3.0, dtype=torch.float64))
    assert made[0].grad is None


def test_transfer_of_inputs_made_without_grad_makes_none_require_it():
    with torch.no_grad():
        made = [t.detach() if isinstance(t, torch.Tensor) else t for t in inputs_as_made()]
    made[1] = made[0][...]
    moved = transfer(made, floating=torch.float64)
    assert not any(isinstance(t, torch.Tensor) and t.requires_grad for t in moved)
    assert moved[1]._base is moved[0]
    moved[1].mul_(0)
    assert not moved[0].any()


VIEW_PROGRAM = Program(
    (TensorInput((2, 3)), TensorInput((2, 3), view_of=0)),
    (Step("atan", "torch.atan({0})", (Ref(1),)),),
    (2,),
    seed=3,
)


def test_eager_runs_on_the_device_it_is_asked_for(monkeypatch):
    import fuzzdce.running.calls as calls

    seen = []
    original = calls.transfer

    def recording(inputs, *, device=None, floating=None):
        seen.append(device)
        return original(inputs, device=device, floating=floating)

    monkeypatch.setattr(calls, "transfer", recording)
    eager = run_path(EAGER, VIEW_PROGRAM, STOCK, device="cpu")
    assert eager.device == "cpu" and eager.error is None
    assert set(seen) == {"cpu"} and len(seen) >= 2, "every call, the float64 twins too, on the device"
    assert eager.calls["grad"].grads is not None


class RecordingJobs(LocalJobs):
    """LocalJobs that notes the device of each eager run."""

    def __init__(self):
        super().__init__()
        self.eager_devices = []

    def eager_on(self, device, job):
        if device not in self.eager:
            self.eager_devices.append(device)
        return super().eager_on(device, job)


def test_a_path_on_a_device_is_judged_against_eager_on_that_device(monkeypatch):
    """jit-grad's twin on a device of its own (the CPU named, as a CUDA path names cuda): the
    evaluator runs eager there too, once, and the plain CPU path against eager as before."""
    twin = paths.on_device(paths.PATHS["jit-grad"], "cpu", "jit-on-device", lambda: "")
    monkeypatch.setitem(paths.PATHS, "jit-on-device", twin)
    jobs = RecordingJobs()
    evaluation = Evaluator(jobs)(VIEW_PROGRAM, [STOCK], paths=["jit-grad", "jit-on-device"])["stock"]
    assert jobs.eager_devices == [None, "cpu"]
    assert evaluation.outcomes["jit-on-device"].device == "cpu" and evaluation.violations == []
    assert jobs.eager["cpu"].device == "cpu" and jobs.eager[None].device is None


def test_eager_jobs_on_two_devices_are_two_jobs():
    from fuzzdce.running.evaluate import job_key

    cpu = Job(DEAD_CODE_PROGRAM, STOCK, EAGER, 60.0)
    assert job_key(cpu) != job_key(dataclasses.replace(cpu, device="cuda"))


# --- the environment is not Thunder ---------------------------------------------------------------


def test_cuda_paths_share_their_cpu_twins_definitions():
    for name, twin in (("jit-cuda", "jit-grad"), ("thunderfx-cuda", "thunderfx")):
        cuda, cpu = paths.PATHS[name], paths.PATHS[twin]
        assert cuda.device == "cuda" and cpu.device is None
        assert (cuda.compile, cuda.calls, cuda.collect, cuda.context) == (cpu.compile, cpu.calls, cpu.collect, cpu.context)
    assert paths.PATHS["jit-nvfuser"].device == "cuda"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA says")
def test_cuda_paths_are_unavailable_without_cuda_and_not_defaults():
    for name in ("jit-cuda", "thunderfx-cuda", "jit-nvfuser"):
        assert "CUDA is missing" in paths.PATHS[name].unavailable()
        assert name not in paths.default_paths()


def test_an_executor_that_does_not_load_makes_its_path_unavailable_with_the_loaders_words(monkeypatch, tmp_path):
    (tmp_path / "broken_executor.py").write_text("raise ImportError('undefined symbol: _ZN3c1013MessageLogger')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    why = paths.library_error("broken_executor")
    assert why == "ImportError: undefined symbol: _ZN3c1013MessageLogger"
    assert paths.library_error("no_such_module_here", "broken_executor").startswith("ImportError")
    assert paths.library_error("json") == ""
    broken = dataclasses.replace(paths.PATHS["jit"], name="jit-broken", unavailable=lambda: f"its executor does not load ({why})")
    monkeypatch.setitem(paths.PATHS, "jit-broken", broken)
    assert "jit-broken" not in paths.default_paths()
    with pytest.raises(UsageError, match="--path jit-broken cannot run here: its executor does not load .*undefined symbol"):
        Scope(paths=("jit-broken",)).check_runnable()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA says")
def test_run_with_a_cuda_path_without_cuda_exits_2_saying_so(capsys):
    from fuzzdce.cli import main

    assert main(["run", "--path", "jit-nvfuser", "--max-examples", "1"]) == 2
    err = capsys.readouterr().err
    assert "jit-nvfuser cannot run here" in err and "CUDA is missing" in err


def test_an_import_outside_thunder_failing_is_the_environments():
    try:
        import distutils_removed_from_this_python  # noqa: F401
    except ImportError as e:
        missing = e
    assert "importing distutils_removed_from_this_python failed" in why_the_machines(missing)
    try:
        raise RuntimeError("Thunder wrapped it") from missing
    except RuntimeError as wrapped:
        assert why_the_machines(wrapped)
    assert why_the_machines(ImportError("cannot import name 'x' from 'thunder.core'", name="thunder.core")) == ""
    assert why_the_machines(ValueError("no import here")) == ""


def jit_first_doing(name, action, *args):
    """A placement under which ``thunder.jit`` first calls ``action(*args)`` (what Thunder's own code
    may do: import a module, print, raise), then compiles as usual."""
    import contextlib

    @contextlib.contextmanager
    def placement():
        import thunder

        original = thunder.jit

        def jit(fn, *jit_args, **kwargs):
            action(*args)
            return original(fn, *jit_args, **kwargs)

        thunder.jit = jit
        try:
            yield
        finally:
            thunder.jit = original

    return Placement(name, placement)


def raise_(error):
    raise error


IMPORTING = Program((TensorInput((2,)),), (Step("sin", "torch.sin({0})", (Ref(0),)),), (1,), seed=1)


@pytest.mark.parametrize("missing", ["distutils", "nvfuser"])
def test_a_path_whose_import_fails_outside_thunder_is_no_finding(missing):
    """Thunder importing a module that is not there (as Thunder's own lazy imports do)."""
    outcome = run_path("jit-grad", IMPORTING, jit_first_doing("planted-import", __import__, f"{missing}_not_installed_here"))
    assert outcome.error is None, "not Thunder's exception"
    assert outcome.failure.kind == FailureKind.HARNESS
    assert outcome.failure.message.startswith("environment error on jit-grad")
    assert f"importing {missing}_not_installed_here failed" in outcome.failure.message


# --- what Thunder prints ----------------------------------------------------------------------------


def test_what_a_path_prints_is_the_outcomes_not_the_reports(capsys):
    def chatter():
        print("Encountered an exception while trying to compile the following program:")
        print("warning-like words", file=sys.stderr)

    outcome = run_path("jit-grad", IMPORTING, jit_first_doing("chatty", chatter))
    shown = capsys.readouterr()
    assert "Encountered" not in shown.out and "warning-like" not in shown.err
    assert "Encountered an exception" in outcome.printed and "warning-like words" in outcome.printed


def test_printed_output_goes_to_the_findings_folder_beside_the_traces():
    from fuzzdce.fuzzing.ledger import PRINTED, with_printed

    outcome = run_path("jit-grad", IMPORTING, STOCK)
    outcome.printed = "Thunder's words"
    assert with_printed(outcome)[-1] == (PRINTED, "Thunder's words")
    outcome.printed = ""
    assert all(label != PRINTED for label, _ in with_printed(outcome))


# --- on a CUDA machine (skipped elsewhere; benchmarks/results/cuda-*.txt has the run) ----------------

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
def test_transfer_to_cuda_keeps_values_strides_views_and_aliasing():
    made = inputs_as_made()
    moved = transfer(made, device="cuda")
    for before, after in zip(made[:4], moved[:4]):
        assert after.device.type == "cuda" and after.stride() == before.stride()
        torch.testing.assert_close(after.cpu(), before)
    assert moved[1]._base is moved[0]
    with torch.no_grad():
        moved[1].add_(1)
    torch.testing.assert_close(moved[0].cpu(), made[0] + 1)


@needs_cuda
@pytest.mark.parametrize("path", ["jit-cuda", "thunderfx-cuda"])
def test_a_view_input_on_cuda_gives_eagers_gradients(path):
    """The first CUDA run lost aliasing: atan of a view input got gradient 0.0 where eager's was not."""
    evaluation = Evaluator()(VIEW_PROGRAM, [STOCK], paths=[path])["stock"]
    assert evaluation.violations == [], [v.message for v in evaluation.violations]
    assert evaluation.outcomes[path].device == "cuda"


MIXED = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (
        Step("mul_cpu_scalar_tensor", "torch.mul({0}, torch.tensor(2.5))", (Ref(0),)),
        Step("add_cpu_scalar_value", "{0} + {1}.sum().cpu()", (Ref(2), Ref(1))),
        Step("cpu_round_trip", "{0}.cpu().to({0}.device)", (Ref(3),)),
    ),
    (4,),
    seed=4,
)


@needs_cuda
def test_a_mixed_device_program_runs_in_eager_on_cuda_and_is_judged_there():
    eager = run_path(EAGER, MIXED, STOCK, device="cuda")
    assert eager.error is None and eager.device == "cuda"
    outcome = run_path("jit-cuda", MIXED, STOCK)
    assert outcome.device == "cuda" and outcome.calls


# The mixes Thunder 0.2.6 gets right on the CPU (``x + y.sum().cpu()`` under grad is a Thunder bug:
# ``Tensor.cpu``'s automatic registration fails on the broadcast cotangent; docs/found-bugs.md).
SCALAR_AND_ROUND_TRIP = dataclasses.replace(
    MIXED, steps=(MIXED.steps[0], dataclasses.replace(MIXED.steps[2], args=(Ref(2),))), outputs=(3,)
)


def test_the_device_mixes_are_plain_arithmetic_on_the_cpu():
    evaluation = Evaluator()(SCALAR_AND_ROUND_TRIP, [STOCK], paths=["jit-grad", "thunderfx"])["stock"]
    assert evaluation.reference.error is None
    assert evaluation.violations == [], [v.message for v in evaluation.violations]


def test_a_device_out_of_memory_error_is_a_crash_not_an_exception_thunder_raised():
    outcome = run_path(
        "jit-grad",
        IMPORTING,
        jit_first_doing("planted-device-error", raise_, torch.OutOfMemoryError("CUDA out of memory. Tried to allocate")),
    )
    assert outcome.error is None and outcome.failure.kind == FailureKind.CRASH
    assert "ran out of memory" in outcome.failure.message


def test_a_run_that_loses_the_device_raises_for_its_worker_to_end(monkeypatch):
    import fuzzdce.running.path_running as path_running
    from fuzzdce.core.errors import DeviceLost, HarnessError

    twin = paths.on_device(paths.PATHS["jit-grad"], "cpu", "jit-lost", lambda: "")
    monkeypatch.setitem(paths.PATHS, "jit-lost", twin)
    monkeypatch.setattr(path_running, "device_lost", lambda device: "AcceleratorError: CUDA error: an illegal memory access")
    with pytest.raises(DeviceLost, match="jit-lost under stock lost the cpu context .*illegal memory access"):
        run_path("jit-lost", IMPORTING, STOCK)
    # In this process (no worker to replace) the campaign cannot go on: said as such, once.
    with pytest.raises(HarnessError, match="cannot use the device any more"):
        Evaluator()(IMPORTING, [STOCK], paths=["jit-lost"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what a machine without CUDA says")
def test_a_fuzz_test_on_a_cuda_path_without_cuda_is_skipped_saying_why(pytester):
    pytester.makepyfile(
        "from fuzzdce.testing import fuzz_test\ntest_on_gpu = fuzz_test(placements=['stock'], paths=['jit-cuda'])\n"
    )
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*--path jit-cuda cannot run here: CUDA is missing*"])

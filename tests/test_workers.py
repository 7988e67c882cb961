"""A hung, crashing or memory-hungry job becomes a JobFailure and the worker carries on, in a
spawned child and in one forked from a forkserver that imported torch and Thunder."""

import os

import pytest
from worker_jobs import run

from fuzzdce.core.model import FailureKind
from fuzzdce.running import workers
from fuzzdce.running.sandbox import CHILD_MODULES
from fuzzdce.running.workers import JobFailure, Worker


# A forked child's forkserver imports torch and Thunder once per test process: slow.
@pytest.fixture(params=[(), pytest.param(CHILD_MODULES, marks=pytest.mark.slow)], ids=["spawned", "forked"])
def worker(request):
    with Worker(run, memory_limit_mb=8192, preload=request.param) as w:
        w.start_ahead()
        assert w.child.start_method == ("forkserver" if request.param else "spawn"), workers.forkserver_differences(request.param)
        yield w


def test_results_come_back_and_the_child_is_reused(worker):
    assert worker.submit(("echo", [1, 2]), timeout=30) == [1, 2]
    first = worker.submit(("pid", None), timeout=30)
    assert worker.submit(("pid", None), timeout=30) == first


def test_a_hung_job_times_out_and_the_next_job_runs(worker):
    worker.submit(("echo", 0), timeout=30)  # child started
    failure = worker.submit(("sleep", 60), timeout=1)
    assert failure == JobFailure("timeout", "no result within 1 s")
    assert worker.submit(("echo", "after"), timeout=30) == "after"


@pytest.mark.parametrize("kind, signal_name", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_crashing_job_is_reported_with_its_signal(worker, kind, signal_name):
    failure = worker.submit((kind, None), timeout=30)
    assert isinstance(failure, JobFailure) and failure.kind == "crash"
    assert signal_name in failure.message
    assert worker.submit(("echo", 1), timeout=30) == 1
    assert worker.restarts == 1


def test_memory_is_bounded(worker):
    failure = worker.submit(("allocate", 16 << 10), timeout=30)  # 16 GB > 8 GB limit
    assert isinstance(failure, JobFailure) and "memory" in failure.message.lower()
    assert worker.submit(("allocate", 64), timeout=30) == 64 << 20


def test_an_exception_escaping_the_job_is_a_harness_failure_in_one_line(worker):
    """fuzzdce's jobs record what Thunder raises; one that escapes is fuzzdce's own error, not a crash."""
    failure = worker.submit(("raise", "boom"), timeout=30)
    assert failure.kind == "harness" and "RuntimeError escaped the job" in failure.message and "boom" in failure.message
    assert len(failure.message.splitlines()) == 1
    assert worker.submit(("echo", 1), timeout=30) == 1


# --- workers that may use CUDA -----------------------------------------------------------------------


def test_a_worker_that_may_use_cuda_has_no_address_space_limit():
    """CUDA cannot start under an address-space limit (cudaGetDeviceCount: out of memory)."""
    import resource

    with Worker(run, memory_limit_mb=4096, uses_device=True) as worker:
        assert worker.submit(("address-space", None), timeout=30) == resource.RLIM_INFINITY
    with Worker(run, memory_limit_mb=4096, uses_device=False) as worker:
        assert worker.submit(("address-space", None), timeout=30) == 4096 << 20
    with Worker(run, memory_limit_mb=None, uses_device=False) as worker:
        assert worker.submit(("address-space", None), timeout=30) == resource.RLIM_INFINITY


def test_a_cuda_capable_worker_past_its_resident_limit_is_a_crash_and_is_replaced():
    with Worker(run, memory_limit_mb=300, uses_device=True, recycle_rss_mb=0) as worker:
        first = worker.submit(("pid", None), timeout=30)
        failure = worker.submit(("hold", 600), timeout=30)
        assert isinstance(failure, JobFailure) and failure.kind == FailureKind.CRASH
        assert "passed its memory limit" in failure.message and "over 300 MB" in failure.message
        assert worker.submit(("pid", None), timeout=30) != first and worker.restarts == 1


def test_a_job_that_loses_the_device_is_a_crash_and_the_worker_goes_on():
    with Worker(run, uses_device=True) as worker:
        first = worker.submit(("pid", None), timeout=30)
        failure = worker.submit(("lose-device", "jit-cuda lost the cuda context"), timeout=30)
        assert isinstance(failure, JobFailure) and failure.kind == FailureKind.CRASH
        assert "lost the cuda context" in failure.message
        assert worker.submit(("pid", None), timeout=30) != first


def test_what_a_worker_prints_never_reaches_the_parents_stdout(capfd):
    with Worker(run) as worker:
        assert worker.submit(("print", "from the child"), timeout=30) == "printed"
    out, err = capfd.readouterr()
    assert "from the child" not in out and "from the child (fd 1)" in err


# --- children forked from a forkserver ---------------------------------------------------------------


def forked_worker(**limits) -> Worker:
    worker = Worker(run, preload=CHILD_MODULES, **limits)
    worker.start_ahead()
    assert worker.child.start_method == "forkserver", workers.forkserver_differences(CHILD_MODULES)
    return worker


@pytest.mark.slow
def test_what_inductor_writes_into_the_environment_as_it_compiles_keeps_children_forked():
    """torch.compile writes variables into its own process's environment (a cache folder, an
    address); nothing reads them on import, so a test process or campaign that compiled with
    inductor before its next child still forks it."""
    import torch

    with forked_worker() as worker:
        worker.submit(("echo", None), timeout=60)  # the forkserver runs
    torch.compile(lambda x: x.sin() + 1)(torch.ones(3))
    with forked_worker() as worker:
        assert worker.submit(("echo", 1), timeout=60) == 1


@pytest.mark.slow
def test_a_forked_child_runs_parallel_ops():
    """A forkserver that had started torch's intra-op (OpenMP) threads would hand its children a
    pool without its threads: a parallel op would hang. Two children in turn, each on 4 threads."""
    with forked_worker(recycle_jobs=2) as worker:
        for _ in range(2):
            command, _ = worker.submit(("parent", None), timeout=60)
            assert "forkserver" in command
            assert worker.submit(("matmul", 4), timeout=60) == 4
        assert worker.recycled == 2 and worker.restarts == 0


@pytest.mark.slow
def test_a_forked_child_takes_on_its_parents_environment_and_stderr_as_they_are_when_it_starts(monkeypatch, tmp_path):
    """The forkserver keeps what its parent had when it started; a child gets its parent's now."""
    with forked_worker() as worker:
        worker.submit(("echo", None), timeout=60)  # the forkserver runs
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "set after the forkserver started")
    log = tmp_path / "stderr"
    saved = os.dup(2)
    try:
        with open(log, "w") as stderr:
            os.dup2(stderr.fileno(), 2)
        with forked_worker() as worker:
            assert worker.submit(("environ", "PYTEST_CURRENT_TEST"), timeout=60) == "set after the forkserver started"
            assert worker.submit(("print", "from the child"), timeout=60) == "printed"
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    assert "from the child (fd 1)" in log.read_text()


@pytest.mark.slow
def test_a_variable_of_fuzzdces_own_set_after_the_forkserver_started_keeps_children_forked(monkeypatch):
    """Only fuzzdce reads FUZZDCE_ variables, and a forked child imports fuzzdce itself, under its
    parent's environment: it sees the value, and no child needs spawning for it."""
    with forked_worker() as worker:
        worker.submit(("echo", None), timeout=60)
    monkeypatch.setenv("FUZZDCE_SET_AFTER_THE_FORKSERVER", "1")
    with forked_worker() as worker:
        assert worker.submit(("environ", "FUZZDCE_SET_AFTER_THE_FORKSERVER"), timeout=60) == "1"


@pytest.mark.slow
def test_a_variable_set_after_the_forkserver_started_gives_a_spawned_child_that_sees_it(monkeypatch):
    """torch or Thunder may read it on import, which the forkserver did before it was set."""
    with forked_worker() as worker:
        worker.submit(("echo", None), timeout=60)
    monkeypatch.setenv("TORCH_SET_AFTER_THE_FORKSERVER", "1")
    with Worker(run, preload=CHILD_MODULES) as worker:
        worker.start_ahead()
        assert worker.child.start_method == "spawn"
        assert worker.submit(("environ", "TORCH_SET_AFTER_THE_FORKSERVER"), timeout=60) == "1"


def test_a_machine_with_cuda_spawns_every_child(monkeypatch):
    """A forkserver's imports would initialise the CUDA driver, which its children could not use."""
    monkeypatch.setattr(workers, "may_use_cuda", lambda: True)
    with Worker(run, preload=CHILD_MODULES, uses_device=False) as worker:
        worker.start_ahead()
        assert worker.child.start_method == "spawn"
        assert worker.submit(("echo", 1), timeout=30) == 1

"""A hung, crashing or memory-hungry job becomes a JobFailure and the worker carries on."""

import pytest
from worker_jobs import run

from fuzzdce.core.model import FailureKind
from fuzzdce.running.workers import JobFailure, Worker


@pytest.fixture
def worker():
    with Worker(run, memory_limit_mb=8192) as w:
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

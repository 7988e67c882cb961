"""Job functions for the worker tests (module-level so a spawned child can import them)."""

import os
import signal
import time

HELD = []  # what "hold" jobs allocated: it stays resident until the child ends


def run(job):
    kind, value = job
    if kind == "echo":
        return value
    if kind == "sleep":
        time.sleep(value)
        return "slept"
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "abort":
        os.abort()
    if kind == "allocate":
        return len(bytearray(value << 20))
    if kind == "raise":
        raise RuntimeError(value)
    if kind == "address-space":  # the child's address-space limit (RLIMIT_AS), -1 for none
        import resource

        return resource.getrlimit(resource.RLIMIT_AS)[0]
    if kind == "print":  # at the C level too: what a C++ library's printf does
        print(value, flush=True)
        os.write(1, f"{value} (fd 1)\n".encode())
        return "printed"
    if kind == "lose-device":  # a job that loses the process's device context
        from fuzzdce.core.errors import DeviceLost

        raise DeviceLost(value)
    if kind == "pid":
        return os.getpid()
    if kind == "matmul":  # an op that runs on ``value`` intra-op threads: torch's pool starts here
        import torch

        torch.set_num_threads(value)
        a = torch.ones(1024, 1024)
        assert bool(((a @ a) == 1024).all())
        return torch.get_num_threads()
    if kind == "parent":  # the process this child was started from: its command line and thread count
        parent = f"/proc/{os.getppid()}"
        with open(f"{parent}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(), len(os.listdir(f"{parent}/task"))
    if kind == "environ":
        return os.environ.get(value)
    if kind == "hold":  # allocate ``value`` MB, write every page (so it is resident), keep it
        HELD.append(b"x" * (value << 20))
        return os.getpid()
    raise ValueError(kind)

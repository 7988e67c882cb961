"""Job functions for the worker tests (module-level so a spawned child can import them)."""

import os
import signal
import time


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
    if kind == "pid":
        return os.getpid()
    raise ValueError(kind)

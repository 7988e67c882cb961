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
    if kind == "pid":
        return os.getpid()
    if kind == "hold":  # allocate ``value`` MB, write every page (so it is resident), keep it
        HELD.append(b"x" * (value << 20))
        return os.getpid()
    raise ValueError(kind)

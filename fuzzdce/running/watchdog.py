"""A compile path's time limit, and the exceptions behind a path's end.

``time_limit`` raises ``CompileTimeout`` only at fuzzdce's own frames that call into Thunder and
torch (``safe_point``), never where the alarm strikes; ``timed_out`` and ``out_of_memory`` find
the time-out or out-of-memory error behind an exception Dynamo or Thunder wrapped in its own.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable

import torch

from fuzzdce.core.errors import (
    CompileTimeout,
)


class time_limit:
    """A compile path's time limit, acted on only at fuzzdce's own safe points.

    The limit is never raised where the alarm strikes. Raising from a ``SIGALRM`` handler lands the
    exception in whatever Python code is running, which inside a compile is often torch's or
    Dynamo's, called back from C++ (fake tensors, dispatch modes): unwinding through those frames
    aborted the interpreter ("Fatal Python error: Aborted") or left a lock held and hung it. So the
    alarm only *marks* the frames of this module's own callers of Thunder (``SAFE_POINTS``) still on
    the stack; the first line one of them runs after Thunder hands control back raises
    ``CompileTimeout``, and a limit that expired with no safe point left raises on exit. A compile
    that never hands control back is ended from outside: a sandboxed job's parent kills its child
    ``GRACE_SECONDS`` after the limit (``running.workers``), so a hang never stalls a campaign.

    No-op without ``seconds``, off the main thread, or where there is no ``setitimer``.
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.expired = False
        self.armed = False
        self.marked: list = []  # frames whose next line raises
        self.previous_handler = None
        self.previous_trace = None

    def __enter__(self) -> time_limit:
        if not self.seconds or not hasattr(signal, "setitimer"):
            return self
        try:
            self.previous_handler = signal.signal(signal.SIGALRM, self._expire)
        except ValueError:  # not the main thread
            return self
        self.armed = True
        self.previous_trace = sys.gettrace()
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if not self.armed:
            return False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self.previous_handler)
        self._disarm()
        if self.expired and kind is None:
            raise CompileTimeout("compile path ran past its time limit")
        return False

    def _expire(self, signum, frame) -> None:
        """The alarm: raise here only if this is a safe point, else mark the safe points below."""
        if self.expired:
            return
        self.expired = True
        if frame is not None and frame.f_code in SAFE_POINTS:
            self._disarm()
            raise CompileTimeout("compile path ran past its time limit")
        while frame is not None:
            if frame.f_code in SAFE_POINTS:
                frame.f_trace = self._raise_at_safe_point
                frame.f_trace_lines = True
                self.marked.append(frame)
            frame = frame.f_back
        if self.marked:
            # Line events reach a frame's f_trace only while a global trace function is set; ours
            # traces no new frame (or hands it to a tracer already there, such as coverage's).
            sys.settrace(self.previous_trace or _trace_no_new_frames)

    def _raise_at_safe_point(self, frame, event, arg):
        if event == "line":
            self._disarm()
            raise CompileTimeout("compile path ran past its time limit")
        return self._raise_at_safe_point

    def _disarm(self) -> None:
        """Unmark every frame (one raise per limit) and put the previous tracer back."""
        if not self.marked:
            return
        for frame in self.marked:
            frame.f_trace = None
        self.marked.clear()
        sys.settrace(self.previous_trace)


def _trace_no_new_frames(frame, event, arg):
    return None


def behind(e: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    """The exception of ``kind`` behind ``e`` (itself, or along its causes and contexts: Dynamo
    re-raises errors wrapped in its own), or None."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, kind):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def timed_out(e: BaseException | None) -> CompileTimeout | None:
    """The CompileTimeout behind ``e``, if any."""
    return behind(e, CompileTimeout)


def out_of_memory(e: BaseException | None) -> BaseException | None:
    """The MemoryError behind ``e``, or the device's out-of-memory error, if any (a worker's memory
    limit, the machine's or the device's): the process ran out of memory, which is a crash."""
    return behind(e, MemoryError) or behind(e, torch.OutOfMemoryError)


# fuzzdce's own frames that call into Thunder and torch (``safe_point``): between their lines nothing
# of Thunder's or torch's is on the stack, so a CompileTimeout raised there unwinds only fuzzdce's code.
SAFE_POINTS: set = set()


def safe_point(function: Callable) -> Callable:
    """Register ``function`` as a safe point of ``time_limit`` (its frames raise on their next line
    once the limit expired); ``function`` itself is returned as it is."""
    SAFE_POINTS.add(function.__code__)
    return function

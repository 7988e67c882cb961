"""fuzzdce's exceptions. Imports nothing of fuzzdce, so every module can import it."""

from __future__ import annotations

import os
import re
import sys
import traceback


class UsageError(ValueError):
    """Bad user input (unknown placement, bad option value, unreadable file).

    The command line prints it as one line and exits with code 2; its message names the valid
    choices or says what to do instead.
    """


class CompileTimeout(BaseException):
    """Raised in the main thread when a compile path runs past its time limit.

    A ``BaseException``: code under test catches ``Exception`` (the thunderfx splitter turns any
    exception into a split reason), and a time limit must end the path wherever it strikes.
    """


class OutOfTime(BaseException):
    """A job was cut at the end of the campaign's time budget (``Evaluator.deadline``): it says
    nothing of the program, so nothing is judged of it, and the campaign writes what it found.

    A ``BaseException`` for the reason ``HarnessError`` is one: Hypothesis must not take it for a
    finding and shrink it.
    """


class HarnessError(BaseException):
    """fuzzdce's own code failed (or was called with arguments it does not take): not a Thunder bug.

    Raised by the evaluator when a job came back as a ``harness`` failure, it stops the campaign
    (a BaseException, so that neither Hypothesis nor an ``except Exception`` takes it for a finding);
    the command line prints its one line, which names the path, the versions and what to do, and
    exits with code 3.
    """


class DeviceLost(BaseException):
    """The process's CUDA context is gone (an illegal memory access, a device-side assert): every
    later CUDA call in it would fail, whatever it runs. The job that lost it is a ``crash``; the
    worker child replies so and is replaced, and the campaign goes on (``workers.reply_to``)."""


# --- is fuzzdce, not Thunder, at fault for an exception? -----------------------------------------

FUZZDCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# CPython's words for a call a function's signature rejects: "f() got an unexpected keyword argument".
SIGNATURE_MISMATCH = re.compile(
    r"^([\w.<>]+)\(\) (?:got an unexpected keyword argument|got multiple values|missing \d+ required|"
    r"takes (?:from )?\d+ (?:to \d+ )?(?:positional|keyword)|takes no (?:keyword )?arguments)"
)


def in_fuzzdce(filename: str) -> bool:
    """A source file of fuzzdce's own package (not a generated program, which has no real file)."""
    return os.path.isabs(filename) and os.path.abspath(filename).startswith(FUZZDCE_DIR + os.sep)


def _chain(e: BaseException | None):
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)


def fuzzdce_qualnames() -> set[str]:
    """The qualified names of every function defined in fuzzdce's loaded modules (nested ones too),
    less names that loaded thunder or torch modules also define (their own mismatches are theirs)."""
    names: set[str] = set()
    others: set[str] = set()
    for name, module in list(sys.modules.items()):
        if name == "fuzzdce" or name.startswith("fuzzdce."):
            for value in list(vars(module).values()):
                while getattr(value, "__wrapped__", None) is not None:  # a decorated function's own code
                    value = value.__wrapped__
                code = getattr(value, "__code__", None)
                if code is not None and getattr(value, "__module__", None) == name:
                    names |= _code_qualnames(code)
                elif isinstance(value, type) and value.__module__ == name:
                    for member in vars(value).values():
                        if getattr(member, "__code__", None) is not None:
                            names |= _code_qualnames(member.__code__)
        elif name.split(".")[0] in ("thunder", "torch") and module is not None:
            others |= set(getattr(module, "__dict__", {}))
    return {n for n in names if n not in others}


def _code_qualnames(code) -> set[str]:
    found = {getattr(code, "co_qualname", code.co_name)}
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            found |= _code_qualnames(const)
    return found


# The attribute ``read_as_its_user`` sets on an exception torch raised while fuzzdce read an output.
_READ_AS_ITS_USER = "fuzzdce_read_as_its_user"


class read_as_its_user:
    """fuzzdce reading an output as the program's user would (its ``grad_fn``, its values): torch may
    refuse, and what it raises there is what that user gets from the output, the call's error and
    never fuzzdce's (``why_fuzzdces_own``), although torch raises it from C with fuzzdce's frame the
    innermost. A view one of several views returned by one op (``unbind``, ``split``) whose base was
    later written in place has no autograd history that torch accepts: reading its ``grad_fn``
    raises "Output 0 of UnbindBackward0 is a view and its base ... has been modified inplace".

    Only a ``RuntimeError`` (what torch raises from C) is marked: fuzzdce's own mistakes there (a
    TypeError, an AttributeError) stay fuzzdce's."""

    def __enter__(self) -> read_as_its_user:
        return self

    def __exit__(self, kind, error, traceback) -> bool:
        if isinstance(error, RuntimeError):
            setattr(error, _READ_AS_ITS_USER, True)
        return False


def why_fuzzdces_own(e: BaseException) -> str:
    """Why ``e`` is fuzzdce's own error, or "" when it is not: an exception (or one it was raised from)
    whose innermost frame is in fuzzdce's own code, or a call to a fuzzdce function (a stand-in or a
    patch Thunder calls) with arguments it does not take. Neither is torch refusing a read of an
    output (``read_as_its_user``)."""
    for x in _chain(e):
        if isinstance(x, CompileTimeout) or getattr(x, _READ_AS_ITS_USER, False):
            return ""
        innermost = x.__traceback__
        while innermost is not None and innermost.tb_next is not None:
            innermost = innermost.tb_next
        code = innermost.tb_frame.f_code if innermost is not None else None
        if code is not None and in_fuzzdce(code.co_filename):
            where = os.path.relpath(code.co_filename, os.path.dirname(FUZZDCE_DIR))
            return f"{type(x).__name__} raised in fuzzdce's own code ({where}:{innermost.tb_lineno}, {code.co_name}): {_first_line(x)}"
        match = SIGNATURE_MISMATCH.match(str(x)) if isinstance(x, TypeError) else None
        if match and match.group(1) in fuzzdce_qualnames():
            return f"fuzzdce's {match.group(1)} was called with arguments it does not take: {_first_line(x)}"
    return ""


def why_the_machines(e: BaseException) -> str:
    """Why ``e`` is this machine's environment's doing, or "" when it is not: a module outside Thunder and
    fuzzdce failed to import (``distutils`` missing from a Python that dropped it, an extension
    built for another torch: an undefined symbol), along the exception's causes. Neither Thunder's
    finding nor fuzzdce's own error: the campaign stops and says which module and what to do."""
    for x in _chain(e):
        if isinstance(x, ImportError):
            name = x.name or ""
            top = name.split(".")[0]
            if top not in ("thunder", "fuzzdce", "__main__", ""):
                return f"importing {name} failed ({type(x).__name__}: {_first_line(x)})"
    return ""


def environment_message(where: str, fault: str) -> str:
    """One line for an environment error: where, the versions, the fault, what to do."""
    return (
        f"environment error on {where} ({versions()}): {fault} -- this machine's, neither a Thunder bug nor "
        f"fuzzdce's: install what is missing (or a build matching this torch), or leave that path out (--path); "
        f"`fuzzdce doctor` says which paths run here"
    )


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else ""


def versions() -> str:
    """python, torch and the Thunder this process imports (with where from), as far as they are loaded."""
    thunder, torch = sys.modules.get("thunder"), sys.modules.get("torch")
    where = f" at {os.path.dirname(os.path.dirname(thunder.__file__))}" if getattr(thunder, "__file__", None) else ""
    return (
        f"python {sys.version.split()[0]}, torch {getattr(torch, '__version__', 'not imported')}, "
        f"thunder {getattr(thunder, '__version__', 'not imported')}{where}"
    )


def harness_message(where: str, own_error: str) -> str:
    """One line: where (path and placement, or which worker), the versions, the error, what to do."""
    return (
        f"harness error on {where} ({versions()}): {own_error} -- fuzzdce's own error, not a Thunder bug: "
        f"leave that path out (--path) and report this line with `fuzzdce doctor`'s output to fuzzdce"
    )


def unexpected_exception(e: BaseException) -> str:
    """An exception that escaped a worker's job (fuzzdce's code, which records Thunder's), in one line."""
    frames = traceback.extract_tb(e.__traceback__)
    at = f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} ({frames[-1].name})" if frames else ""
    return f"{type(e).__name__} escaped the job{at}: {_first_line(e)}"

"""Where an exception was raised, read from its traceback and its text: the frame and the symbol
a failure is known by (``model.ErrorInfo``), past Thunder's generic helpers, proxies' arithmetic on
an op's behalf, and torch.compile's "from user code:" frames. Imports nothing of fuzzdce."""

from __future__ import annotations

import os
import re
import sys
import sysconfig
import traceback

# Thunder's generic helpers: raising inside one says nothing of where Thunder failed (its caller
# does). ``check`` raises every failed condition Thunder states; comprehensions and lambdas are
# inside the function that wrote them.
HELPER_FRAMES = frozenset(
    {
        "check",
        "check_type",
        "check_types",
        "check_valid_length",
        "check_valid_shape",
        "<genexpr>",
        "<listcomp>",
        "<dictcomp>",
        "<setcomp>",
        "<lambda>",
    }
)
# Where an exception raised inside torch was raised (``ErrorInfo.frame``): torch's own code.
TORCH_FRAME = "torch/"
# Where Thunder defines the symbols a program calls (torch-level, clang, prims): the outermost such
# frame on an exception's stack is the op Thunder was working on.
_SYMBOL_FILES = re.compile(r"/thunder/(torch/__init__|clang/__init__|core/prims|torch/experimental/\w+)\.py$")
_NOT_SYMBOLS = frozenset({"wrapper", "_fn", "__call__", "meta", *HELPER_FRAMES})
# torch.compile (the torch.compile executor, thunderfx's fallback) raising on a trace Thunder handed
# it says where in its message: "from user code:", then the frames of that trace (files Thunder
# generated, named "thunder.<trace>") down to the statement it could not compile. That statement's
# call is the symbol Thunder handed over (``min_vjp`` in ``(t6, _) = min_vjp(...)``).
_GENERATED_FRAME = re.compile(r'File "thunder\.[^"]*", line \d+, in \w+\n(.*)')
_CALL = re.compile(r"\s*([A-Za-z_][\w.]*)\(")
# Thunder names the symbol that computes an op's forward and backward together ``<op>_vjp``.
_VJP_SUFFIX = "_vjp"


def user_code(text: str) -> str:
    """The "from user code:" part of a torch.compile exception's text ("" when it has none)."""
    _, marker, after = text.partition("from user code:")
    return after if marker else ""


def symbol_in_user_code(text: str) -> str:
    """The symbol of the generated trace's statement that torch's compiler failed on, from an
    exception's text ("" when it shows none)."""
    statements = _GENERATED_FRAME.findall(user_code(text))
    call = _CALL.match(statements[-1].split(" = ", 1)[-1]) if statements else None
    if call is None:
        return ""
    name = call.group(1).rsplit(".", 1)[-1]
    return name[: -len(_VJP_SUFFIX)] if name.endswith(_VJP_SUFFIX) else name


_LIBRARY_FRAME = re.compile(r'File "[^"]*/(thunder)/([^"]*)\.py", line \d+, in (\w+)')


def thunder_frame_in_user_code(text: str) -> str:
    """Where Thunder's own code (not a trace it generated) handed torch's compiler what it refused,
    from an exception's text: the innermost "thunder/...py:function" of its "from user code:"
    frames that is not a generic helper, "" when none is (the statement of a generated trace alone:
    a malformed trace, the consequence of a fault beside it)."""
    frames = [(f"thunder/{path}.py", name) for _, path, name in _LIBRARY_FRAME.findall(user_code(text))]
    inside = [f"{path}:{name}" for path, name in frames if name not in HELPER_FRAMES]
    return inside[-1] if inside else ""


# A proxy's Python operator (``NumberProxy.__mod__``): a number's is arithmetic Thunder runs as
# symbols when the number is symbolic and as plain Python when it is not, through proxies.py's own
# helpers (a tensor's operator calls a symbol, as a call of the op would).
_PROXY_OPERATOR = re.compile(r"^__\w+__$")
_PROXIES_FILE = "/thunder/core/proxies.py"


def on_behalf_of_op_code(inside: list) -> list:
    """Thunder's frames of a stack (``(match, frame)``, outermost first) ending where op code's
    arithmetic on a number proxy (a proxy operator called from ``_SYMBOL_FILES`` that goes on in
    proxies.py) began, when the exception was raised beneath it: on the op code's behalf. ``clang.reshape``'s
    ``a.numel % numel`` with a zero ``numel`` raises ZeroDivisionError there under ``thunder.jit``,
    and deep in the ``remainder`` prim's meta when the numel is symbolic: one fault, one frame."""
    for i in range(1, len(inside) - 1):
        f, caller, callee = inside[i][1], inside[i - 1][1], inside[i + 1][1]
        on_a_number = f.filename.endswith(_PROXIES_FILE) and callee.filename.endswith(_PROXIES_FILE)
        if on_a_number and _PROXY_OPERATOR.match(f.name) and _SYMBOL_FILES.search(caller.filename):
            return inside[:i]
    return inside


def raised_where(e: BaseException) -> tuple[str, str]:
    """(frame, symbol) of ``e`` (``ErrorInfo.frame`` and ``ErrorInfo.symbol`` say what each is)."""
    frames = traceback.extract_tb(e.__traceback__)
    frame = ""
    if frames and _is_patch_code(frames[-1].filename):
        # Raised in a placement's own code (a user's patch): that is where the bug is.
        frame = f"{os.path.basename(frames[-1].filename)}:{frames[-1].name}"
    inside = on_behalf_of_op_code([(m, f) for f in frames if (m := re.search(r"/(thunder|torch)/(.*)\.py$", f.filename))])
    if not frame and inside:
        match, f = next(((m, f) for m, f in reversed(inside) if f.name not in HELPER_FRAMES), inside[-1])
        frame = f"{match.group(1)}/{match.group(2)}.py:{f.name}"
    symbol = next((f.name for f in frames if _SYMBOL_FILES.search(f.filename) and f.name not in _NOT_SYMBOLS), "")
    text = str(e)
    symbol = symbol or symbol_in_user_code(text)
    if frame.startswith(TORCH_FRAME):
        # torch.compile refusing code of Thunder's own (every op's ``_vjp_impl`` flattening its
        # arguments with optree, which Dynamo cannot trace) fails there, whatever the op.
        frame = thunder_frame_in_user_code(text) or frame
    return frame, symbol


def _is_patch_code(filename: str) -> bool:
    """A real source file outside the installed packages and the standard library: a placement's."""
    if not os.path.isfile(filename):  # "<fuzzdce-...>" programs, "<string>"
        return False
    if re.search(r"/(thunder|torch)/.*\.py$", filename):  # a Thunder build in a directory (a checkout) is Thunder
        return False
    installed = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]}
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # fuzzdce itself (this file is in fuzzdce/core)
    path = os.path.abspath(filename)
    return not path.startswith(here) and not any(path.startswith(os.path.abspath(p)) for p in installed)

"""The compile paths, each one ``CompilePath`` declaration: how it compiles, which calls it makes,
what it records, whether this machine can run it.

Adding a path is adding one declaration to ``PATHS``. Each ``compile`` function is self-contained
(its imports inside, nothing of fuzzdce): a reproducer prints its source as the plain-Thunder form
of the path, and fuzzdce runs that very function.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator

from fuzzdce.core.model import CallLabel, CallStage, CompilePath, Outcome, TraceKind
from fuzzdce.core.vocabulary import TraceLabel

# --- what the paths record ---------------------------------------------------------------------

# Who a trace that could not be fetched is counted under (``Outcome.not_checked``): every oracle reading traces.
TRACES = "traces"


def record_jit_traces(jfn, outcome: Outcome, prefix: str = "jit") -> None:
    """Every trace of a ``thunder.jit`` function, labelled in order: forward and backward
    (computation), and the prologue (the checks of a call's inputs before a cached computation is
    reused) and epilogue where Thunder keeps them. DCE runs on each, ``DONT_DCE`` matters most in
    the prologue's checks, and stock's traces of the same label are what each is compared with."""
    import thunder

    for kind, getter in (
        (CallStage.FORWARD, thunder.last_traces),
        (CallStage.BACKWARD, thunder.last_backward_traces),
        (TraceKind.PROLOGUE, thunder.last_prologue_traces),
        (TraceKind.EPILOGUE, last_epilogue_traces),
    ):
        try:
            outcome.traces += [(TraceLabel(prefix, kind, i), t) for i, t in enumerate(getter(jfn) or []) if t is not None]
        except Exception as e:
            # No traces when compilation failed early (the error is the finding); after a clean run
            # a trace that cannot be fetched switches the trace oracles off for it: counted.
            if outcome.error is None:
                outcome.could_not_check(TRACES, f"could not fetch the {kind} traces", e)


def last_epilogue_traces(jfn) -> list:
    """The epilogue traces of the last compilation (Thunder 0.2.6 has no ``thunder.last_epilogue_traces``;
    its compile statistics hold them, ``None`` entries where a program needs no epilogue)."""
    import thunder

    getter = getattr(thunder, "last_epilogue_traces", None)
    if getter is not None:
        return getter(jfn) or []
    return list(getattr(thunder.compile_stats(jfn), "last_epilogue_traces", None) or [])


def record_thunderfx(compiled, outcome: Outcome) -> None:
    """thunderfx's split reasons and the traces of every Thunder-compiled subgraph function."""
    for g, info in enumerate(compiled._backend.subgraph_infos):
        outcome.split_reasons += list(info.split_reasons)
        for k, fn in enumerate(info.thunder_compiled_fns or []):
            record_jit_traces(fn, outcome, f"thunderfx graph {g} fn {k}")


# --- contexts ------------------------------------------------------------------------------------


@contextlib.contextmanager
def dynamo_without_inductor() -> Iterator[None]:
    """``torch.compile`` traces with Dynamo but runs the captured graph eagerly.

    Thunder's torch.compile executor hands each fused region (built from its decompositions) to
    ``torch.compile``; Inductor would then spend seconds per region compiling C++ that never runs
    Thunder. Dynamo still captures the region with ``fullgraph=True``, so a region Dynamo cannot
    trace still fails as it would for a user.
    """
    from unittest import mock

    import torch

    original = torch.compile

    def compile_with_eager_backend(fn=None, *args, mode=None, backend=None, **kwargs):
        return original(fn, *args, backend="eager", **kwargs)

    with mock.patch("torch.compile", compile_with_eager_backend):
        yield


@contextlib.contextmanager
def fresh_dynamo_without_inductor() -> Iterator[None]:
    """Dynamo's caches cleared before and after; regions thunderfx does not give to Thunder run
    eagerly instead of through Inductor (they never reach Thunder, and Inductor's C++ compiles take
    seconds each)."""
    import inspect
    from unittest import mock

    import torch

    accepts = inspect.signature(torch._inductor.compile)

    def compile_eagerly(*args, **kwargs):
        # Takes exactly what torch's own ``compile(gm, example_inputs, options=None)`` takes (Thunder
        # 0.2.6 passes two arguments, Thunder main also ``options=``): a call torch would reject
        # fails here the same way, naming torch's parameters. The graph runs as captured.
        return next(iter(accepts.bind(*args, **kwargs).arguments.values()))  # the graph module

    torch._dynamo.reset()
    try:
        with mock.patch("torch._inductor.compile", compile_eagerly):
            yield
    finally:
        torch._dynamo.reset()


# --- what a path needs of this machine -----------------------------------------------------------
#
# Each returns why this machine cannot run a path ("" when it can). They run before a campaign
# starts (``default_paths``, ``config.Scope.check_runnable``): a path the environment cannot run is left
# out with its reason, never run to fail program after program, and its failures never read as
# Thunder's (a GPU machine's torch and nvFuser are often out of step: nvFuser built for torch 2.10
# fails to load beside torch 2.11 with an undefined symbol).


def cuda_unavailable() -> str:
    """Why CUDA cannot run here ("" when it can)."""
    import torch

    if not torch.cuda.is_available():
        built = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "built without CUDA"
        return f"CUDA is missing: torch {torch.__version__} ({built}) sees no CUDA device"
    return ""


def library_error(*modules: str) -> str:
    """Why none of ``modules`` (alternatives, in order) imports here ("" when one does): the last
    one's ImportError or OSError, in one line (an undefined symbol names the mismatch)."""
    import importlib

    error = ""
    for module in modules:
        try:
            importlib.import_module(module)
        except (ImportError, OSError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            error = f"{type(e).__name__}: {first[:300]}"
        else:
            return ""
    return error


def nvfuser_unavailable() -> str:
    """Why the nvFuser path cannot run here ("" when it can): no CUDA, nvFuser missing or failing to
    load (with the loader's words), or a version this Thunder refuses."""
    cuda = cuda_unavailable()
    if cuda:
        return f"nvFuser needs CUDA: {cuda}"
    loads = library_error("nvfuser_direct", "nvfuser")
    if loads:
        return f"nvFuser does not load here ({loads})"
    try:
        from thunder.executors import nvfuser_available

        if not nvfuser_available():
            from thunder.executors.nvfuserex import nvfuser_version, required_nvfuser_version

            return f"this Thunder refuses nvFuser {nvfuser_version()} (it requires {required_nvfuser_version()})"
    except Exception as e:
        return f"nvFuser could not be checked ({type(e).__name__}: {e})"
    return ""


def on_device(path: CompilePath, device: str, name: str, unavailable: Callable[[], str]) -> CompilePath:
    """``path`` run on ``device``: the same compile, calls and records, its inputs (and the eager
    reference it is judged against) on that device; unavailable where ``unavailable`` says so."""
    return dataclasses.replace(path, name=name, device=device, unavailable=unavailable)


# --- how each path compiles (self-contained: printed in reproducers) ------------------------------


def jit(fn):
    """thunder.jit with the default executors."""
    import thunder

    return thunder.jit(fn)


def jit_symbolic_values(fn):
    """thunder.jit caching on symbolic values: one trace for every input shape."""
    import thunder

    return thunder.jit(fn, cache="symbolic values")


def jit_torch_compile_executor(fn):
    """thunder.jit with the torch.compile fusion executor first."""
    import thunder
    from thunder.executors.torch_compile import torch_compile_ex

    return thunder.jit(fn, executors=[torch_compile_ex, *thunder.get_default_executors()])


def jit_nvfuser(fn):
    """thunder.jit with nvFuser first (CUDA only)."""
    import thunder
    from thunder.executors.nvfuserex import nvfuserex

    return thunder.jit(fn, executors=[nvfuserex, *thunder.get_default_executors()])


def thunderfx_static(fn):
    """Thunder as torch.compile backend: Dynamo captures FX graphs, Thunder's splitter takes them."""
    from thunder.dynamo import thunderfx

    return thunderfx(fn)


def thunderfx_dynamic(fn):
    """Thunder as torch.compile backend with ``dynamic=True`` (symbolic shapes in Dynamo)."""
    from thunder.dynamo import thunderfx

    return thunderfx(fn, dynamic=True)


# --- the paths ---------------------------------------------------------------------------------------

# The guard calls (``CallLabel.is_guard``), made after the first call's traces are recorded, on the
# jit paths whose first call is plain: ``thunder.jit`` caches by its prologue's checks there (the
# thunderfx paths cache by Dynamo's guards first). Under symbolic values other shapes are the
# ``resized`` call already.
GUARDS = tuple(label for label in CallLabel if label.is_guard)
SYMBOLIC_GUARDS = tuple(label for label in GUARDS if label != CallLabel.GUARD_SHAPE)

JIT = CompilePath("jit", jit, (CallLabel.PLAIN, *GUARDS), record_jit_traces)
JIT_GRAD = CompilePath("jit-grad", jit, (CallLabel.GRAD,), record_jit_traces)
THUNDERFX = CompilePath(
    "thunderfx", thunderfx_static, (CallLabel.GRAD,), record_thunderfx, context=fresh_dynamo_without_inductor, splits_graphs=True
)

PATHS: dict[str, CompilePath] = {
    p.name: p
    for p in (
        JIT,
        JIT_GRAD,
        CompilePath(
            "jit-symbolic", jit_symbolic_values, (CallLabel.PLAIN, CallLabel.RESIZED, *SYMBOLIC_GUARDS), record_jit_traces
        ),
        CompilePath(
            "jit-torchcompile", jit_torch_compile_executor, (CallLabel.GRAD,), record_jit_traces, context=dynamo_without_inductor
        ),
        THUNDERFX,
        dataclasses.replace(THUNDERFX, name="thunderfx-dynamic", compile=thunderfx_dynamic),
        # Where Thunder's users run it. The CUDA paths differ from their CPU twins by device alone;
        # jit-cuda takes Thunder's default executors (nvFuser among them where it loads), jit-nvfuser
        # puts nvFuser first and runs only where it loads.
        on_device(JIT_GRAD, "cuda", "jit-cuda", cuda_unavailable),
        on_device(dataclasses.replace(JIT_GRAD, compile=jit_nvfuser), "cuda", "jit-nvfuser", nvfuser_unavailable),
        on_device(THUNDERFX, "cuda", "thunderfx-cuda", cuda_unavailable),
    )
}


def default_paths() -> tuple[str, ...]:
    """Every path this machine can run (a path needing CUDA is left out without it)."""
    return tuple(name for name, path in PATHS.items() if not path.unavailable())


DEFAULT_PATHS = default_paths()

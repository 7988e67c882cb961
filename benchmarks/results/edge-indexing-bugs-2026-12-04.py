# The faults of docs/found-bugs.md "Found by edge and indexing campaigns (issue 47)", by hand:
#     python benchmarks/results/edge-indexing-bugs-2026-12-04.py            (E1 E2 E3 E5 E6)
#     python benchmarks/results/edge-indexing-bugs-2026-12-04.py E3 E5      (those rows only)
# eager against thunder.jit. Prints each row's outcome and exits 1 while any row checked reproduces,
# 0 when none does (2 on an unknown row name). E4 (a 0-d boolean index) is boolean indexing, which
# Thunder does not support (#126): not a fault of its own, so it runs only when named.
import sys
import warnings

import thunder
import torch

warnings.filterwarnings("ignore")


def f(x):
    y = torch.abs(x)
    y[None].mul_(2.0)
    return y


def f2(x):
    y = torch.abs(x)
    y[0].mul_(2.0)
    return y


def p(x):
    return torch.pow(x, x)


def mask0(x):
    return x[torch.tensor(False)]


def negslice(x):
    y = torch.zeros_like(x)
    y[0:2, -3:2] = x[0:2, -3:2]
    return y


def empty_alias(a, b):
    a.clone().mul_(2)
    return (b,)


def _grad(g, x):
    """The gradient of g's output sum at x, or what g raised."""
    try:
        xx = x.clone().requires_grad_(True)
        out = g(xx)
        (gr,) = torch.autograd.grad(out.sum(), xx)
        return gr
    except Exception as e:
        return f"raises {type(e).__name__}: {str(e).splitlines()[0][:90]}"


def grad_row(fn, *xs):
    """Reproduced when Thunder's gradient raises or differs from eager's at any of xs."""
    reproduced, lines = False, []
    for x in xs:
        eager, jitted = _grad(fn, x), _grad(thunder.jit(fn), x)
        if isinstance(eager, str):  # eager itself rejects the input: nothing to compare
            lines.append(f"{x.dtype}: eager {eager}")
            continue
        differs = isinstance(jitted, str) or not torch.allclose(jitted, eager, equal_nan=False)
        reproduced |= differs
        show = jitted if isinstance(jitted, str) else jitted.tolist()
        lines.append(f"{x.dtype}: eager grad {eager.tolist()}, thunder grad {show}")
    return reproduced, "; ".join(lines)


def value_row(fn, *args):
    """Reproduced when Thunder raises where eager runs, or returns another shape or dtype."""
    expected = fn(*(a.clone() for a in args))
    try:
        actual = thunder.jit(fn)(*(a.clone() for a in args))
    except Exception as e:
        return True, f"eager shape {tuple(expected.shape)}; thunder raises {type(e).__name__}: {str(e)[:100]}"
    pairs = list(zip(actual, expected)) if isinstance(expected, tuple) else [(actual, expected)]
    for a, e in pairs:
        if a.shape != e.shape or a.dtype != e.dtype or not torch.equal(a, e):
            return True, f"eager {tuple(e.shape)} {e.dtype}; thunder {tuple(a.shape)} {a.dtype}"
    return False, "eager and thunder agree"


ROWS = {
    "E1": ("mul_ through x[None]", lambda: grad_row(f, torch.tensor(-1.5))),
    "E2": ("mul_ through x[0]", lambda: grad_row(f2, torch.tensor([-1.5, 2.0]))),
    "E3": (
        "pow(x, x) at 0, float32 and bfloat16",
        lambda: grad_row(p, torch.tensor(0.0), torch.tensor(0.0, dtype=torch.bfloat16)),
    ),
    "E4": ("x[torch.tensor(False)] on 0-d (boolean indexing, #126)", lambda: value_row(mask0, torch.tensor(1.0))),
    "E5": ("slice start -3 on length 2", lambda: value_row(negslice, torch.ones(2, 2))),
    "E6": (
        "in-place op on one empty tensor, another empty input returned",
        lambda: value_row(empty_alias, torch.rand(0, dtype=torch.bfloat16), torch.randn(0, dtype=torch.float16)),
    ),
}
DEFAULT = ("E1", "E2", "E3", "E5", "E6")


def main(argv):
    names = [a.upper() for a in argv] or list(DEFAULT)
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        print(f"unknown rows {unknown}; known: {', '.join(ROWS)}", file=sys.stderr)
        return 2
    print("thunder", thunder.__version__, thunder.__file__)
    reproduced = []
    for name in names:
        title, check = ROWS[name]
        hit, detail = check()
        print(f"{name} {'REPRODUCES' if hit else 'passes'}: {title}: {detail}")
        if hit:
            reproduced.append(name)
    print(f"reproduced: {' '.join(reproduced) or 'none'}")
    return 1 if reproduced else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# The faults of docs/found-bugs.md "Found by edge and indexing campaigns (issue 47)", by hand:
#     python benchmarks/results/edge-indexing-bugs-2026-12-04.py   (eager against thunder.jit)
import warnings

import thunder
import torch

warnings.filterwarnings("ignore")

print("thunder", thunder.__version__, thunder.__file__)


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


for name, fn, x in [
    ("mul_ through x[None]", f, torch.tensor(-1.5)),
    ("mul_ through x[0]", f2, torch.tensor([-1.5, 2.0])),
    ("pow(x, x) at 0 f32", p, torch.tensor(0.0)),
    ("pow(x, x) at 0 bf16", p, torch.tensor(0.0, dtype=torch.bfloat16)),
]:
    res = []
    for g in (fn, thunder.jit(fn)):
        try:
            xx = x.clone().requires_grad_(True)
            out = g(xx)
            (gr,) = torch.autograd.grad(out.sum(), xx)
            res.append(gr.tolist())
        except Exception as e:
            res.append(f"raises {type(e).__name__}: {str(e).splitlines()[0][:90]}")
    print(f"{name}: eager grad {res[0]}, thunder grad {res[1]}")
for name, fn, x in [
    ("x[torch.tensor(False)] on 0-d", mask0, torch.tensor(1.0)),
    ("slice start -3 on length 2", negslice, torch.ones(2, 2)),
]:
    try:
        print(name, "eager", fn(x).shape, end="; ")
    except Exception as e:
        print(name, "eager raises", e)
    try:
        print("thunder", thunder.jit(fn)(x).shape)
    except Exception as e:
        print("thunder raises", type(e).__name__, str(e)[:100])

"""A minified program as a standalone script and as issue text: what ``fuzzdce minify`` writes.

The script needs torch and Thunder only, in the shape Thunder's report tools write
(``thunder.dynamo.report``): ``class DynamoModule`` with the program as ``forward``, the inputs,
the compile call of the path, and a ``test_*`` function that runs forward (and backward on a grad
path) compiled and in eager and compares them, so ``python`` exits 1 and ``pytest`` fails while the
bug is there. Kept apart from ``repro`` (fuzzdce's own reproducers run fuzzdce's code) so the
two writers can be unified later.
"""

from __future__ import annotations

import inspect

from fuzzdce.core.model import STOCK, CallLabel
from fuzzdce.core.program import Program
from fuzzdce.core.versions import versions
from fuzzdce.oracles import ORACLES
from fuzzdce.running.paths import PATHS


def forward_source(program: Program) -> str:
    """The program's function as ``DynamoModule.forward``."""
    lines = program.source().splitlines()
    header = lines[0].replace(f"def {program.name}(", "def forward(self, " if program.inputs else "def forward(self", 1)
    return "\n".join(["    " + header, *("    " + line for line in lines[1:])])


def standalone_script(program: Program, path: str, *, headline: str, placement: str = STOCK, check_splits: bool = False) -> str:
    """``program`` on ``path`` as a script of torch and Thunder alone (see the module's docstring).
    ``headline``: the docstring's first line; ``check_splits``: also fail when thunderfx splits a graph."""
    compile_path = PATHS[path]
    grad = CallLabel.GRAD in compile_path.calls
    placement_note = (
        ""
        if placement == STOCK
        else f"\nfuzzdce found this failure under its placement {placement!r}, a patch of Thunder: stock Thunder may pass it.\n"
    )
    splits = (
        "\n    # thunderfx must give the whole graph to Thunder: a split means Thunder raised on a node.\n"
        "    reasons = [r for info in compiled._backend.subgraph_infos for r in info.split_reasons]\n"
        "    assert not reasons, reasons\n"
        if check_splits
        else ""
    )
    headline = headline.replace("\\", "\\\\").replace('"', "'")  # it goes inside the docstring
    return f'''"""{headline}
{placement_note}
Minified by fuzzdce. `python repro.py` exits 1 and `pytest repro.py` fails while the bug is there.
"""

import torch


class DynamoModule(torch.nn.Module):
{forward_source(program)}


{program.inputs_source()}

{inspect.getsource(compile_path.compile)}

GRAD = {grad}  # the path's call: forward, then backward against ones


def run(fn, inputs):
    """Forward (then, with GRAD, backward of the outputs that require grad): outputs and input grads."""
    outputs = fn(*inputs)
    outputs = list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]
    grads = []
    if GRAD:
        tensors = [o for o in outputs if isinstance(o, torch.Tensor) and o.requires_grad]
        if tensors:
            torch.autograd.backward(tensors, [torch.ones_like(t) for t in tensors])
        grads = [i.grad for i in inputs if isinstance(i, torch.Tensor) and i.requires_grad]
    return [o.detach() if isinstance(o, torch.Tensor) else o for o in outputs], grads


def test_repro():
    expected = run(DynamoModule(), make_inputs(requires_grad=GRAD))
    compiled = {compile_path.compile.__name__}(DynamoModule())
    actual = run(compiled, make_inputs(requires_grad=GRAD))
    # Each output's own dtype's default tolerances, as fuzzdce's outputs oracle first judges it.
    torch.testing.assert_close(actual, expected, equal_nan=True)
{splits}

if __name__ == "__main__":
    test_repro()
'''


def minified_issue(
    program: Program, path: str, *, oracle: str, message: str, script: str, origin: str, line: str, placement: str = STOCK
) -> str:
    """A Markdown issue body for a minified failure: title, versions, the script, what eager and
    Thunder do, how to run it, and how it was minified (``line``)."""
    compile_path = PATHS[path]
    found = ", ".join(f"{k} {v}" for k, v in versions().items())
    description = ORACLES[oracle].description if oracle in ORACLES else oracle
    first = message.splitlines()[0][:120] if message else oracle
    where = "" if placement == STOCK else f" (under fuzzdce's placement `{placement}`)"
    return "\n".join(
        [
            f"# {oracle} on {path}: {first}",
            "",
            f"**Versions:** {found}. No GPU needed (CPU).",
            "",
            f"## Minimal program ({program.n_ops} statement{'s' if program.n_ops != 1 else ''})",
            "",
            "```python",
            script.rstrip(),
            "```",
            "",
            "## Expected",
            "",
            f"Eager PyTorch runs this program. Under Thunder ({path}: `{compile_path.compile.__name__}`, "
            f"{', '.join(compile_path.calls)} call){where}: {description}.",
            "",
            "## Actual",
            "",
            f"- `{path}`, {oracle}: {message[:400]}",
            "",
            "## Reproduce",
            "",
            "```",
            "python repro.py   # or: pytest repro.py",
            "```",
            "",
            f"_Minified by `fuzzdce minify` from {origin}: {line}._",
            "",
        ]
    )

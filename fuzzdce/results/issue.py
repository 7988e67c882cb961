"""``fuzzdce issue BUG``: a Markdown issue body a Thunder maintainer can paste into the tracker.

Built from the bug's folder alone (bug.json, repro.py, trace-diff.txt), so it works on any
findings folder, merged or copied from a nightly run.
"""

from __future__ import annotations

from pathlib import Path

from fuzzdce.core.model import STOCK
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord
from fuzzdce.results.store import REPRO_FILE, TRACE_DIFF_FILE, read_bug
from fuzzdce.running.paths import PATHS

MAX_DIFF_LINES = 60


def title(record: BugRecord) -> str:
    """One line: who fails, how, where."""
    first_line = record.message.splitlines()[0][:100] if record.message else ""
    where = ", ".join(record.paths)
    if record.verdict == Verdict.REGRESSION:
        return f"regression under {record.placement} against {record.reference}: {', '.join(record.oracles)} on {where}: {first_line}"
    return f"{', '.join(record.oracles)} on {where}: {first_line}"


def thunder_lines(record: BugRecord) -> list[str]:
    """Which Thunder is the reference and which showed the bug, as the record names them."""
    names = [record.reference, *(n for n in record.placements if n != record.reference)]
    return [
        f"- `{name}`{' (the reference)' if name == record.reference else ''}: {record.thunders.get(name, 'not recorded')}"
        for name in names
    ]


def issue_markdown(folder: Path) -> str:
    """The issue body for the bug saved in ``folder``."""
    record = read_bug(folder)
    versions = ", ".join(f"{k} {v}" for k, v in record.versions.items())
    placement = record.placement
    lines = [
        f"# {title(record)}",
        "",
        f"**Verdict:** {record.verdict}. **Versions:** {versions}. No GPU needed (CPU).",
        "",
        *thunder_lines(record),
        "",
        f"## Minimal program ({record.n_ops} op{'s' if record.n_ops != 1 else ''})",
        "",
        "```python",
        "import torch",
        "",
        record.program.rstrip(),
        "",
        record.inputs.rstrip(),
        "```",
        "",
        "## Expected",
        "",
        "Eager PyTorch runs this program. Under Thunder, on each path below:",
        "",
    ]
    lines += [f"- {ORACLES[o].description}." for o in record.oracles]
    lines += ["", "## Actual", ""]
    for m in record.members:
        path = PATHS[m.path]
        lines.append(f"- `{m.path}` (`{path.compile.__name__}`, {', '.join(path.calls)} call), {m.oracle}: {m.message[:400]}")
    lines += [
        "",
        "## Reproduce",
        "",
        "```",
        f"python {folder / REPRO_FILE}" + ("" if placement == STOCK else f"   # applies placement {placement}"),
        "```",
        "",
        "It exits 1 while the bug is present and 0 once it is fixed"
        + (" (`--placement stock` runs it on Thunder as installed)." if placement != STOCK else "."),
    ]
    if record.verdict == Verdict.REGRESSION:
        lines += [
            "",
            f"The reference (`{record.reference}`) passes the same program on the same paths: the failure comes "
            f"with `{placement}` (also shown under: {', '.join(record.placements)}).",
        ]
        diff_file = folder / TRACE_DIFF_FILE
        diff = diff_file.read_text().splitlines() if diff_file.is_file() else []
        if diff:
            shown = diff[:MAX_DIFF_LINES] + (
                [f"... ({len(diff) - MAX_DIFF_LINES} more lines in {diff_file})"] if len(diff) > MAX_DIFF_LINES else []
            )
            lines += ["", f"## Trace difference ({record.reference} against {placement})", "", "```diff", *shown, "```"]
    elif record.verdict == Verdict.FIXED:
        lines += ["", f"Shown under the reference `{record.reference}` only: every Thunder under test passes it (fixed)."]
    else:
        lines += ["", f"Shown under: {', '.join(record.placements)} (the reference `{record.reference}` included)."]
    lines += ["", f"_Found by fuzzdce (bug {record.id}, {record.count} occurrences)._"]
    return "\n".join(lines) + "\n"

"""``fuzzdce issue BUG``: a Markdown issue body a Thunder maintainer can paste into the tracker.

Built from the bug's folder alone (bug.json, repro.py, trace-diff.txt), so it works on any
findings folder, merged or copied from a nightly run.
"""

from __future__ import annotations

from pathlib import Path

from fuzzdce.core.decisions import describe
from fuzzdce.core.model import STOCK
from fuzzdce.core.versions import versions
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.oracles import ORACLES
from fuzzdce.results.records import BugRecord, gone_lines
from fuzzdce.results.reproducers import bug_case, first_clause, patch_needed, standalone_script, verified
from fuzzdce.results.store import REPRO_FILE, TRACE_DIFF_FILE, read_bug
from fuzzdce.running.paths import PATHS

MAX_DIFF_LINES = 60


def title(record: BugRecord) -> str:
    """One line: who fails, how, where."""
    first_line = first_clause(record.message, 120)
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


def actual_lines(record: BugRecord) -> list[str]:
    """What each failing path did, each path once: its compile call, its calls, and each oracle's
    message there (the first finding's, a path's findings being one failure seen by several calls)."""
    lines = []
    for name, oracles in failing_paths(record).items():
        path = PATHS[name]
        messages = []
        for oracle in oracles:
            member = next(m for m in record.members if m.path == name and m.oracle == oracle)
            messages.append(f"{oracle}: {member.message[:400]}")
        lines.append(f"- `{name}` (`{path.compile.__name__}`, {', '.join(path.calls)} call): " + "; ".join(messages))
    return lines


def failing_paths(record: BugRecord) -> dict[str, tuple[str, ...]]:
    """path -> the oracles its members failed there, each path once, in ``PATHS``' order."""
    by_path: dict[str, set[str]] = {}
    for member in record.members:
        by_path.setdefault(member.path, set()).add(member.oracle)
    return {name: tuple(sorted(by_path[name])) for name in PATHS if name in by_path}


def script_of_folder(folder: Path, verify: bool = True) -> str:
    """The standalone script of the bug saved in ``folder`` (its bug.json), checked here when ``verify``:
    what ``fuzzdce issue --script`` prints, and the issue body holds."""
    record = read_bug(folder)
    repro = folder / REPRO_FILE
    case = bug_case(record, repro.read_text() if repro.is_file() else "")
    return verified(case, record.placement or STOCK) if verify else standalone_script(case)


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
        *([f"- {record.upstream}: {record.upstream.url}"] if record.upstream is not None else []),
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
    lines += ["", "## Actual", "", *actual_lines(record)]
    if record.decision is not None and record.decision.culprit is not None:
        lines += [
            "",
            f"## The decision of `{record.decision.placement}` that breaks",
            "",
            "```",
            *describe(record.decision, ORACLES),
            "```",
        ]
    patch = patch_needed(record)
    lines += [
        "",
        "## Reproduce",
        "",
        "With torch and Thunder alone: save this as `repro_" + record.id + ".py` and run `python repro_" + record.id + ".py` "
        "(or `pytest` it). It exits 1 with Thunder's exception or an AssertionError saying what differs from eager "
        "while the bug is present, and 0 once it is fixed.",
        *(["", patch] if patch else []),
        "",
        "```python",
        script_of_folder(folder).rstrip(),
        "```",
        "",
        "With fuzzdce, every check of every oracle, under the placement that showed it:",
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
    elif record.verdict in (Verdict.FIXED, Verdict.MASKED):
        lines += ["", f"Shown under the reference `{record.reference}` only ({record.standing}):", ""]
        lines += [f"    {line}" for line in gone_lines(record)]
    else:
        lines += ["", f"Shown under: {', '.join(record.placements)} (the reference `{record.reference}` included)."]
    lines += ["", f"_Found by fuzzdce (bug {record.id}, {record.count} occurrences)._"]
    return "\n".join(lines) + "\n"


def minified_issue(
    program, path: str, *, oracle: str, message: str, script: str, origin: str, line: str, placement: str = STOCK
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

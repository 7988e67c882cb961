"""The findings folder on disk: one folder per bug, written atomically as its findings appear.

Layout of ``DIR``::

    summary.json                    the campaign's ``records.RunSummary`` (rewritten as the campaign goes)
    <bug id>/bug.json               ``records.BugRecord``: verdict, placements, members (path, oracle,
                                    message, count, why joined, first seen), smallest program, counts,
                                    first seen, versions
    <bug id>/repro.py               the reproducer (fuzzdce.results.reproducers.repro_script)
    <bug id>/traces/<placement>/NN-<label>.txt   str() of each Thunder trace of the smallest program
    <bug id>/trace-diff.txt         regressions: the reference's traces against the placement's
    slow/<id>/slow.json, program.py  a program past its limit (``results.slow``): no bug

Every file is written to a temporary name and moved into place with ``os.replace``, so a crash
leaves each file either old or new, never torn. The known-findings file is read here too.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from fuzzdce.core.errors import UsageError
from fuzzdce.core.findings import Bug
from fuzzdce.core.model import STOCK
from fuzzdce.core.portable_trace import printed
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.results.records import BugRecord, KnownReason, RunSummary, Upstream, check_schema
from fuzzdce.results.reproducers import repro_script
from fuzzdce.results.slow import PROGRAM_FILE, SLOW_DIR, SLOW_FILE, SlowProgram, program_script

DEFAULT_FINDINGS_DIR = "fuzzdce-findings"  # where ``fuzzdce run`` and fuzz tests write findings
BUG_FILE = "bug.json"
SUMMARY_FILE = "summary.json"
REPRO_FILE = "repro.py"
TRACE_DIFF_FILE = "trace-diff.txt"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read_json(path: Path) -> dict[str, Any]:
    """A record file's JSON; UsageError naming the file when it is unreadable, not JSON, or of
    another schema version than this fuzzdce writes (``records.check_schema``)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UsageError(f"{path}: cannot read it as JSON ({e})") from None
    check_schema(data, path)
    return data


def read_bug(folder: Path) -> BugRecord:
    """The bug saved in ``folder`` (its bug.json)."""
    return BugRecord.from_json(read_json(folder / BUG_FILE))


def read_bugs(root: Path) -> list[tuple[BugRecord, Path]]:
    """Every bug saved in the findings folder ``root``, with its folder, by id."""
    return [(read_bug(folder), folder) for folder in sorted(p.parent for p in root.glob(f"*/{BUG_FILE}"))]


def read_summary(root: Path) -> RunSummary | None:
    """The findings folder's summary.json, or None when it has none."""
    path = root / SUMMARY_FILE
    return RunSummary.from_json(read_json(path)) if path.is_file() else None


def read_results(root: Path) -> RunSummary:
    """The findings folder's summary (empty when it has none) with its bugs as their bug.json hold
    them (summary.json lists no programs), in report order: what ``fuzzdce report`` prints."""
    summary = read_summary(root) or RunSummary(findings_dir=str(root))
    bugs = sorted((record for record, _ in read_bugs(root)), key=lambda record: record.order)
    return replace(summary, bugs=tuple(bugs))


def _file_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "trace"


# Thunder heads each trace with the pass that made it and its wall time, "(took 14 milliseconds)":
# the time differs from run to run, so two runs' traces of one program, and a reference's trace
# against the placement's, would differ in that line alone.
_PASS_TIME = re.compile(r"\(took \d+ milliseconds\)")


def _text(trace: Any) -> str:
    """The trace as Thunder prints it, its passes' wall times left out."""
    return _PASS_TIME.sub("(took <time>)", printed(trace))


def trace_diff(stock: Iterable[tuple[str, Any]], placement: Iterable[tuple[str, Any]], name: str, reference: str = STOCK) -> str:
    """The reference's (stock's) traces against the placement's, label by label, as unified diffs
    without context: the bound symbols (and printed subsymbols) that differ. Empty when they print the same."""
    theirs = dict(stock)
    parts = []
    for label, trace in placement:
        if label not in theirs:
            parts.append(f"### {label}: only under {name}\n")
            continue
        diff = difflib.unified_diff(
            _text(theirs[label]).splitlines(),
            _text(trace).splitlines(),
            f"{reference}: {label}",
            f"{name}: {label}",
            n=0,
            lineterm="",
        )
        lines = list(diff)
        if lines:
            parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


class FindingsFolder:
    """Writes bugs and the summary under ``root``, for the run ``run_id`` (``CampaignConfig.run_id``);
    ``builds``: NAME -> NAME=TARGET of the campaign's builds, which its records and reproducers name;
    ``reference``: the placement the campaign judges against (a regression's reproducer compares with it)."""

    def __init__(
        self,
        root: str | os.PathLike,
        run_id: str | None = None,
        builds: Mapping[str, str] | None = None,
        reference: str = STOCK,
        thunders: Mapping[str, str] | None = None,
    ) -> None:
        self.root = Path(root).absolute()
        self.run_id = run_id
        self.builds = dict(builds or {})
        self.reference = reference
        self.thunders = dict(thunders or {})  # NAME -> which Thunder it is (``builds.describe_thunder``)

    def clear(self) -> None:
        """Remove what an earlier campaign wrote here (bug folders, the summary), nothing else."""
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise UsageError(f"findings folder {self.root} is a file: give --findings a folder")
        for child in self.root.iterdir():
            if child.is_dir() and (child / BUG_FILE).exists():
                shutil.rmtree(child)
        (self.root / SUMMARY_FILE).unlink(missing_ok=True)
        shutil.rmtree(self.root / SLOW_DIR, ignore_errors=True)

    def folder(self, bug: Bug) -> Path:
        return self.root / bug.id

    def write_record(self, bug: Bug) -> None:
        """bug.json only: cheap enough for every occurrence (a count changes)."""
        write_bug(self.folder(bug), BugRecord.of(bug, self.run_id, self.builds, self.reference, self.thunders))

    def write(self, bug: Bug, traces: Mapping[str, Iterable[tuple[str, Any]]] | None = None) -> None:
        """The whole bug: its reproducer, the traces (by placement) of its smallest program and, for a
        regression, their difference from the reference's; the record last."""
        folder = self.folder(bug)
        write_atomically(folder / REPRO_FILE, repro_script(bug, self.builds, self.reference))
        if traces is not None:
            write_traces(folder / "traces", traces)
            diff_file = folder / TRACE_DIFF_FILE
            diff_file.unlink(missing_ok=True)
            reference = self.reference
            if bug.verdict == Verdict.REGRESSION and reference in traces and bug.placement in traces:
                write_atomically(diff_file, trace_diff(traces[reference], traces[bug.placement], bug.placement, reference))
        self.write_record(bug)  # last: a bug.json means the folder is complete

    def sync(self, bugs: Iterable[Bug], *, remove_others: bool = True) -> None:
        """Rewrite each bug's reproducer and record and, with ``remove_others``, remove the folders
        of bugs not among ``bugs`` (merged away). Only a writer that knows every bug of the folder
        may remove: a lane that did would delete a folder another lane is writing."""
        keep = set()
        for bug in bugs:
            keep.add(bug.id)
            self.write(bug)
        if remove_others and self.root.exists():
            for child in self.root.iterdir():
                if child.is_dir() and (child / BUG_FILE).exists() and child.name not in keep:
                    shutil.rmtree(child)

    def write_slow(self, record: SlowProgram) -> Path:
        """A slow program's folder: its record and the script that runs it again; returns the script's path."""
        folder = self.root / SLOW_DIR / record.id
        write_atomically(folder / PROGRAM_FILE, program_script(record))
        write_atomically(folder / SLOW_FILE, json.dumps(record.to_json(), indent=2, default=str) + "\n")
        return folder / PROGRAM_FILE

    def write_summary(self, summary: RunSummary) -> None:
        write_atomically(self.root / SUMMARY_FILE, json.dumps(summary.to_json(), indent=2, default=str) + "\n")


def write_traces(traces_dir: Path, traces: Mapping[str, Iterable[tuple[str, Any]]]) -> None:
    """``traces_dir``: one folder per placement, one file per trace, replacing what was there (the
    traces of a larger program seen earlier). Lanes share a findings folder and may write one bug at
    once: each writes a folder of its own and swaps it in by renaming, so no writer ever sees files
    vanish under it; of two at once, one writer's folder stands, whole (both are the same bug's traces)."""
    fresh = Path(tempfile.mkdtemp(prefix=".traces-", dir=traces_dir.parent))
    for placement, labelled in traces.items():
        for i, (label, trace) in enumerate(labelled):
            write_atomically(fresh / _file_label(placement) / f"{i:02d}-{_file_label(label)}.txt", _text(trace))
    old = Path(tempfile.mkdtemp(prefix=".traces-old-", dir=traces_dir.parent))
    try:
        os.replace(traces_dir, old)  # an empty folder is replaced
    except FileNotFoundError:
        pass
    try:
        os.rename(fresh, traces_dir)
    except OSError:  # another writer's traces went in between
        shutil.rmtree(fresh, ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def write_bug(folder: Path, record: BugRecord) -> None:
    """``folder``/bug.json: written last of a bug's files, since a bug.json means the folder is complete."""
    write_atomically(folder / BUG_FILE, json.dumps(record.to_json(), indent=2) + "\n")


def bug_folders(path: str | os.PathLike) -> list[Path]:
    """The bug folders at ``path``: itself if it holds bug.json, else its subfolders that do."""
    path = Path(path)
    if (path / BUG_FILE).is_file():
        return [path]
    if path.is_file() and path.name in (BUG_FILE, REPRO_FILE):
        return [path.parent]
    if not path.is_dir():
        raise UsageError(f"{path} is neither a bug folder nor a findings folder (one holding {BUG_FILE})")
    return sorted(p.parent for p in path.glob(f"*/{BUG_FILE}"))


def find_bug(findings: str | os.PathLike, bug: str) -> Path:
    """The folder of bug ``bug`` (an id, or a unique prefix of one) in findings folder ``findings``,
    or a bug folder given directly."""
    if (Path(bug) / BUG_FILE).is_file():
        return Path(bug)
    matches = [f for f in bug_folders(findings) if f.name.startswith(bug)]
    if len(matches) != 1:
        known = ", ".join(f.name for f in bug_folders(findings)) or "none"
        raise UsageError(f"bug {bug!r}: {'no' if not matches else 'more than one'} match in {findings} (bugs there: {known})")
    return matches[0]


def load_known(path: str | os.PathLike) -> dict[str, str]:
    """Read a known-findings file: signature (full, or the 10-character id) -> why it is suppressed.

    The file is JSON: a list of ``{"signature": ..., "reason": ...}`` (summary.json's findings
    entries can be pasted as they are, with a reason added), or one object mapping signature to reason.
    An entry may name the bug in Thunder's tracker: ``"upstream": {"number": N, "title": ...}``
    (optional ``"repo"``, default Lightning-AI/lightning-thunder, and ``"kind"``: issue or pull); its
    reason then carries it (``records.KnownReason``) to the bug's record and reports.
    """
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise UsageError(f"known-findings file {path}: cannot read it ({e.strerror})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"known-findings file {path}: not JSON ({e}); see fuzzdce run --help") from None
    if isinstance(data, dict):
        entries = [{"signature": k, "reason": v} for k, v in data.items()]
    elif isinstance(data, list):
        entries = data
    else:
        raise UsageError(f"known-findings file {path}: expected a list of {{signature, reason}} objects")
    known = {}
    for i, entry in enumerate(entries):
        if not (isinstance(entry, dict) and isinstance(entry.get("signature"), str) and isinstance(entry.get("reason"), str)):
            raise UsageError(f"known-findings file {path}: entry {i} needs a string 'signature' and a string 'reason'")
        if not entry["reason"].strip():
            raise UsageError(f"known-findings file {path}: entry {i} ({entry['signature'][:40]}) has an empty reason")
        known[entry["signature"]] = KnownReason(entry["reason"], upstream_entry(path, i, entry.get("upstream")))
    return known


def upstream_entry(path, i: int, data) -> Upstream | None:
    """Entry ``i``'s upstream reference, checked; None when it has none."""
    if data is None:
        return None
    if not (
        isinstance(data, dict)
        and isinstance(data.get("number"), int)
        and set(data) <= {"number", "title", "repo", "kind"}
        and data.get("kind", "issue") in ("issue", "pull")
    ):
        raise UsageError(
            f"known-findings file {path}: entry {i}'s upstream must be "
            '{"number": N, "title": TITLE} (optional "repo": OWNER/NAME, "kind": "issue" or "pull")'
        )
    return Upstream(**data)

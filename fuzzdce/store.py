"""The findings folder on disk: one folder per finding, written atomically as findings appear.

Layout of ``DIR``::

    summary.json                  the campaign's summary (rewritten as the campaign goes)
    <id>/finding.json             verdict, placements, path, oracle, signature, message, n_ops, count, versions
    <id>/repro.py                 the standalone reproducer (fuzzdce.repro.script)
    <id>/traces/<placement>/NN-<label>.txt   str() of each Thunder trace involved

Every file is written to a temporary name and moved into place with ``os.replace``, so a crash
leaves each file either old or new, never torn. The known-findings file is read here too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from fuzzdce.builds import build_specs
from fuzzdce.errors import UsageError
from fuzzdce.profiles import DEFAULT_FINDINGS_DIR
from fuzzdce.findings import Finding
from fuzzdce.repro import script
from fuzzdce.versions import versions

FINDING_FILE = "finding.json"
SUMMARY_FILE = "summary.json"
REPRO_FILE = "repro.py"


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


def finding_record(finding: Finding) -> dict[str, Any]:
    """What finding.json holds."""
    v = finding.violation
    return {
        "id": finding.id,
        "verdict": finding.verdict,
        "placements": list(finding.placements),
        "placement": finding.placement,
        "builds": build_specs(finding.placements),  # NAME -> NAME=TARGET, for those that are builds
        "path": v.path,
        "oracle": v.oracle,
        "signature": finding.signature,
        "violation_signature": finding.violation_signature,
        "error_type": v.error_type,
        "frame": v.frame,
        "message": v.message,
        "n_ops": finding.program.n_ops,
        "ops": list(finding.program.ops),
        "count": finding.count,
        "known": finding.known_reason,
        "confirmed": finding.confirmed,
        "versions": versions(),
    }


def _file_label(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "trace"


class FindingsFolder:
    """Writes findings and the summary under ``root``."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root).absolute()

    def clear(self) -> None:
        """Remove what an earlier campaign wrote here (finding folders and the summary), nothing else."""
        if not self.root.exists():
            return
        if not self.root.is_dir():
            raise UsageError(f"findings folder {self.root} is a file: give --findings a folder")
        for child in self.root.iterdir():
            if child.is_dir() and (child / FINDING_FILE).exists():
                shutil.rmtree(child)
        (self.root / SUMMARY_FILE).unlink(missing_ok=True)

    def folder(self, finding: Finding) -> Path:
        return self.root / finding.id

    def write_record(self, finding: Finding) -> None:
        """finding.json only: cheap enough for every occurrence (the count changes)."""
        write_atomically(self.folder(finding) / FINDING_FILE, json.dumps(finding_record(finding), indent=2) + "\n")

    def write(self, finding: Finding, traces: Mapping[str, Iterable[tuple[str, Any]]] = {}) -> None:
        """The whole finding: its reproducer, the traces (by placement) of its smallest program, the record."""
        folder = self.folder(finding)
        write_atomically(folder / REPRO_FILE, script(finding))
        traces_dir = folder / "traces"
        if traces_dir.exists():  # traces of a larger program seen earlier
            shutil.rmtree(traces_dir)
        for placement, labelled in traces.items():
            for i, (label, trace) in enumerate(labelled):
                try:
                    text = str(trace)
                except Exception as e:  # a malformed trace may not even print; say so
                    text = f"# str(trace) raised {type(e).__name__}: {e}\n"
                write_atomically(traces_dir / _file_label(placement) / f"{i:02d}-{_file_label(label)}.txt", text)
        self.write_record(finding)  # last: a finding.json means the folder is complete

    def rewrite(self, finding: Finding) -> None:
        """Reproducer and record only, keeping the traces on disk (merging lanes has none at hand)."""
        write_atomically(self.folder(finding) / REPRO_FILE, script(finding))
        self.write_record(finding)

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        write_atomically(self.root / SUMMARY_FILE, json.dumps(summary, indent=2, default=str) + "\n")


def finding_folders(path: str | os.PathLike) -> list[Path]:
    """The finding folders at ``path``: itself if it holds finding.json, else its subfolders that do."""
    path = Path(path)
    if (path / FINDING_FILE).is_file():
        return [path]
    if path.is_file() and path.name in (FINDING_FILE, REPRO_FILE):
        return [path.parent]
    if not path.is_dir():
        raise UsageError(f"{path} is neither a finding folder nor a findings folder (one holding {FINDING_FILE})")
    return sorted(p.parent for p in path.glob(f"*/{FINDING_FILE}"))


def load_known(path: str | os.PathLike) -> dict[str, str]:
    """Read a known-findings file: signature (full, or the 10-character id) -> why it is suppressed.

    The file is JSON: a list of ``{"signature": ..., "reason": ...}`` (summary.json's findings
    entries can be pasted as they are, with a reason added), or one object mapping signature to reason.
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
        known[entry["signature"]] = entry["reason"]
    return known

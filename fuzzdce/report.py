"""Human-readable results: the per placement x oracle table, each finding, and its reproducer."""

from __future__ import annotations

from collections.abc import Iterable

from fuzzdce.findings import Finding
from fuzzdce.oracles import ORACLES


def repro_placement(finding: Finding) -> str:
    """Stock for a baseline finding; otherwise the first placement it occurs under."""
    if finding.verdict == "baseline" or not finding.placements:
        return "stock"
    return finding.placements[0]


def reproducer(finding: Finding) -> str:
    """A standalone script: exits 1 and prints the failure while the bug is present, 0 once fixed."""
    v = finding.violation
    placement = repro_placement(finding)
    program = finding.program
    return (
        f"# fuzzdce finding {finding.id}: {v.oracle} on {v.path} under {placement}\n"
        "import torch\n\n"
        f"{program.source()}\n"
        f"{program.inputs_source()}\n"
        'if __name__ == "__main__":\n'
        "    from fuzzdce.repro import reproduce\n\n"
        f"    raise SystemExit(reproduce(program, make_inputs, path={v.path!r}, placement={placement!r}, oracle={v.oracle!r}))\n"
    )


def table(findings: Iterable[Finding], placements: list[str]) -> str:
    """Counts of distinct findings per placement (rows) and oracle (columns)."""
    findings = list(findings)
    oracles = list(ORACLES)
    width = max(len(p) for p in placements) + 2
    lines = ["placement".ljust(width) + "".join(o.rjust(10) for o in oracles)]
    for p in placements:
        counts = [sum(1 for f in findings if p in f.placements and f.violation.oracle == o) for o in oracles]
        lines.append(p.ljust(width) + "".join(str(c).rjust(10) for c in counts))
    return "\n".join(lines)


def render(findings: Iterable[Finding], placements: list[str]) -> str:
    findings = list(findings)
    out = ["", "== fuzzdce results: distinct findings per placement and oracle ==", table(findings, placements), ""]
    if not findings:
        out.append("no findings")
    for f in sorted(findings, key=lambda f: (f.verdict != "placement-induced", f.violation.path, f.violation.oracle)):
        v = f.violation
        out += [
            f"--- finding {f.id} [{f.verdict}] under {', '.join(f.placements) or '(did not reproduce)'} ---",
            f"oracle: {v.oracle}   path: {v.path}   occurrences: {f.count}   ops: {f.program.n_ops}",
            f"message: {v.message}",
            "",
            reproducer(f),
        ]
    return "\n".join(out)

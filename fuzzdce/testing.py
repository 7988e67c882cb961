"""fuzzdce inside a pytest run.

In a test module of your own::

    from fuzzdce.testing import fuzz_test

    test_my_dce = fuzz_test(placements=["stock", "my_patch:my_dce"])

The test runs as many programs as the loaded fuzz profile says (``--fuzz-profile ci|dev|nightly``),
fails with the shrunk program when a placement breaks something stock Thunder does not, and writes
its findings, triaged, to the same findings folder as ``fuzzdce run`` (``--fuzz-findings DIR``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hypothesis import given

from fuzzdce.execution import DEFAULT_PATHS
from fuzzdce.placements import DEFAULT_PLACEMENTS, resolve
from fuzzdce.program import Program
from fuzzdce.store import DEFAULT_FINDINGS_DIR
from fuzzdce.strategies import programs

# Set by the pytest plugin from --fuzz-findings.
findings_dir: str = DEFAULT_FINDINGS_DIR


def fuzz_test(
    placements: Sequence[str] = DEFAULT_PLACEMENTS, paths: Sequence[str] = DEFAULT_PATHS, *, timeout: float = 60.0
):
    """A pytest test function fuzzing ``placements`` on ``paths`` under the loaded Hypothesis profile."""
    from fuzzdce.campaign import Campaign, failure_type

    resolved = [resolve(name) for name in placements]  # a bad name fails at collection, clearly

    def test_fuzzdce() -> None:
        campaign = Campaign(
            resolved,
            paths=paths,
            timeout=timeout,
            findings_dir=findings_dir,
            log=lambda line: print(line, file=sys.stderr),
        )

        @given(programs())
        def fuzz(program: Program) -> None:
            to_shrink = campaign.observe(program)
            if to_shrink:
                raise failure_type(to_shrink[0].signature)(str(to_shrink[0].violation)) from None

        try:
            fuzz()
        finally:
            campaign.finish()

    return test_fuzzdce

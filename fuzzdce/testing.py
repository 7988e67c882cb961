"""fuzzdce inside a pytest run.

In a test module of your own::

    from fuzzdce.testing import fuzz_test

    test_my_dce = fuzz_test(placements=["stock", "my_patch:my_dce"])

The test runs as many programs as the loaded fuzz profile says (``--fuzz-profile ci|dev|nightly``,
or any Hypothesis profile you load), fails with the shrunk program when a placement breaks something
stock Thunder does not (Thunder's own bugs fail it only when stock is all it runs), and writes its findings, triaged, to the same findings folder as
``fuzzdce run`` (``--fuzz-findings DIR``). It is the campaign's own Hypothesis test, one generation round, then each cause's shrinking.
fuzzdce's own failure (a harness error) is no failing example: it stops the session with exit 3.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

from fuzzdce.core.errors import HarnessError, UsageError
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.results.report import render
from fuzzdce.results.store import DEFAULT_FINDINGS_DIR
from fuzzdce.running.evaluate import Evaluator
from fuzzdce.running.paths import DEFAULT_PATHS
from fuzzdce.running.placements import DEFAULT_PLACEMENTS, resolve
from fuzzdce.strategies.opinfo import DEFAULT_OPINFO_RATE

# The exit code of a session a harness error stopped: fuzzdce run's (and pytest's own for an internal error).
HARNESS_EXIT = 3


def fuzz_test(
    placements: Sequence[str] = DEFAULT_PLACEMENTS,
    paths: Sequence[str] = DEFAULT_PATHS,
    *,
    timeout: float = 60.0,
    evaluator: Evaluator | None = None,
    opinfo_rate: float = DEFAULT_OPINFO_RATE,
    ops: Sequence[str] = (),
    sandbox: bool = True,
):
    """A pytest test function fuzzing ``placements`` on ``paths`` under the loaded Hypothesis settings.

    ``evaluator`` replaces the evaluation (tests of fuzzdce itself use a stand-in).
    ``opinfo_rate``: the share of programs holding OpInfo steps (``--opinfo-rate``).
    ``ops``: the catalog entries programs are drawn from (``--ops``; empty: the whole catalog).
    ``sandbox``: Thunder's work (eager's too) runs in a worker process, as a campaign's does, so a
    C++ abort or a hang in torch or Thunder is a ``crash`` or ``timeout`` finding, not the end of the
    pytest session; False runs it in the test's own process (a debugger reaches it; an abort ends
    the session).
    """
    for name in placements:
        resolve(name)  # a bad name fails at collection, clearly
    CampaignConfig.of(placements, paths, ops=tuple(ops))  # so does an unknown path or op (UsageError)

    def test_fuzzdce(request) -> None:
        # Built when the test runs, so the profile loaded by then (the plugin's) is the one used.
        findings_dir = request.config.getoption("fuzz_findings", None) or DEFAULT_FINDINGS_DIR
        config = CampaignConfig.of(
            placements,
            paths,
            timeout=timeout,
            findings_dir=findings_dir,
            shrink_baseline=False,
            opinfo_rate=opinfo_rate,
            ops=tuple(ops),
            sandbox=sandbox,
        )
        try:
            config.scope.check_runnable()
        except UsageError as e:  # a CUDA path on a machine without CUDA: not run, and said so, never a pass
            pytest.skip(str(e))
        campaign = Campaign(config, evaluator=evaluator, log=lambda line: print(line, file=sys.stderr))
        try:
            try:
                campaign.driver.hypothesis_round(0)  # generation: every program evaluated in full
                campaign.shrink_causes()  # then each cause shrunk in a run of its own
            except HarnessError:
                # finish only writes what was found: a job run now (joining, confirming) would run
                # inside this error's handling and be reported in its place
                campaign.mark_interrupted()
                raise
            finally:
                campaign.finish()
        except HarnessError as e:
            # fuzzdce's own error, never a failing example: the session stops with exit 3, as `fuzzdce run` does
            pytest.exit(f"fuzzdce: {e}", returncode=HARNESS_EXIT)
        failing = [b for b in campaign.ledger.bugs() if b.reportable or (campaign.ledger.stock_only and b.count)]
        if failing:
            # The bugs and their shrunk programs, in pytest's captured output.
            print(render(campaign.summary(), findings_dir))
            raise AssertionError(f"fuzzdce: {len(failing)} bug(s); the first:\n{failing[0].program.source()}")

    return test_fuzzdce

"""One seed, one sequence: the same seed and configuration draw the same programs whatever the
process imported before. Compares the programs themselves (their source and inputs), drawn in
two fresh processes with different import histories and in this one (pytest, its plugin loaded)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

DRAW = r'''
import json, sys
{before}
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.running.evaluate import Evaluation, Evaluator
from fuzzdce.core.model import Outcome


class Recording(Evaluator):
    """Evaluates nothing; records each program it is handed."""
    drawn = []

    def __call__(self, program, placements, *, paths, timeout=None, **options):
        Recording.drawn.append(program.source() + program.inputs_source())
        names = ["stock"] + [p.name for p in placements if not p.is_stock]
        return {{n: Evaluation(program, n, Outcome("eager", "stock")) for n in names}}

    def close(self):
        pass


config = CampaignConfig.of(("stock", "symcall"), ("jit",), max_examples=40, seed=7, profile="dev", database="none")
campaign = Campaign(config, evaluator=Recording(), log=lambda line: None)
campaign.driver.run()
json.dump(Recording.drawn, sys.stdout)
'''

NOTHING = ""
EVERYTHING = """
import pkgutil, importlib, fuzzdce
for module in pkgutil.walk_packages(fuzzdce.__path__, "fuzzdce."):
    if not module.name.endswith("__main__"):
        importlib.import_module(module.name)
import torch, thunder
thunder.jit(lambda x: torch.sin(x) + 1)(torch.ones(3))
import hypothesis
hypothesis.strategies.integers().example()  # Hypothesis's own global random used once
"""


def draw_programs_outside_the_driver() -> None:
    from hypothesis import HealthCheck, given, settings

    import fuzzdce.results.html_report  # noqa: F401  (modules whose literals Hypothesis would pick up)
    import fuzzdce.results.issue  # noqa: F401
    from fuzzdce.strategies import programs

    @settings(max_examples=100, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def draw(program):
        pass

    draw()


def drawn(before: str) -> list[str]:
    script = DRAW.format(before=before)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_one_seed_draws_the_same_programs_whatever_was_imported_before():
    bare, everything = drawn(NOTHING), drawn(EVERYTHING)
    assert len(bare) == 40 and len(set(bare)) == 40
    first_difference = next((i for i, (a, b) in enumerate(zip(bare, everything)) if a != b), None)
    assert bare == everything, (
        f"program {first_difference} differs:\n{bare[first_difference]}\n---\n{everything[first_difference]}"
    )
    # A test that drew programs in this process before, outside fuzzdce's driver, leaves Hypothesis's
    # cache of local constants filled (the suite has many): the driver must not read it.
    draw_programs_outside_the_driver()
    namespace: dict = {}
    exec(DRAW.format(before="").replace("json.dump(Recording.drawn, sys.stdout)", ""), namespace)
    assert namespace["Recording"].drawn == bare, "drawn differently inside pytest"


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

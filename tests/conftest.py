import os
import sys
import warnings

import pytest

# tests/ holds planted.py, the fault placements imported as "planted:NAME".
sys.path.insert(0, os.path.dirname(__file__))
warnings.filterwarnings("ignore")


@pytest.fixture
def stock():
    from fuzzdce.running.placements import resolve

    return resolve("stock")


pytest_plugins = ["pytester"]


def pytest_configure(config):
    """This project's own tests run under a fuzz profile: the one asked for (the plugin loads it),
    else the default one (``ci`` under CI, else ``dev``): the plugin loads none unasked."""
    from fuzzdce.fuzzing import profiles

    if profiles.requested_profile(config.getoption("fuzz_profile")) is None:
        profiles.load(None, config.getoption("fuzz_database"))


def evaluate_under(program, placement_name, paths=None):
    """``program`` evaluated under stock and ``placement_name``: placement name -> Evaluation."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    return Evaluator()(program, [resolve(placement_name)], paths=paths or DEFAULT_PATHS)

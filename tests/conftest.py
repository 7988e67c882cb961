import os
import sys
import warnings

import pytest

# tests/ holds planted.py, the fault placements imported as "planted:NAME".
sys.path.insert(0, os.path.dirname(__file__))
warnings.filterwarnings("ignore")


@pytest.fixture
def stock():
    from fuzzdce.placements import resolve

    return resolve("stock")


pytest_plugins = ["pytester"]


def evaluate_under(program, placement_name, paths=None):
    """``program`` evaluated under stock and ``placement_name``: placement name -> Evaluation."""
    from fuzzdce.evaluate import Evaluator
    from fuzzdce.paths import DEFAULT_PATHS
    from fuzzdce.placements import resolve

    return Evaluator()(program, [resolve(placement_name)], paths=paths or DEFAULT_PATHS)

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

"""The order ./dev test hands the files to xdist's workers in: the files of slow tests first, so
that the run ends on short files (conftest's ``pytest_collection_modifyitems``)."""

from types import SimpleNamespace

import conftest
from test_suite_limits import dev_test_flags


def item(nodeid: str, slow: bool = False):
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: object() if slow and name == "slow" else None)


COLLECTED = [
    *(item(f"tests/test_many_fast.py::test_{i}") for i in range(5)),
    item("tests/test_one_campaign.py::test_campaign", slow=True),
    item("tests/test_one_campaign.py::test_quick"),
    item("tests/test_one_fast.py::test_quick"),
]


def test_under_xdist_the_files_of_slow_tests_go_first_each_in_its_own_order(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    items = list(COLLECTED)
    conftest.pytest_collection_modifyitems(None, None, items)
    assert [i.nodeid for i in items] == [
        "tests/test_one_campaign.py::test_campaign",
        "tests/test_one_campaign.py::test_quick",
        *(f"tests/test_many_fast.py::test_{i}" for i in range(5)),
        "tests/test_one_fast.py::test_quick",
    ]


def test_outside_xdist_the_collection_order_is_kept(monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    items = list(COLLECTED)
    conftest.pytest_collection_modifyitems(None, None, items)
    assert items == COLLECTED


def test_dev_test_keeps_the_collection_order():
    """xdist's own order (by number of tests per file) would replace the one above."""
    assert {"--dist", "loadfile", "--no-loadscope-reorder"} <= set(dev_test_flags())

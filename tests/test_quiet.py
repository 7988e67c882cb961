"""The console keeps what matters: torch's repeated tracebacks of what it raises are silenced, its other errors are not."""

from __future__ import annotations

import logging

import pytest
import torch

from fuzzdce.core.quiet import REPEATS_WHAT_IT_RAISES, quiet_library_warnings


@pytest.fixture
def restored_levels():
    names = ("torch", "torch._dynamo", *REPEATS_WHAT_IT_RAISES)
    levels = {name: logging.getLogger(name).level for name in names}
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def failing_meta_kernel() -> None:
    """A meta kernel that fails under fake tensors, as Thunder's splitter and Dynamo meet them."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 3)
        with pytest.raises(RuntimeError):
            x.expand(3)


def test_a_failing_meta_kernel_is_raised_not_logged(restored_levels):
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    collected = Collected()
    logger.addHandler(collected)
    logger.setLevel(logging.NOTSET)  # as torch leaves it: what a process quieted for ERROR alone logged
    logging.getLogger("torch").setLevel(logging.ERROR)
    try:
        failing_meta_kernel()
        assert [r.levelno for r in collected.records] == [logging.ERROR], "the fault planted: torch logs it unsilenced"
        collected.records.clear()
        quiet_library_warnings()
        failing_meta_kernel()
    finally:
        logger.removeHandler(collected)
    assert collected.records == []


def test_torch_errors_elsewhere_still_show(restored_levels):
    quiet_library_warnings()
    assert logging.getLogger("torch._dynamo").isEnabledFor(logging.ERROR)
    assert not logging.getLogger("torch._dynamo").isEnabledFor(logging.WARNING)

"""Silence library chatter: programs trigger torch and Thunder warnings by the thousand; they are not findings."""

from __future__ import annotations

import logging
import warnings

# Loggers that report at ERROR what is raised right after: the raise is what a path records (a
# finding, a split reason), so the log only repeats it, with its traceback, on the console. Fake
# tensors log every meta kernel that fails (a program's op on shapes Thunder's splitter or Dynamo
# tries out) before re-raising it: hundreds of tracebacks in a short campaign.
REPEATS_WHAT_IT_RAISES = ("torch._subclasses.fake_tensor",)


def quiet_library_warnings() -> None:
    """Ignore Python warnings and torch's log below ERROR, in this process; and the loggers that
    repeat what they raise (``REPEATS_WHAT_IT_RAISES``) altogether."""
    warnings.filterwarnings("ignore")
    logging.getLogger("torch").setLevel(logging.ERROR)
    for name in REPEATS_WHAT_IT_RAISES:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)

"""Silence library chatter: programs trigger torch and Thunder warnings by the thousand; they are not findings."""

from __future__ import annotations

import logging
import warnings


def quiet_library_warnings() -> None:
    """Ignore Python warnings and torch's log below ERROR, in this process."""
    warnings.filterwarnings("ignore")
    logging.getLogger("torch").setLevel(logging.ERROR)

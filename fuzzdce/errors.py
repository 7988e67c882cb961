"""fuzzdce's exceptions. Imports nothing of fuzzdce, so every module can import it."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad user input (unknown placement, bad option value, unreadable file).

    The command line prints it as one line and exits with code 2; its message names the valid
    choices or says what to do instead.
    """


class CompileTimeout(Exception):
    """Raised in the main thread when a compile path runs past its time limit."""

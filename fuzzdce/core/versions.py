"""The versions a result was made with: recorded in every finding, summary and reproducer."""

from __future__ import annotations

import sys

import thunder
import torch

from fuzzdce import __version__


def versions() -> dict[str, str]:
    """Python, torch, Thunder and fuzzdce versions of this process."""
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "thunder": getattr(thunder, "__version__", "unknown"),
        "fuzzdce": __version__,
    }

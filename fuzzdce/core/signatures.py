"""What makes two violations the same: messages normalised, signatures, short ids.

Below the oracles (they normalise split reasons with it) and above ``model`` only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from fuzzdce.core.model import Verdict

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Thunder and FX name values with a lowercase stem and a counter (t12, l_v0_, mul_3, subgraph 2, ...).
_COUNTED_NAME = re.compile(r"\b([A-Za-z_]*?[A-Za-z])_?\d+_?\b")
# Numbers, NaN and infinities included: which value a bug produced does not identify the bug.
_NUMBER = re.compile(r"(?<![A-Za-z_])[-+]?(\d+(\.\d+)?(e[-+]?\d+)?|nan\b|inf\b)")


@functools.lru_cache(maxsize=1 << 16)  # joining asks for the same messages' forms again and again
def normalise(message: str) -> str:
    """The message with addresses, counted names and numbers abstracted away.

    Two occurrences of one bug differ only in which proxy it hit and in the numbers involved.
    """
    message = _ADDRESS.sub("<addr>", message)
    message = _COUNTED_NAME.sub(r"\1<n>", message)
    return _NUMBER.sub("<num>", message)


def finding_signature(verdict: Verdict, placements: Iterable[str], violation_signature: str) -> str:
    """A finding's signature: its verdict and the placements showing it, then the violation's."""
    return " | ".join((verdict, ",".join(placements), violation_signature))


def short_id(sig: str) -> str:
    """Ten hex digits naming a signature (folder names, known-findings entries)."""
    return hashlib.sha1(sig.encode()).hexdigest()[:10]


def identity_id(identity: Sequence[Any]) -> str:
    """Ten hex digits naming an identity (a tuple of strings and nested tuples: ``faults.Fault.identity``,
    a finding's, a bug's): the hash of its JSON, so a tuple read back from a record as lists names alike."""
    return short_id(json.dumps(identity, separators=(",", ":"), ensure_ascii=False))


def as_identity(data: Any) -> Any:
    """An identity as JSON read it back (lists) made a tuple again, nested."""
    return tuple(as_identity(d) for d in data) if isinstance(data, list | tuple) else data

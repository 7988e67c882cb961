"""fuzzdce: differential fuzz testing of Lightning Thunder's dead-code-elimination placements."""

__version__ = "0.1.0"

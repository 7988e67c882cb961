"""Where reproducers written before fuzzdce's modules moved into wings find ``reproduce_all``
(``from fuzzdce.repro import reproduce_all``); new ones import it from ``fuzzdce.results.repro``."""

from fuzzdce.results.repro import reproduce_all

__all__ = ["reproduce_all"]

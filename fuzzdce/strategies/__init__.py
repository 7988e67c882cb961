"""Hypothesis strategies that build fuzzdce programs."""

from fuzzdce.strategies.catalog import BY_NAME, CATALOG, Meta, OpSpec
from fuzzdce.strategies.programs import programs, tensor_inputs

__all__ = ["BY_NAME", "CATALOG", "Meta", "OpSpec", "programs", "tensor_inputs"]

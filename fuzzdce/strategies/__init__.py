"""Hypothesis strategies that build fuzzdce programs."""

from fuzzdce.strategies.catalog import BY_NAME, CATALOG, FAMILIES, Meta, Operand, OpSpec, thunder_support
from fuzzdce.strategies.programs import programs, tensor_inputs

__all__ = ["BY_NAME", "CATALOG", "FAMILIES", "Meta", "Operand", "OpSpec", "programs", "tensor_inputs", "thunder_support"]

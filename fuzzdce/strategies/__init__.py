"""Hypothesis strategies that build fuzzdce programs, and the op catalog they draw from."""

from fuzzdce.strategies.catalog import BY_NAME, CATALOG, thunder_support
from fuzzdce.strategies.programs import programs, tensor_inputs
from fuzzdce.strategies.spec import Meta, Operand, OpSpec

__all__ = ["BY_NAME", "CATALOG", "Meta", "Operand", "OpSpec", "programs", "tensor_inputs", "thunder_support"]

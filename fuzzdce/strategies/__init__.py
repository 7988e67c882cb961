"""fuzzdce's strategies wing: Hypothesis strategies that build fuzzdce programs, and the op catalog
they draw from.

Modules:
- ``spec``: the catalog's vocabulary: what an entry states of its op and operands.
- ``ops_elementwise``, ``ops_structure``, ``ops_nn``, ``ops_indexing``, ``ops_training``,
  ``ops_device``: the catalog's entries, by family.
- ``catalog``: every entry joined, and what Thunder makes of each.
- ``edges``: values at each op's edges, made into values an input is drawn among.
- ``opinfo``: the samples of Thunder's and torch's OpInfos as program steps.
- ``model_blocks``: the blocks of the models Thunder ships, as programs.
- ``sources``: where a program came from: the catalog, the OpInfos, or a model block.
- ``programs``: the Hypothesis strategies for programs.
"""

from fuzzdce.strategies.catalog import BY_NAME, CATALOG, thunder_support
from fuzzdce.strategies.programs import programs, tensor_inputs
from fuzzdce.strategies.spec import Meta, Operand, OpSpec

__all__ = ["BY_NAME", "CATALOG", "Meta", "Operand", "OpSpec", "programs", "tensor_inputs", "thunder_support"]

"""Device mixes eager accepts: a program on a CUDA path meets tensors of the CPU beside its own.

On the CPU every entry here is plain arithmetic; on a device path the literal and the values
moved with ``.cpu()`` stay on the CPU while the inputs are on the device, which eager accepts for
0-d tensors (a CPU scalar tensor is a scalar to every device) and for explicit moves. Each entry
states its rule as every catalog entry does; the program strategy checks each drawn step on the
CPU, and on a device path eager on that device is the reference. Each belongs to the family of
what it computes (scalar, binary, convert, factory): families are drawn equally often, and a
family of their own would spend a twentieth of every program on them.
"""

from __future__ import annotations

from fuzzdce.strategies.spec import ALL_FLOATS, FLOATS, NUMERIC, Operand, OpSpec, const, params, small_floats

OPS: tuple[OpSpec, ...] = (
    # A 0-d CPU tensor written in the program, as a scalar operand of a binary op.
    OpSpec(
        "mul_cpu_scalar_tensor",
        "scalar",
        "torch.mul({0}, torch.tensor({v}))",
        ALL_FLOATS,
        params=params(v=const(small_floats())),
        torch_op="torch.mul",
    ),
    # A value reduced to 0-d and moved to the CPU, added back to a value on the program's device.
    OpSpec(
        "add_cpu_scalar_value",
        "binary",
        "{0} + {1}.sum().cpu()",
        FLOATS,
        (Operand(), Operand(dtypes=FLOATS)),
        torch_op="torch.Tensor.cpu",
    ),
    # A round trip through the CPU: moved there and back to the device of the value it came from.
    OpSpec("cpu_round_trip", "convert", "{0}.cpu().to({0}.device)", NUMERIC, torch_op="torch.Tensor.to"),
    # A factory told its device (and dtype) by a value of the program: ``device=`` follows the inputs.
    OpSpec(
        "ones_on_device_of",
        "factory",
        "torch.ones({0}.shape, device={0}.device, dtype={0}.dtype) * {0}",
        NUMERIC,
        torch_op="torch.ones",
    ),
)

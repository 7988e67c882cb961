"""Hand-written programs shared by the oracle, path and replay tests."""

from fuzzdce.core.program import Program, Ref, Step, TensorInput

# Two inputs, a broadcasting add, a dead exp and a live cos: stock Thunder passes it on every path.
DEAD_CODE_PROGRAM = Program(
    (TensorInput((2, 3)), TensorInput((3,))),
    (
        Step("add", "torch.add({0}, {1})", (Ref(0), Ref(1))),
        Step("exp", "torch.exp({0})", (Ref(0),)),  # dead
        Step("cos", "torch.cos({0})", (Ref(2),)),
    ),
    (4,),
    seed=1,
)


def _unary(op: str, value: int, template: str | None = None) -> Step:
    return Step(op, template or f"torch.{op}({{0}})", (Ref(value),))


# Three inputs, three outputs and 19 statements, most of them computing two outputs side by side;
# hstack of the 1-element float64 input early (it loses requires_grad under thunder.jit, values
# right), its result read late by addcdiv, whose gradient is then wrong: the first wrong op is
# hstack, though the prefixes of the statements between it and addcdiv are all right.
MULTI_OUTPUT_HSTACK = Program(
    (TensorInput((1,), "float64"), TensorInput((3,)), TensorInput((2, 3))),
    (
        _unary("sin", 1),  # v3
        _unary("cos", 2),  # v4
        _unary("mul", 3, "{0} * 2.0"),  # v5
        Step("hstack", "torch.hstack([{0}, {0}])", (Ref(0),)),  # v6
        _unary("sum", 4, "{0}.sum(dim=0)"),  # v7
        Step("add", "{0} + {1}", (Ref(5), Ref(7))),  # v8
        _unary("tanh", 8),  # v9
        Step("sub", "{0} - {1}", (Ref(9), Ref(3))),  # v10
        _unary("exp", 4),  # v11
        _unary("sum", 11, "{0}.sum(dim=0)"),  # v12
        Step("addcdiv", "torch.addcdiv({0}, {1}, {0}, value=2.0)", (Ref(0), Ref(6))),  # v13
        Step("mul", "{0} * {1}", (Ref(10), Ref(12))),  # v14
        _unary("sigmoid", 14),  # v15
        Step("add", "{0} + {1}", (Ref(15), Ref(5))),  # v16
        _unary("add", 13, "{0} + 1.0"),  # v17
        _unary("relu", 16),  # v18
        Step("mul", "{0} * {1}", (Ref(18), Ref(12))),  # v19
        _unary("mul", 17, "{0} * 3.0"),  # v20
        _unary("abs", 19),  # v21
    ),
    (20, 21, 12),
    seed=3,
)

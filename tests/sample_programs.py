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

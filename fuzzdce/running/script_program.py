"""A reproducer's program: a plain function and its ``make_inputs``, read from the reproducer file.

A program is a ``core.program.Program`` or, a reproducer's, a ``ScriptProgram``: both give
``function()`` and ``make_inputs(requires_grad=...)``, which is all running a program needs.
"""

from __future__ import annotations

import runpy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ScriptProgram:
    """A program given as a plain function and a ``make_inputs(requires_grad)`` function.

    ``script``: the reproducer file defining them; then it pickles as that file's path, and a build's
    process loads the same program from it.
    """

    fn: Callable
    inputs: Callable
    script: str | None = None
    # (guard call label, its make_inputs): the reproducer's ``GUARD_INPUTS``
    guards: tuple[tuple[str, Callable], ...] = ()

    def __reduce__(self):
        if self.script is None:
            raise TypeError("a ScriptProgram crosses processes only when made from a reproducer file")
        return load_script, (self.script,)

    def function(self) -> Callable:
        return self.fn

    def make_inputs(self, *, requires_grad: bool = False):
        return self.inputs(requires_grad)

    def guard_variant(self, label: str) -> ScriptProgram | None:
        """The program of the guard call ``label``: the same function on that call's inputs."""
        inputs = dict(self.guards).get(str(label))
        return None if inputs is None else ScriptProgram(self.fn, inputs, self.script)


def load_script(path) -> ScriptProgram:
    """The program and inputs of a reproducer file, without running its main."""
    namespace = runpy.run_path(str(path), run_name="fuzzdce_reproducer")
    guards = tuple(namespace.get("GUARD_INPUTS", {}).items())
    return ScriptProgram(namespace["program"], namespace["make_inputs"], str(Path(path).resolve()), guards)

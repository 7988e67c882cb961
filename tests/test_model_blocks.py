"""Model blocks as programs (``strategies.model_blocks``): the blocks of the models Thunder ships,
traced into plain torch programs that compute what the modules compute, mutated (a step swapped,
inserted or made in place; shapes, dtype, requires_grad) into programs eager runs; a mutation eager
rejects is dropped and counted; a missing model file is skipped and named; and a fault planted in
a block program minifies to a plain program of the faulty op."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzzdce.core.program import Program, Ref, Step, TensorInput, with_step_inserted
from fuzzdce.core.program_source import parse_function, program_of_function
from fuzzdce.fuzzing.driver import no_local_constants
from fuzzdce.fuzzing.minify import Criterion, Failure, run_minify
from fuzzdce.results.records import RunSummary
from fuzzdce.results.report import render
from fuzzdce.results.reproducers import minified_case, standalone_script
from fuzzdce.running import doctor
from fuzzdce.running.placements import resolve
from fuzzdce.strategies import model_blocks
from fuzzdce.strategies.model_blocks import Block, BlockSource, Data, tokens


@pytest.fixture(scope="module")
def blocks() -> BlockSource:
    return model_blocks.source()


def drawn(strategy, n: int, at: int = 0) -> list:
    found = []

    @seed(at)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        found.append(value)

    with no_local_constants():
        collect()
    return found


def test_the_shipped_models_blocks_trace_and_those_that_do_not_say_why(blocks):
    names = {t.block.name for t in blocks.traced}
    assert {"nanogpt.CausalSelfAttention", "nanogpt.MLP", "nanogpt.Block", "llama2.Attention", "llama2.RMSNorm"} <= names
    assert {"bart.BartAttention", "llama2.TransformerBlock", "llama4.SwiGLU"} <= names
    assert len(names) + len(blocks.skipped) == len(model_blocks.BLOCKS)
    assert all(why for why in blocks.skipped.values())


def module_result(traced) -> torch.Tensor:
    """The block's own module called on the program's inputs, its parameters and buffers set to the
    program's parameter inputs (in the order the trace first read them)."""
    module = traced.block.build(__import__(model_blocks.model_file(traced.block), fromlist=["_"]))
    inputs = traced.program.make_inputs()
    graph = model_blocks._ThroughEveryModule().trace(module)
    attributes = list(dict.fromkeys(n.target for n in graph.nodes if n.op == "get_attr"))
    with torch.no_grad():
        for name, value in zip(attributes, inputs[traced.data :]):
            owner, _, leaf = name.rpartition(".")
            getattr(module.get_submodule(owner), leaf).copy_(value)
    return module(*inputs[: traced.data])


def test_a_traced_block_computes_what_its_module_computes_and_reads_back(blocks):
    for traced in blocks.traced:
        program = traced.program
        assert all(s.op.startswith(f"{model_blocks.PREFIX}{traced.block.name}/") for s in program.steps)
        result = program.function()(*program.make_inputs())
        torch.testing.assert_close(result[0], module_result(traced), rtol=0, atol=0, msg=traced.block.name)
        again = program_of_function(parse_function(program.source()), program.inputs)
        assert again.source() == program.source()  # plain torch: minify and shrinking read it back


def block_draws(blocks, n: int = 120, at: int = 0) -> list:
    return drawn(model_blocks.block_programs(blocks), n, at)


def test_mutated_blocks_swap_insert_and_write_in_place_and_eager_runs_every_one_kept(blocks):
    draws = block_draws(blocks)
    kept = [program for program, _ in draws if program is not None]
    assert len(kept) >= 0.7 * len(draws)
    traced = {t.program.source().split("\n", 1)[1] for t in blocks.traced}
    changed = [p for p in kept if p.source().split("\n", 1)[1] not in traced]
    swapped_in = Counter(s.op for p in changed for s in p.steps if not s.op.startswith(model_blocks.PREFIX))
    assert sum(swapped_in.values()) >= 10, swapped_in  # catalog ops swapped or inserted into blocks
    assert any("_(" in s.template for p in kept for s in p.steps if s.op.startswith(model_blocks.PREFIX))  # in place
    assert {p.inputs[0].shape for p in kept} >= {(1, 1, 16)} and len({p.inputs[0].shape for p in kept}) >= 5
    assert {p.inputs[0].dtype for p in kept} >= {"float32", "float64", "bfloat16", "float16"}
    assert any(not spec.requires_grad for p in kept for spec in p.inputs)
    assert all(model_blocks.eager_rejects(p) is None for p in kept)


def test_an_inserted_step_is_read_instead_of_the_value_it_wraps():
    program = Program(
        (TensorInput((3,)),),
        (Step("exp", "torch.exp({0})", (Ref(0),)), Step("add", "{0} + {1}", (Ref(1), Ref(0)))),
        (2, 1),
    )
    wrapped = with_step_inserted(program, 1, Step("neg", "torch.neg({0})", (Ref(1),)), replacing=1)
    assert wrapped.source().splitlines()[1:] == [
        "    v1 = torch.exp(v0)",
        "    v2 = torch.neg(v1)",
        "    v3 = v2 + v0",
        "    return (v3, v2)",
    ]


def test_a_block_eager_rejects_is_dropped_counted_and_the_program_drawn_from_the_catalog(blocks):
    programs = drawn(model_blocks.programs_with_blocks(block_rate=1.0, blocks=blocks), 100, at=1)
    rejected = [p for p in programs if any(model_blocks.REJECTED_NOTE in d for d in p.dropped)]
    assert rejected, "some mutation eager rejects (mixed dtypes, an in-place write autograd refuses)"
    assert not any(s.op.startswith(model_blocks.PREFIX) for p in rejected for s in p.steps)
    assert all(
        model_blocks.eager_rejects(p) is None for p in programs if any(s.op.startswith(model_blocks.PREFIX) for s in p.steps)
    )
    dropped = Counter(d for p in programs for d in p.dropped)
    lines = model_blocks.dropped_lines(dropped)
    assert lines[0].startswith(f"model blocks drawn and rejected by eager (dropped, never run): {len(rejected)} (")


def test_no_block_is_drawn_at_rate_zero_and_a_share_at_a_rate(blocks):
    def share(rate: float) -> float:
        found = drawn(model_blocks.programs_with_blocks(block_rate=rate, blocks=blocks), 60, at=1)
        return sum(any(s.op.startswith(model_blocks.PREFIX) for s in p.steps) for p in found) / len(found)

    assert share(0.0) == 0
    assert 0.05 <= share(0.3) <= 0.6


def test_a_missing_model_file_is_skipped_and_doctor_names_it(monkeypatch):
    absent = Block("gone.Attention", "no_such_model_file", lambda m: m.Attention(), (Data(tokens(16)),))
    found = BlockSource((absent,))
    assert found.traced == [] and "thunder.tests.no_such_model_file does not import here" in found.skipped["gone.Attention"]
    monkeypatch.setattr(model_blocks, "BLOCKS", (*model_blocks.BLOCKS, absent))
    monkeypatch.setattr(doctor, "BLOCKS", model_blocks.BLOCKS)
    assert "; no_such_model_file (ModuleNotFoundError" in doctor.blocks_line()
    assert "nanogpt_model" in doctor.blocks_line()


def test_the_report_counts_blocks_reached_and_their_ops():
    summary = RunSummary(
        run_id="r",
        op_counts={"block:nanogpt.MLP/linear": 2, "block:nanogpt.MLP/gelu": 1, "block:llama2.RMSNorm/rsqrt": 1, "exp": 1},
        dropped_steps={"block:nanogpt.Block rejected: in place: RuntimeError": 2},
    )
    text = render(summary, None)
    assert "; model blocks 2 of " in text and "(llama2.RMSNorm, nanogpt.MLP), 3 distinct ops in them" in text
    assert "model blocks drawn and rejected by eager (dropped, never run): 2 (in place: RuntimeError 2)" in text


@pytest.mark.slow
def test_a_fault_planted_in_a_block_program_minifies_to_a_plain_program_of_that_op(blocks):
    """``add`` computes ``sub`` (``planted:add_computes_sub``): a whole nanogpt Block (its two residual
    adds among 28 steps) minifies to the one add, and its standalone script runs."""
    program = next(t.program for t in blocks.traced if t.block.name == "nanogpt.Block")
    result = run_minify(program, Failure(Criterion.SAME), resolve("planted:add_computes_sub"), path="jit")
    assert result.program.n_ops == 1 and " + " in result.program.steps[0].template, result.program  # 28 steps to one add
    assert result.violation.oracle == "outputs"
    text = standalone_script(minified_case(result.program, "jit", result.violation))
    namespace = {"__name__": "repro"}
    exec(compile(text, "repro.py", "exec"), namespace)
    assert "def test_repro():" in text

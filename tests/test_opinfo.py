"""OpInfo programs: steps drawn from Thunder's own OpInfos (``strategies.opinfo``), chained with the
catalog's, written as plain torch that runs in eager and reads back; an OpInfo whose samples eager
rejects is counted, never run; a campaign with them reaches ops the catalog has no entry for."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter

import pytest
import torch
from builders import StandInEvaluator, raised, wrong_values
from hypothesis import HealthCheck, Phase, given, seed, settings

from fuzzdce.cli import main
from fuzzdce.core.model import STOCK
from fuzzdce.core.program_source import inputs_of_make_inputs, parse_function, program_of_function
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig
from fuzzdce.fuzzing.driver import no_local_constants
from fuzzdce.fuzzing.minify import Criterion, Failure, Minifier
from fuzzdce.results.report import render
from fuzzdce.results.reproducers import minified_case, standalone_script
from fuzzdce.running.doctor import diagnosis, opinfo_line
from fuzzdce.strategies import opinfo
from fuzzdce.strategies.programs import INPUT_DTYPES, programs


def drawn(n: int, *, rate: float = 1.0, opinfos=None, at: int = 0) -> list:
    """The first ``n`` programs Hypothesis draws with OpInfo steps in a share ``rate`` of them."""
    found = []

    @seed(at)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(programs(opinfo_rate=rate, opinfos=opinfos))
    def collect(program):
        found.append(program)

    with no_local_constants():  # the same programs whatever modules are loaded (``driver.no_local_constants``)
        collect()
    return found


def opinfo_steps(program) -> list:
    return [s for s in program.steps if s.op.startswith(opinfo.PREFIX)]


@pytest.fixture(scope="module")
def source():
    found = opinfo.source(INPUT_DTYPES)
    assert found is not None, "Thunder 0.2.6's wheel ships thunder.tests.opinfos"
    return found


@pytest.fixture(scope="module")
def with_opinfo(source):
    """Drawn programs with OpInfo steps: 60 draws, 4-5 s (the tests reading them are slow)."""
    return [p for p in drawn(60) if opinfo_steps(p)]


def test_the_wheels_opinfos_draw_but_those_without_a_torch_call(source):
    suites = source.describe(0.3)["suites"]
    assert len(suites[opinfo.THUNDER_SUITE]) >= 200  # of the wheel's 237
    assert source.skipped["cat_wrapper"] == opinfo.NO_TORCH_CALL  # a lambda of the suite's
    assert source.skipped["is_complex"] == opinfo.NO_TENSOR
    calls = {e.name: e.call for e in source.entries}
    assert calls["abs"] == "torch.abs" and calls["softplus"] == "torch.nn.functional.softplus"
    assert calls["view"] == "torch.Tensor.view" and calls["getitem"] == opinfo.GETITEM
    assert calls["squeeze_torch"] == "torch.squeeze"  # a helper of the suite: the torch function Thunder maps
    assert {"polygamma", "zeta", "ndtri"} <= set(source.describe(0.3)["beyond_catalog"])


def test_torchs_opinfos_call_the_name_thunder_registers_automatically(source):
    """torch's OpInfos (``op_db``) stand for the ops Thunder has no symbol of its own for: each entry
    calls the callable Thunder registered under that name (``abs``'s samples as ``x.absolute()``,
    since ``torch.abs`` is Thunder's own symbol, tested by Thunder's OpInfo), never another name of it."""
    from thunder.torch.default_torch_ops import torch_auto_registered_ops

    registered = [f for functions in torch_auto_registered_ops.values() for f in functions]
    entries = [e for e in source.entries if e.suite == opinfo.TORCH_SUITE]
    assert len(entries) >= 500
    for entry in entries:
        function = eval(entry.call, {"torch": torch})  # noqa: S307 - a dotted torch name
        assert function in registered, entry  # not torch.abs: Thunder's own symbol
    calls = {e.name: e.call for e in entries}
    assert calls["torch.Tensor.absolute"] == "torch.Tensor.absolute" and "torch.abs" not in calls
    assert calls["torch.fft.fft"] == "torch.fft.fft" and calls["torch.special.round_decimals_3"] == "torch.special.round"
    assert source.samples(source.entries[[e.name for e in source.entries].index("torch.fft.fft")], "float32", opinfo.SAMPLE)


@pytest.mark.slow  # draws 80 programs with OpInfo steps, about 5 s
def test_programs_hold_several_opinfo_steps(source):
    from fuzzdce.strategies.programs import MAX_OPINFO_STEPS

    counts = Counter(len(opinfo_steps(p)) for p in drawn(80, at=4))
    assert set(counts) - {0} == set(range(1, MAX_OPINFO_STEPS + 1)), counts


@pytest.mark.slow
def test_opinfo_programs_are_plain_torch_that_runs_in_eager_and_reads_back(with_opinfo):
    assert len(with_opinfo) >= 30
    for program in with_opinfo:
        source = program.source() + "\n" + program.inputs_source()
        assert "opinfo" not in source and "thunder" not in source, source
        assert program.function()(*program.make_inputs())  # eager runs it
        if any("{out}" in step.template for step in program.steps):
            continue  # a catalog statement (``x[i] = y``) that fuzzdce minify does not read: none of OpInfo's
        specs, seed_ = inputs_of_make_inputs(source)
        read = program_of_function(parse_function(source, "program"), specs, seed=seed_)
        assert read.source() == program.source()
        for mine, theirs in zip(program.make_inputs(), read.make_inputs()):
            assert isinstance(theirs, type(mine))
            if isinstance(mine, torch.Tensor):
                assert mine.dtype == theirs.dtype and torch.equal(mine.nan_to_num(0.5), theirs.nan_to_num(0.5))


@pytest.mark.slow
def test_opinfo_steps_chain_with_catalog_steps_and_mix_requires_grad(with_opinfo):
    steps = [(p, i, s) for p in with_opinfo for i, s in enumerate(p.steps) if s.op.startswith(opinfo.PREFIX)]
    reads_a_computed_value = [s for p, _, s in steps if any(r >= len(p.inputs) for r in s.refs())]
    read_after = [
        s for p, i, s in steps if any(set(p.first_value(i) + k for k in range(s.n_out)) & set(t.refs()) for t in p.steps[i + 1 :])
    ]
    assert reads_a_computed_value and read_after  # catalog steps before it feed it; catalog steps after it read it
    assert all(p.live_steps() >= {i} for p, i, _ in steps)  # always run: an output reads it
    flags = Counter(spec.requires_grad for p in with_opinfo for spec in p.inputs if spec.dtype.startswith(("float", "bfloat")))
    assert flags[True] and flags[False]
    assert len({s.op for _, _, s in steps}) >= 10


def test_an_opinfo_step_is_floating_in_most_draws_where_its_opinfo_has_other_dtypes_too():
    """Only a floating tensor requires grad: a step whose OpInfo supports every dtype fuzzdce draws
    reached no grad rule in 3 of 7 draws. Now most draws are floating, some still integer or boolean
    (they test the forward), an all-floating OpInfo draws evenly, and a draw shrinks to a floating dtype."""
    from hypothesis import find

    from fuzzdce.strategies.programs import GRAD_DTYPE_SHARE, opinfo_dtypes

    def share(dtypes, n=400):
        found = []

        @seed(3)
        @settings(max_examples=n, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(opinfo_dtypes(dtypes))
        def collect(dtype):
            found.append(dtype)

        collect()
        return Counter(found)

    mixed = share(INPUT_DTYPES)
    floating = sum(n for d, n in mixed.items() if d.startswith(("float", "bfloat"))) / sum(mixed.values())
    assert GRAD_DTYPE_SHARE - 0.1 <= floating <= GRAD_DTYPE_SHARE + 0.1, mixed
    assert {"int64", "bool", "int32"} <= set(mixed)
    assert set(share(("int64", "bool"), 60)) == {"int64", "bool"}  # no floating dtype: drawn evenly
    assert find(opinfo_dtypes(INPUT_DTYPES), lambda d: True) == "float32"


def test_a_share_of_programs_holds_an_opinfo_step(source):
    """Nominally 30%; Hypothesis draws programs close to earlier ones, so a seed's share wanders
    (0.29 and 0.52 for the first 100 of two seeds): a campaign's share is measured in docs/extending.md."""
    share = sum(bool(opinfo_steps(p)) for p in drawn(100, rate=0.3, at=1)) / 100
    assert 0.1 <= share <= 0.6, share
    assert not any(opinfo_steps(p) for p in drawn(20, rate=0.0))


@pytest.mark.slow
def test_an_opinfo_program_minifies_and_its_standalone_script_runs(with_opinfo):
    """Minify against a stand-in failing while the OpInfo step is there: it alone is left, and the
    standalone script of it runs eager and Thunder."""
    program = max(with_opinfo, key=lambda p: p.n_ops)
    op = opinfo_steps(program)[0].op

    def shows(candidate, placement, paths):
        return [raised(paths[0], "RuntimeError", op, "x.py:f")] if op in candidate.ops else []

    from fuzzdce.running.placements import resolve

    result = Minifier(StandInEvaluator(shows), resolve(STOCK), "jit", timeout=1.0).minify(program, Failure(Criterion.SAME))
    assert result.program.ops == [op], result.program
    text = standalone_script(minified_case(result.program, "jit", raised("jit", "RuntimeError", "raises")))
    namespace = {"__name__": "repro"}
    exec(compile(text, "repro.py", "exec"), namespace)
    namespace["test_repro"]()  # eager, then thunder.jit: both run it


def fake_source():
    """A source of two OpInfos: ``add_mismatched``, whose one sample eager rejects (shapes that do
    not broadcast), and ``neg``, which eager runs."""
    import thunder.core.dtypes as datatypes
    import thunder.torch as ltorch
    from thunder.tests.opinfos import OpInfo, SampleInput

    def mismatched(op, device, dtype, requires_grad):
        yield SampleInput(torch.ones(2, 3, dtype=dtype), torch.ones(4, 5, dtype=dtype))

    def one(op, device, dtype, requires_grad):
        yield SampleInput(torch.ones(2, 3, dtype=dtype))

    return opinfo.OpInfoSource(
        [
            OpInfo(
                ltorch.add,
                name="add_mismatched",
                sample_input_generator=mismatched,
                dtypes=(datatypes.float32,),
                torch_reference=torch.add,
            ),
            OpInfo(ltorch.neg, name="neg", sample_input_generator=one, dtypes=(datatypes.float32,), torch_reference=torch.neg),
        ],
        INPUT_DTYPES,
    )


def test_an_opinfo_whose_samples_eager_rejects_is_dropped_and_counted():
    fake = fake_source()
    assert fake.samples(fake.entries[0], "float32", opinfo.SAMPLE) == opinfo.EAGER_REJECTS
    programs_ = drawn(40, opinfos=fake)
    assert not any(s.op == "opinfo:add_mismatched" for p in programs_ for s in p.steps)
    dropped = Counter(d for p in programs_ for d in p.dropped)
    assert opinfo.rejected_counts(dropped) == {
        opinfo.EAGER_REJECTS: {"add_mismatched": dropped[f"opinfo:add_mismatched{opinfo.REJECTED_NOTE}{opinfo.EAGER_REJECTS}"]}
    }
    assert opinfo.rejected_counts(dropped)[opinfo.EAGER_REJECTS]["add_mismatched"] >= 1
    assert any(s.op == "opinfo:neg" for p in programs_ for s in p.steps)


@pytest.mark.slow
def test_a_campaign_counts_a_rejected_opinfo_and_reports_no_bug_of_it(monkeypatch, tmp_path):
    monkeypatch.setattr(opinfo, "_LOADED", {"source": fake_source(), "dtypes": INPUT_DTYPES})
    # Stock's own causes are left as generation found them: shrinking them proves nothing here.
    config = CampaignConfig.of(
        (STOCK,), ("jit",), max_examples=12, seed=2, opinfo_rate=1.0, findings_dir=str(tmp_path), shrink_baseline=False
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    summary = campaign.summary()
    # Stock's own faults in the catalog's steps may be found (boolean indexing, a flag): none of them
    # holds the rejected OpInfo's call, which never ran.
    assert summary.invalid_programs == 0 and not any("opinfo:add_mismatched" in bug.ops for bug in summary.bugs)
    assert opinfo.rejected_counts(summary.dropped_steps)[opinfo.EAGER_REJECTS]["add_mismatched"] >= 1
    assert summary.opinfo["usable"] == 2 and summary.op_counts.get("opinfo:neg")
    text = render(summary, None)
    assert "OpInfos drawn and rejected (dropped, never run): 1 (eager rejects its samples: add_mismatched)" in text


@pytest.mark.slow
def test_a_short_campaign_with_opinfo_steps_reaches_ops_the_catalog_has_no_entry_for(tmp_path):
    findings = tmp_path / "findings"
    argv = ["run", "--placement", "stock", "--path", "jit", "--seed", "3", "--max-examples", "30", "--time-budget", "60"]
    argv += ["--opinfo-rate", "1", "--jobs", "1", "--database", "none", "--findings", str(findings)]
    assert main(argv) in (0, 1)
    summary = json.loads((findings / "summary.json").read_text())
    reached = {op.removeprefix(opinfo.PREFIX) for op in summary["op_counts"] if op.startswith(opinfo.PREFIX)}
    beyond = reached & set(summary["opinfo"]["beyond_catalog"])
    assert beyond, reached  # ops no catalog entry calls: the catalog alone never reaches them
    assert summary["opinfo"]["usable"] >= 200 and summary["opinfo"]["skipped"][opinfo.NO_TORCH_CALL]
    assert not summary["bugs"]["regression"]


def test_doctor_says_whether_this_thunder_ships_its_opinfos(monkeypatch):
    assert opinfo_line().startswith("opinfos  thunder.tests.opinfos") and opinfo_line() in diagnosis()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name.startswith("thunder.tests") else real(name, *a)
    )
    assert opinfo.available() == "this Thunder has no thunder.tests (its wheel or checkout ships no test suite)"
    assert opinfo_line().startswith("opinfos  not Thunder's (this Thunder has no thunder.tests")
    monkeypatch.setattr(opinfo, "_LOADED", {})
    alone = opinfo.source(INPUT_DTYPES)  # torch's suite, for the ops Thunder registers automatically
    assert alone is not None and {e.suite for e in alone.entries} == {opinfo.TORCH_SUITE}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name.startswith("thunder.tests") or name == "expecttest" else real(name, *a),
    )
    assert opinfo_line().startswith("opinfos  none: this Thunder has no thunder.tests")
    assert "expecttest" in opinfo_line()
    monkeypatch.setattr(opinfo, "_LOADED", {})
    assert opinfo.source(INPUT_DTYPES) is None  # no OpInfo steps: catalog programs only
    assert opinfo.describe_source(0.3, INPUT_DTYPES) == {"rate": 0.3, "unavailable": opinfo.available()}
    assert not any(opinfo_steps(p) for p in drawn(10))


def test_a_wrong_value_is_sited_at_the_op_called_whatever_drew_the_step():
    """The same wrong ``arcsin`` is one fault whether an OpInfo, a catalog entry or a program read
    back from its source drew the step: the site is the op the statement calls (``called_op``),
    not the step's source-prefixed name."""
    from fuzzdce.core.faults import value_fault
    from fuzzdce.core.program import Program, Ref, Step, TensorInput
    from fuzzdce.running.localise import localised

    wrong = wrong_values("jit")
    sites = set()
    for op in ("opinfo:torch.Tensor.arcsin", "arcsin"):
        program = Program(
            (TensorInput((2,)),), (Step(op, "{0}.arcsin()", (Ref(0),)), Step("neg", "torch.neg({0})", (Ref(1),))), (2,)
        )
        found = localised(program, wrong, lambda prefix: [wrong])  # wrong from the first step on
        sites.add((found.site, found.fault))
    assert sites == {("arcsin", value_fault("outputs", "", "jit").localised_at("arcsin"))}


def test_a_sample_that_draws_random_numbers_is_random_though_its_results_agree():
    """``bernoulli`` of ones is all ones under every seed, yet it draws from the generator: a program
    holding it would differ between eager and Thunder wherever the two draw apart (a resized call),
    as ``fractional_max_pool2d``'s random windows did on a sample small enough to agree twice."""
    entry = opinfo.Entry("bernoulli", "torch.bernoulli", ("float32",), (opinfo.SAMPLE,))
    assert opinfo.written(entry, (torch.ones(3),), {}, keep=True) == opinfo.RANDOM
    assert isinstance(
        opinfo.written(opinfo.Entry("neg", "torch.neg", ("float32",), (opinfo.SAMPLE,)), (torch.ones(3),), {}, keep=True),
        opinfo.OpInfoSample,
    )

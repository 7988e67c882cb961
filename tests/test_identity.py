"""A failure's identity in real campaigns: two wrong-value faults of one placement on one path are
two bugs, each at its own op; an op without a grad rule is one bug on every path that reaches it;
one fault worded otherwise under two placements is one failure; a misstatement is known by its op."""

from dataclasses import dataclass
from typing import ClassVar

import pytest
from builders import misstated as misstated_by_metadata
from builders import wrong_values

from fuzzdce.core.faults import (
    Fault,
    exception_fault,
    signature,
    split_fault,
    symbol_named,
    without_annotations,
)
from fuzzdce.core.findings import FindingStore, triage
from fuzzdce.core.joining import fault_label
from fuzzdce.core.model import ErrorInfo, Violation
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig


def test_an_exceptions_identity_leaves_out_annotations_names_and_numbers():
    def no_grad_rule(annotation, name):
        message = f'Failed to find a gradient transform for bound symbol bsym={name} = prims.index_add(a, t0, b, 0)  # {name}: "cpu {annotation}"'
        return ErrorInfo("RuntimeError", message, "thunder/transforms/autodiff.py:process_bsym", "")

    first, site = exception_fault(no_grad_rule("f32[2]", "v5"))
    assert site == "index_add"
    assert exception_fault(no_grad_rule("f64[1, 1, 1, 3]", "t12"))[0] == first
    assert exception_fault(ErrorInfo("RuntimeError", "other", "thunder/transforms/autodiff.py:process_bsym", ""))[0] != first
    assert without_annotations('t1 = ltorch.add(t0, t0)  # t1: "cpu f32[2, 3]"') == "t1 = ltorch.add(t0, t0)"


@pytest.mark.parametrize(
    "text, symbol",
    [
        ("VJP for PrimIDs.INDEX_ADD is not implemented", "index_add"),
        ("bsym=t3 = ltorch.logsumexp(t0, 0)", "logsumexp"),
        ("<built-in method unfold of type object at 0x7f>", "unfold"),
        ("aten.aminmax.default", "aminmax"),
        ("tuple index out of range", ""),
    ],
)
def test_the_symbol_a_message_names(text, symbol):
    assert symbol_named(text) == symbol


def test_a_split_that_names_no_symbol_is_known_by_its_words_and_its_nodes_op_and_sited_there():
    info = "Failed while running meta for node with name: v3 and target: <built-in method logsumexp of type object at 0x7f>, see exception field"
    fault, site = split_fault("EXCEPTION_META_THUNDER_OP", info, "tuple index out of range")
    assert site == fault.target == "logsumexp" and "tuple index out of range" in str(fault) and "v3" not in str(fault)


def test_an_exception_is_sited_at_the_outermost_thunder_symbol_and_framed_past_helpers():
    """logsumexp of a 0-d tensor: ``squeeze``'s generator expression raises; the frame is squeeze's,
    the site logsumexp (the op a thunderfx split of the same program names)."""
    import thunder
    import torch

    try:
        thunder.jit(lambda a: torch.logsumexp(a, 0))(torch.randn(()))
    except IndexError as e:
        error = ErrorInfo.from_exception(e)
    else:
        pytest.skip("this Thunder takes logsumexp of a 0-d tensor")
    assert error.frame == "thunder/torch/__init__.py:squeeze" and error.symbol == "logsumexp"


@pytest.mark.slow
def test_two_wrong_value_faults_on_two_ops_of_one_placement_on_one_path_are_two_bugs():
    """add computes sub and mul divides, under one placement, on jit: two bugs, each minimal at its
    op, each naming it (localised: values first differ there); a known file holding one leaves the
    other reportable."""
    config = CampaignConfig.of(
        ("stock", "planted:add_and_mul_computed_wrong"), ("jit",), max_examples=25, seed=5, ops=("add", "mul", "neg", "abs")
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    # A bug named by its decision holds every failure that decision makes (the rebound mul's guards,
    # an unbound name), so its smallest member need not be the wrong value: each wrong value is read
    # where it is, at the op it was localised to.
    by_op = wrong_values_by_op(campaign)
    assert sorted(by_op) == ["add", "mul"], by_op
    assert all(len(ids) == 1 for ids in by_op.values()) and by_op["add"] != by_op["mul"], by_op
    (add,) = by_op["add"]
    known = Campaign(config.replaced(known={add: "filed"}), log=lambda line: None)
    known.run()
    reportable = wrong_values_by_op(known, reportable_only=True)
    assert sorted(reportable) == ["mul"], reportable


def wrong_values_by_op(campaign, *, reportable_only: bool = False) -> dict[str, set[str]]:
    """The op each regression's wrong value (``outputs``) was localised to -> the ids of the bugs
    holding one there; each wrong value's message says where values first differ."""
    by_op: dict[str, set[str]] = {}
    for bug in campaign.ledger.bugs():
        if bug.verdict != Verdict.REGRESSION or (reportable_only and not bug.reportable):
            continue
        for member in bug.members:
            violation = member.violation
            if violation.oracle == "outputs" and violation.site:
                assert f"first differs at {violation.site}" in str(violation.fault), violation.fault
                assert "values first differ at `v" in violation.message, violation.message
                by_op.setdefault(violation.site, set()).add(bug.id)
    return by_op


@pytest.mark.slow
def test_an_op_without_a_grad_rule_is_one_bug_on_every_path_that_reaches_it():
    """``index_add`` has no grad rule in Thunder 0.2.6: jit-grad raises (its message annotated with
    each program's shapes), thunderfx splits ("VJP for PrimIDs.INDEX_ADD"): one bug."""
    import thunder

    config = CampaignConfig.of(("stock",), ("jit-grad", "thunderfx"), max_examples=12, seed=2, ops=("index_add", "neg"))
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    about = [b for b in campaign.ledger.bugs() if any("index_add" in m.violation.message.lower() for m in b.members)]
    if not about:
        pytest.skip(f"Thunder {thunder.__version__} has a grad rule for index_add")
    described = [(b.id, b.paths(), [m.violation.fault for m in b.members]) for b in about]
    assert len(about) == 1, described
    assert about[0].paths() == ["jit-grad", "thunderfx"], described


def test_a_flag_lost_at_one_op_blames_that_op_not_the_later_op_whose_values_differ_through_it(tmp_path):
    """hstack of a 1-D input loses requires_grad under thunder.jit (0.2.6 and main) with right values;
    addcdiv's gradient through it is then wrong. Localisation compares flags too: the blame is hstack's,
    and the message says what is wrong there before what it causes."""
    from test_standalone import HSTACK, observed

    _, bugs = observed(tmp_path, ["stock"], HSTACK, ["jit-grad"])
    violations = [m.violation for b in bugs for m in b.members]
    assert violations and all(v.site == "hstack" and "first differs at hstack" in str(v.fault) for v in violations), violations
    (grads,) = [v for v in violations if v.error_type == "Mismatch"]
    assert grads.message.startswith("hstack is wrong first, at `v1 = torch.hstack([v0, v0])`: grad call: requires_grad")
    assert "which makes: grad call grad[0]" in grads.message


def test_a_flag_lost_early_in_a_program_of_several_inputs_and_outputs_is_blamed_on_its_op():
    """The hstack fault in a program of three inputs, three outputs and 19 statements: hstack loses
    requires_grad early, addcdiv reads it late and its gradient is wrong; the statements between
    compute the other outputs. Past ``SCANNED_STEPS`` the evaluator bisects the prefixes: over the
    program's dependences it names hstack (in program order it took the right prefixes between them
    for "right up to here" and named the add after addcdiv)."""
    from sample_programs import MULTI_OUTPUT_HSTACK

    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve

    stock = resolve("stock")
    evaluation = Evaluator()(MULTI_OUTPUT_HSTACK, [stock], paths=["jit-grad"], alone=True)[stock.name]
    wrong = [v for v in evaluation.violations if v.error_type == "Mismatch"]
    if not wrong:
        pytest.skip("this Thunder keeps requires_grad through hstack")
    described = [(v.site, v.message[:160]) for v in evaluation.violations]
    assert all(v.site == "hstack" for v in wrong), described
    assert wrong[0].message.startswith("hstack is wrong first, at `v6 = torch.hstack([v0, v0])`: grad call: requires_grad"), (
        described
    )
    assert "which makes: grad call grad[0]" in wrong[0].message


def test_a_flag_lost_by_the_one_output_the_program_reads_is_blamed_on_its_op_in_every_program(tmp_path):
    """tensor_split of a 1-element tensor in two: the empty second part loses ``requires_grad``
    under thunder.jit (0.2.6) only when the first part is not returned. A prefix returning every
    value of the op hid it: the one-op program was never localised, and the one taking that part's
    abs was blamed on abs. A prefix returns what the rest reads: one bug, at tensor_split."""
    from fuzzdce.core.program import Program, Ref, Step, TensorInput

    split = Step("tensor_split", "torch.tensor_split({0}, 2, dim=0)", (Ref(0),), n_out=2)
    alone = Program((TensorInput((1,), "float32"),), (split,), (2,), seed=1)
    through_abs = Program(alone.inputs, (split, Step("abs", "torch.abs({0})", (Ref(2),))), (3,), seed=1)
    config = CampaignConfig.of(("stock",), ("jit-grad",), findings_dir=str(tmp_path))
    campaign = Campaign(config, log=lambda line: None)
    # The larger program first: each is then new or smaller, and observe returns its findings.
    found = [finding for program in (through_abs, alone) for finding in campaign.observe(program)]
    if not found:
        pytest.skip("this Thunder keeps requires_grad on an empty part of tensor_split")
    described = [(f.program.ops, f.violation.site, f.violation.message[:120]) for f in found]
    assert len(found) == 2 and {f.violation.site for f in found} == {"tensor_split"}, described
    assert len(campaign.ledger.bugs()) == 1, described


def engine_error(backward) -> ErrorInfo:
    """The exception torch's autograd engine raises running ``backward`` (a callable of one input
    requiring grad), as fuzzdce records it."""
    import torch

    try:
        backward(torch.randn(3, requires_grad=True))
    except RuntimeError as e:
        return ErrorInfo.from_exception(e)
    raise AssertionError("the engine raised nothing")


def test_two_errors_raised_through_torchs_autograd_engine_are_two_identities():
    """Both raise from C++ under one frame, ``torch/autograd/graph.py:_engine_run_backward``: a
    Function's backward returning a gradient of the wrong shape (Thunder's ThunderFunctionBackward
    did) and an aten op with no derivative (one thunderfx left to autograd). Each is known by its
    words and the op it names, never by that frame; a findings label keeps them apart."""
    import torch

    class Halved(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, grad):
            return grad[:1]

    invalid = engine_error(lambda x: Halved.apply(x).sum().backward())
    underived = engine_error(lambda x: torch.aminmax(x).min.backward())
    assert invalid.frame == underived.frame == "torch/autograd/graph.py:_engine_run_backward"
    (first, _), (second, site) = exception_fault(invalid), exception_fault(underived)
    assert first != second and site == "aminmax", (first, second)
    assert "_engine_run_backward" not in str(first) + str(second)
    assert "invalid gradient at index <num>" in str(first) and "derivative for aten::aminmax is not implemented" in str(second)
    labels = {fault_label(*exception_fault(e)) for e in (invalid, underived)}
    assert len(labels) == 2 and None not in labels, labels


@dataclass(frozen=True, eq=False)
class Worded(Fault):
    """A fault whose words hold more than its identity: where it fails, and how one run words it."""

    KIND: ClassVar[str] = "worded"

    where: str
    words: str

    def identity(self) -> tuple:
        return (self.KIND, self.where)

    def parts(self) -> tuple[str, ...]:
        return (self.where, self.words)


def test_two_placements_showing_one_fault_in_other_words_triage_as_one():
    """Triage groups by identity: stock's and symcall's failure at one frame, worded otherwise by
    each, is one failure both show (shared), never stock's fixed one beside symcall's regression."""

    def worded(words: str) -> Violation:
        return Violation("mine", "jit", f"failed: {words}", "MyError", fault=Worded("thunder/core/x.py:f", words))

    stock, symcall = worded("KeyError 't3' while tracing"), worded("a name was read that nothing bound")
    assert signature(stock) != signature(symcall)
    triaged = triage({"stock": [stock], "symcall": [symcall]})
    assert [(t.verdict, t.placements) for t in triaged.values()] == [(Verdict.SHARED, ("stock", "symcall"))], triaged


AUTOMATIC_META = "thunder.torch.meta_adaptor.<locals>.meta_func"


def misstated(op: str, **words) -> Violation:
    """The ``metadata`` oracle's violation (``builders.misstated``): ``op``'s output shape, in a
    forward trace, stated by the adaptor of ops Thunder registers automatically."""
    return misstated_by_metadata("jit-symbolic", op, stated_by=AUTOMATIC_META, **words)


def program_of(*ops: str, shape=(2, 3)) -> Program:
    steps = tuple(Step(op, f"torch.{op}({{0}})", (Ref(i),)) for i, op in enumerate(ops))
    return Program((TensorInput(shape),), steps, (len(ops),), seed=1)


def test_one_meta_functions_misstatements_of_two_ops_are_two_bugs_and_one_ops_in_two_programs_one():
    """``qr``'s and ``multi_margin_loss``'s shapes misstated, both stated by the one adaptor that
    states every op Thunder registers automatically: two bugs. ``qr``'s in another program (other
    shapes, other words) is the same finding of the same bug."""
    store = FindingStore()
    qr, _ = store.add(Verdict.SHARED, ("stock",), misstated("qr", proxy="t1", actual="[1, 1, 0, 3]"), program_of("qr"))
    store.add(Verdict.SHARED, ("stock",), misstated("multi_margin_loss"), program_of("multi_margin_loss"))
    again, _ = store.add(
        Verdict.SHARED, ("stock",), misstated("qr", proxy="t4", actual="[2, 5]"), program_of("abs", "qr", shape=(5,))
    )
    assert again is qr and qr.count == 2
    bugs = store.bugs()
    assert sorted(sorted(m.site for m in b.members) for b in bugs) == [["multi_margin_loss"], ["qr"]], [b.key for b in bugs]
    assert len({b.id for b in bugs}) == 2


def test_a_failure_shown_beside_two_ops_misstatements_joins_one_of_them_never_both():
    """A settled program showing ``qr``'s misstatement and a wrong value first differing at
    ``greater`` (an op traced from the misstated tensor) is one bug; another settled program
    showing ``multi_margin_loss``'s misstatement beside the same wrong value does not glue the two
    misstatements into it (the shrinker's link neither): a bug holds one op's misstatements."""
    wrong = wrong_values("jit-symbolic", "greater")
    store = FindingStore()
    with_qr, with_loss = program_of("qr", "greater"), program_of("multi_margin_loss", "greater")
    qr, _ = store.add(Verdict.SHARED, ("stock",), misstated("qr"), with_qr)
    value, _ = store.add(Verdict.SHARED, ("stock",), wrong, with_qr)
    loss, _ = store.add(Verdict.SHARED, ("stock",), misstated("multi_margin_loss"), with_loss)
    qr.shrunk = value.shrunk = loss.shrunk = True  # qr's and the wrong value's settled program is one
    store.link(loss, value)  # the other settled program shows the wrong value beside loss's misstatement
    bugs = sorted(sorted(m.site for m in b.members) for b in store.bugs())
    assert bugs == [["greater", "qr"], ["multi_margin_loss"]], bugs

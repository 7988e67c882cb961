"""Findings joined into bugs: by the same exception, and by one minimal program showing them together."""

import pytest
from builders import malformed, raised, split, unsound, wrong_values

from fuzzdce.core.findings import FindingStore
from fuzzdce.core.model import ErrorInfo
from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.core.vocabulary import Verdict
from fuzzdce.fuzzing.campaign import Campaign
from fuzzdce.fuzzing.config import CampaignConfig

ONE_OP = Program((TensorInput((3,)),), (Step("add", "torch.add({0}, {0})", (Ref(0), Ref(0))),), (1,), seed=1)
TWO_OPS = Program(
    (TensorInput((3,)),),
    (Step("add", "torch.add({0}, {0})", (Ref(0), Ref(0))), Step("cos", "torch.cos({0})", (Ref(1),))),
    (2,),
    seed=1,
)


def test_one_exception_on_every_path_and_call_is_one_bug():
    store = FindingStore()
    for path, where in [("jit", "forward"), ("jit-grad", "grad call, backward"), ("thunderfx", "grad call, forward")]:
        store.add(Verdict.REGRESSION, ("symcall",), raised(path, "KeyError", f"'t{len(path)}'", where=where), ONE_OP)
    (bug,) = store.bugs()
    assert bug.paths() == ["jit", "jit-grad", "thunderfx"] and len(bug.members) == 3
    assert all("same fault" in why or "smallest" in why for why in bug.why.values())


def test_other_placements_another_frame_or_no_exception_are_other_bugs():
    store = FindingStore()
    store.add(Verdict.REGRESSION, ("symcall",), raised("jit"), ONE_OP)
    store.add(Verdict.REGRESSION, ("rdnp",), raised("jit"), ONE_OP)
    store.add(Verdict.REGRESSION, ("symcall",), raised("jit", frame="thunder/core/transforms.py:grad"), ONE_OP)
    store.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), ONE_OP)
    store.add(Verdict.SHARED, ("stock", "symcall"), raised("thunderfx"), ONE_OP)
    assert len(store.bugs()) == 5


def test_findings_one_minimal_program_shows_together_are_one_bug_named_by_the_smallest():
    """A malformed trace (an oracle that observes a fault) joins the exception its minimal program
    shows; a wrong value and an exception the same program shows are two identities, two bugs."""
    store = FindingStore()
    first, _ = store.add(Verdict.REGRESSION, ("symcall",), malformed("jit"), ONE_OP)
    second, _ = store.add(Verdict.REGRESSION, ("symcall",), raised("thunderfx"), TWO_OPS)
    wrong, _ = store.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), ONE_OP)
    assert len(store.bugs()) == 3
    before = {b.id for b in store.bugs()}
    store.link(first, second)
    store.link(first, wrong)
    store.link(second, wrong)
    bugs = store.bugs()
    assert len(bugs) == 2, [[m.violation.oracle for m in b.members] for b in bugs]
    (bug,) = [b for b in bugs if len(b.members) == 2]
    assert bug.program is ONE_OP and bug.id in before
    assert "minimal program" in bug.why[second.signature] or "minimal program" in bug.why[first.signature]


def test_two_identities_are_two_bugs_even_when_one_program_shows_both():
    """One small program raises a TypeError on jit and a ValueError under grad, and shows wrong
    values: every cause is linked to every other (each shown by the others' minimal program), yet
    each identity stays a bug of its own: a program merely showing two never joins them."""
    store = FindingStore()
    type_error = raised("jit", "TypeError", "bad", "f.py:a")
    value_error = raised("jit-grad", "ValueError", "bad", "f.py:b", where="grad")
    findings = [
        store.add(Verdict.SHARED, ("stock",), v, ONE_OP)[0] for v in (type_error, value_error, wrong_values("jit", "add"))
    ]
    for first in findings:
        for second in findings:
            store.link(first, second)
    bugs = store.bugs()
    assert sorted(sorted(m.violation.error_type for m in b.members) for b in bugs) == [
        ["Mismatch"],
        ["TypeError"],
        ["ValueError"],
    ]


def test_one_op_without_a_grad_rule_in_two_wordings_on_two_paths_is_one_bug():
    """jit-grad says "no gradient transform for prims.index_add" (trace annotations of every rank
    the programs drew), thunderfx's split "VJP for PrimIDs.INDEX_ADD": one fault, one bug; another
    op's missing rule is another bug, even when one program shows both."""

    def no_grad_rule(op, annotation):
        text = (
            f'Failed to find a gradient transform for bound symbol bsym=v5 = prims.{op}(v0, t0, v1, 0)  # v5: "cpu {annotation}"'
        )
        return raised("jit-grad", "RuntimeError", text, "thunder/transforms/autodiff.py:process_bsym")

    def split_at(op):
        return split("thunderfx", f"VJP for PrimIDs.{op.upper()} is not implemented", op=op)

    store = FindingStore()
    for violation in (
        no_grad_rule("index_add", "f32[2]"),
        no_grad_rule("index_add", "f64[2, 1, 1]"),
        no_grad_rule("index_add", "f64[1, 1, 1, 3]"),
        split_at("index_add"),
    ):
        store.add(Verdict.SHARED, ("stock",), violation, ONE_OP)
    other, _ = store.add(Verdict.SHARED, ("stock",), no_grad_rule("trunc", "f32[2]"), TWO_OPS)
    for finding in list(store):
        store.link(finding, other)
    bugs = store.bugs()
    assert sorted(len(b.members) for b in bugs) == [1, 2], [[m.violation.message[:60] for m in b.members] for b in bugs]
    (index_add,) = [b for b in bugs if len(b.members) == 2]
    assert index_add.oracles() == ["raises", "splits"] and index_add.paths() == ["jit-grad", "thunderfx"]


def test_an_exception_torch_raised_on_thunders_output_joins_the_one_thunder_raised_on_the_same_program():
    """One settled program: Thunder's torch executor raises a TypeError on one path, and
    torch.compile (torch's own code) an ``Unsupported`` on another; only the first is a type
    Thunder raised, so the identical minimal program makes them one bug. Were both raised in
    Thunder, they would stay two."""

    def raising_at(path, error_type, frame):
        return raised(path, error_type, "bad", frame, where="grad call, backward")

    def bugs_of(second_frame):
        store = FindingStore()
        for violation in (
            raising_at("jit-grad", "TypeError", "thunder/executors/torchex.py:no_autocast_fn"),
            raising_at("jit-torchcompile", "Unsupported", second_frame),
        ):
            finding, _ = store.add(Verdict.SHARED, ("stock",), violation, ONE_OP)
            finding.shrunk = True
        return store.bugs()

    (bug,) = bugs_of("torch/_dynamo/eval_frame.py:compile_wrapper")
    assert sorted(m.violation.error_type for m in bug.members) == ["TypeError", "Unsupported"]
    assert len(bugs_of("thunder/executors/torch_compile.py:compile")) == 2


def test_a_split_joins_the_raise_in_its_words_at_its_own_op_not_another_ops():
    """ "tuple index out of range": logsumexp's squeeze of a 0-d tensor on jit, thunderfx's split of
    the same logsumexp, and index_select's take of a 0-d tensor on another program. Words alone
    joined the split with whichever raise came first (index_select's), leaving logsumexp two bugs."""

    def split_at(op):
        return split("thunderfx", "tuple index out of range", op=op)

    take = raised("jit", "IndexError", "tuple index out of range", "thunder/core/prims.py:take_meta", symbol="index_select")
    squeeze = raised("jit", "IndexError", "tuple index out of range", "thunder/torch/__init__.py:squeeze", symbol="logsumexp")
    store = FindingStore()
    for violation, program in ((take, TWO_OPS), (split_at("logsumexp"), ONE_OP), (squeeze, ONE_OP)):
        store.add(Verdict.SHARED, ("stock",), violation, program)
    groups = sorted(sorted(m.violation.path for m in b.members) for b in store.bugs())
    assert groups == [["jit"], ["jit", "thunderfx"]], groups
    (logsumexp,) = [b for b in store.bugs() if len(b.members) == 2]
    assert {m.violation.frame for m in logsumexp.members} == {"thunder/torch/__init__.py:squeeze", ""}

    # The split's settled program, before it shrank to logsumexp alone, held index_select too and
    # showed its raise: a program showing two faults joins neither into the other's bug.
    store = FindingStore()
    for violation, program in ((split_at("logsumexp"), TWO_OPS), (take, TWO_OPS), (squeeze, ONE_OP)):
        finding, _ = store.add(Verdict.SHARED, ("stock",), violation, program)
        finding.shrunk = True
    store.add(Verdict.SHARED, ("stock",), split_at("logsumexp"), ONE_OP)
    frames = sorted(sorted(m.violation.frame for m in b.members) for b in store.bugs())
    assert frames == [["", "thunder/torch/__init__.py:squeeze"], ["thunder/core/prims.py:take_meta"]], frames


def refused_by_torch_compile(statement, thunder_frames=True):
    """The ErrorInfo of Dynamo's ``Unsupported`` raised at its own ``compile_wrapper`` on a region of
    a Thunder trace: "from user code:" names the trace's statement and, below it, Thunder's own
    code that Dynamo could not trace (``_vjp_impl`` flattening with optree), when there is some."""
    library = (
        '  File "/venv/thunder/torch/__init__.py", line 6792, in _vjp_impl\n    wrapped = _make_differentiable_wrapper(fn)\n'
        '  File "/venv/thunder/core/pytree.py", line 80, in tree_flatten\n    return optree.tree_flatten(args)\n'
        '  File "/venv/optree/ops.py", line 211, in tree_flatten\n    return _C.flatten(tree)\n'
    )
    message = (
        "Attempted to call function marked as skipped\n\nfrom user code:\n"
        f'   File "thunder.to_be_compiled_7", line 7, in to_be_compiled\n    {statement}\n' + (library if thunder_frames else "")
    )
    namespace = {}
    exec(compile("def compile_wrapper(message):\n    raise RuntimeError(message)\n", "/venv/torch/_dynamo/eval_frame.py", "exec"), namespace)  # fmt: skip
    try:
        namespace["compile_wrapper"](message)
    except RuntimeError as e:
        return ErrorInfo.from_exception(e)


def test_torch_compile_refusing_thunders_own_code_is_one_fault_whatever_the_op():
    """Every op's backward under the torch.compile executor runs ``_vjp_impl``, whose optree
    flattening Dynamo refuses: one fault in Thunder's code, one bug, known by that code's frame and
    kept apart from a fault the same program shows besides (min's backward calling zeros without a
    size), which it glued when it was torch's own, label-less exception."""
    from fuzzdce.oracles.raises import raised as as_violation

    new_full = refused_by_torch_compile("(t1, (_,), _) = new_full_vjp(((v0, (2,), 3), {}), t2)")
    minimum = refused_by_torch_compile("(t6, _) = min_vjp(((v0, -4), {}), t4, t5)")
    assert new_full.frame == minimum.frame == "thunder/core/pytree.py:tree_flatten"
    assert (new_full.symbol, minimum.symbol) == ("new_full", "min")
    store = FindingStore()
    store.add(Verdict.SHARED, ("stock",), as_violation("jit-torchcompile", new_full, " (grad call, backward)"), ONE_OP)
    for violation in (
        as_violation("jit-torchcompile", minimum, " (grad call, backward)"),
        raised(
            "jit-grad",
            "TypeError",
            "zeros() received an invalid combination of arguments",
            "thunder/executors/torchex.py:no_autocast_fn",
            where="grad call, backward",
        ),  # fmt: skip
    ):
        finding, _ = store.add(Verdict.SHARED, ("stock",), violation, TWO_OPS)
        finding.shrunk = True
    groups = sorted(sorted((m.violation.error_type, m.count) for m in b.members) for b in store.bugs())
    assert groups == [[("RuntimeError", 2)], [("TypeError", 1)]], groups  # one finding of both ops


def test_torch_compile_refusing_a_generated_statement_alone_keeps_torchs_frame_and_names_the_statement():
    """No Thunder code below the statement (a trace reading a name it never defined): torch's frame
    stays, the statement's symbol tells it apart, and it joins the fault its program shows."""
    from fuzzdce.core.tracebacks import symbol_in_user_code, thunder_frame_in_user_code

    error = refused_by_torch_compile("t16 = ltorch.mul(2, t13)", thunder_frames=False)
    assert error.frame == "torch/_dynamo/eval_frame.py:compile_wrapper" and error.symbol == "mul"
    assert symbol_in_user_code("Unsupported: no user code here") == thunder_frame_in_user_code("no user code") == ""


def test_a_raise_in_torchs_frame_joins_only_a_thunder_fault_that_explains_it():
    """torch.compile refusing a generated statement (``t16 = ltorch.mul(2, t13)``: torch's frame, the
    statement's op ``mul``) on a one-op settled program that shows a Thunder fault besides: a fault
    about ``mul``, or a DCE that removed what the statement reads (an observer), explains it and
    joins it; a wrong gradient at ``amax`` is another fault, and the two stay two bugs (f6582f4c6f
    and 958def0dcd each held two such faults, the torch raise taken for no fault of its own)."""
    from fuzzdce.oracles.raises import raised as as_violation

    refused = as_violation("jit-torchcompile", refused_by_torch_compile("t16 = ltorch.mul(2, t13)", False), " (grad call)")
    assert refused.site == "mul"

    def wrong_grad(op):
        return wrong_values("jit-grad", op, oracle="grads", call="grad")

    def bugs_beside(other):
        store = FindingStore()
        for violation in (refused, other):
            finding, _ = store.add(Verdict.SHARED, ("stock",), violation, ONE_OP)
            finding.shrunk = True  # one settled program shows both
        return sorted(sorted(m.violation.oracle for m in b.members) for b in store.bugs())

    assert bugs_beside(wrong_grad("amax")) == [["grads"], ["raises"]]
    assert bugs_beside(wrong_grad("mul")) == [["grads", "raises"]]
    assert bugs_beside(unsound("jit", "dropped one a kept subsymbol reads")) == [["dce-sound", "raises"]]


def test_a_finding_two_faulty_placements_both_show_does_not_join_their_bugs():
    """Two faulty placements each split thunderfx the same way, and one program shows the split under
    both: the finding of both joins one placement's bug, not the two bugs into one (which would list
    one placement's regression under the other), and each bug is under its own placement."""
    split_of_t0 = split("thunderfx", "'t0'")
    store = FindingStore()
    for placements in [("symcall",), ("symcall", "planted"), ("planted",)]:
        store.add(Verdict.REGRESSION, placements, split_of_t0, TWO_OPS if len(placements) == 2 else ONE_OP)
    bugs = store.bugs()
    assert sorted(b.placements for b in bugs) == [("planted",), ("symcall",)]
    assert sorted(b.placement for b in bugs) == ["planted", "symcall"]
    assert sum(len(b.members) for b in bugs) == 3


def test_python_spells_an_unbound_name_three_ways_and_they_are_one_kind_of_raise():
    """``NameError``, ``UnboundLocalError`` and a ``KeyError`` of a proxy's name are one kind
    (``raised_kind``): one fault leaving a name unbound raises each on some path, and a link joins
    them. A ``KeyError`` of a word, or a ``TypeError``, is a kind of its own and stays apart."""
    from fuzzdce.core.faults import UNBOUND_NAME, raised_kind

    FRAME = "thunder/core/trace.py:f"

    assert raised_kind("KeyError", "KeyError (grad call, forward): 't12'") == UNBOUND_NAME
    assert raised_kind("NameError", "NameError (forward): name 'i0' is not defined") == UNBOUND_NAME
    assert raised_kind("UnboundLocalError", "UnboundLocalError (forward): cannot access local variable 't0'") == UNBOUND_NAME
    assert raised_kind("KeyError", "KeyError (forward): 'weight'") == "KeyError"

    def bugs_of(*violations):
        store = FindingStore()
        found = [store.add(Verdict.REGRESSION, ("planted",), v, ONE_OP)[0] for v in violations]
        for other in found[1:]:
            store.link(found[0], other)
        return store.bugs()

    unbound = [
        raised(
            "jit-grad", "UnboundLocalError", "cannot access local variable 't0' where it is not associated with a value", FRAME
        ),
        raised("jit", "NameError", "name 't0' is not defined", FRAME),
        raised("thunderfx", "KeyError", "'t0'", FRAME),
    ]
    assert len(bugs_of(*unbound)) == 1
    assert len(bugs_of(unbound[0], raised("jit", "KeyError", "'weight'", FRAME))) == 2
    assert len(bugs_of(unbound[0], raised("jit", "TypeError", "bad", FRAME))) == 2


def test_links_join_causes_not_findings_and_a_link_through_a_missing_cause_joins_nothing():
    store = FindingStore()
    a, _ = store.add(Verdict.REGRESSION, ("symcall",), raised("jit"), ONE_OP)
    b, _ = store.add(Verdict.REGRESSION, ("symcall",), raised("thunderfx", "KeyError", "'t1'"), TWO_OPS)  # same cause as a
    c, _ = store.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), TWO_OPS)
    assert len(store.bugs()) == 2 and a.cause_key == b.cause_key
    store.links[("no such cause", c.cause_key)] = "a link from a cause no finding has"
    assert len(store.bugs()) == 2


def test_a_bug_is_known_by_its_identity_never_by_a_member():
    """The known file names a bug by its id or key. A member's finding filed once does not make
    the bug it later joins known (a wrong value filed would make every later one known)."""
    probe = FindingStore()
    finding, _ = probe.add(Verdict.REGRESSION, ("symcall",), raised("jit"), ONE_OP)
    (bug,) = probe.bugs()
    for known in ({bug.id: "filed"}, {bug.key: "filed"}):
        store = FindingStore(known)
        store.add(Verdict.REGRESSION, ("symcall",), raised("jit"), ONE_OP)
        store.add(Verdict.REGRESSION, ("symcall",), raised("thunderfx"), ONE_OP)
        (bug,) = store.bugs()
        assert bug.known_reason == "filed" and not bug.reportable
    store = FindingStore({bug.id: "filed"})
    store.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "exp"), ONE_OP)
    (other,) = store.bugs()
    assert other.reportable


def test_two_wrong_values_at_two_ops_are_two_bugs_and_a_known_one_does_not_hide_the_other():
    """One placement, one path: wrong values first at exp and first at neg are two causes, two
    bugs; filing one leaves the other reportable."""
    store = FindingStore()
    store.add(Verdict.REGRESSION, ("planted",), wrong_values("jit", "exp"), ONE_OP)
    store.add(Verdict.REGRESSION, ("planted",), wrong_values("jit", "neg"), TWO_OPS)
    bugs = store.bugs()
    assert sorted(b.smallest.violation.site for b in bugs) == ["exp", "neg"]
    (exp,) = [b for b in bugs if b.smallest.violation.site == "exp"]
    store = FindingStore({exp.id: "filed"})
    store.add(Verdict.REGRESSION, ("planted",), wrong_values("jit", "exp"), ONE_OP)
    store.add(Verdict.REGRESSION, ("planted",), wrong_values("jit", "neg"), TWO_OPS)
    assert [b.smallest.violation.site for b in store.bugs() if b.reportable] == ["neg"]


# --- campaigns with planted faults ------------------------------------------------------------------


# A few ops, so that the faulty one is drawn often and campaigns stay short.
OPS = ("add", "mul", "abs", "exp", "cos", "sum_all")


@pytest.fixture(scope="module")
def two_faults():
    """Two faults, each its own placement: add computes sub (wrong outputs and gradients, on every
    path), and DCE that is no longer a fixed point (idempotent oracle)."""
    config = CampaignConfig.of(
        ("stock", "planted:add_computes_sub", "planted:lazy_dce"),
        ("jit", "jit-grad", "thunderfx"),
        max_examples=15,
        seed=2,
        ops=OPS,
    )
    campaign = Campaign(config, log=lambda line: None)
    campaign.run()
    return campaign


@pytest.mark.slow
def test_two_planted_faults_are_never_joined_and_each_is_one_bug(two_faults):
    """Each fault's findings (several paths and oracles) join into bugs of its own, never into
    one of the other fault's. DCE that is no longer a fixed point is one bug on every path and
    oracle it shows (idempotent, and where Thunder's state lets it show, a raise under grad); add computing sub is at most two: its
    wrong gradients shrink to ``torch.mul(v0, v0)``, with no add in its forward (the backward adds
    the two products, and computes a subtraction), so that minimal program shows wrong gradients
    only, and the forward's minimal programs show none: nothing shows the two to be one fault, and
    two bugs beat one that hides another."""
    induced = [b for b in two_faults.ledger.bugs() if b.verdict == Verdict.REGRESSION]
    described = [(b.placements, b.oracles(), b.paths(), len(b.members)) for b in induced]
    assert {b.placements for b in induced} == {("planted:add_computes_sub",), ("planted:lazy_dce",)}, described
    (lazy,) = [b for b in induced if b.placements == ("planted:lazy_dce",)]
    assert "idempotent" in lazy.oracles() and lazy.paths() == ["jit", "jit-grad", "thunderfx"], described
    sub = [b for b in induced if b.placements == ("planted:add_computes_sub",)]
    assert len(sub) <= 2, described
    # add computing sub shows wrong values first at each op whose result or backward adds, a raise,
    # a malformed trace. A bug whose bisection named the decision (the patched dce making sub where
    # unpatched Thunder makes add) is known by it, whatever ops its failures met; any other bug
    # holds one fault label, never two.
    from fuzzdce.core.joining import kept_apart

    for bug in sub:
        if bug.decision is not None and bug.decision.identity is not None:
            assert "add -> sub" in bug.decision.identity[-1], bug.decision.identity
            continue
        labels = [label for label in kept_apart((m.fault, m.site) for m in bug.members) if label.kind == "fault"]
        assert len(labels) <= 1, (bug.id, labels)
    findings = [f for f in two_faults.store if f.verdict == Verdict.REGRESSION]
    assert len(findings) > len(induced)


@pytest.fixture(scope="module")
def baseline_fault():
    """Stock Thunder's dce raises on every trace with a torch op: a baseline bug on four paths, with
    two messages (thunderfx reports it as a split)."""
    import planted

    paths = ("jit", "jit-grad", "jit-symbolic", "thunderfx")
    config = CampaignConfig.of(("stock",), paths, max_examples=6, seed=3, time_budget=240, ops=OPS)
    campaign = Campaign(config, log=lambda line: None)
    # A fault every program shows on every path, so which findings exist does not depend on how
    # long Hypothesis keeps generating after its first failure (10 s, by the clock).
    with planted.failing_dce_in_long_traces(1):
        campaign.run()
    return campaign


@pytest.mark.slow
def test_a_stock_failure_on_four_paths_is_one_baseline_bug_of_one_op(baseline_fault):
    planted_bugs = [b for b in baseline_fault.ledger.bugs() if "planted: dce fails" in b.smallest.violation.message]
    assert len(planted_bugs) == 1, [(b.id, b.paths(), b.smallest.violation.message[:80]) for b in baseline_fault.ledger.bugs()]
    (bug,) = planted_bugs
    assert bug.verdict == Verdict.SHARED and bug.paths() == ["jit", "jit-grad", "jit-symbolic", "thunderfx"]
    assert {m.violation.oracle for m in bug.members} >= {"raises", "splits"}, bug.why
    assert bug.program.n_ops == 1, bug.program


def test_merging_lanes_keeps_the_smaller_program_with_its_choices_and_shrink_state():
    mine, theirs = FindingStore(), FindingStore()
    a, _ = mine.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), TWO_OPS, choices=(1, 2, 3))
    b, _ = theirs.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), ONE_OP, choices=(1,))
    b.shrunk = True
    mine.merge(theirs)
    (merged,) = mine.findings.values()
    assert (merged.program, merged.choices, merged.shrunk, merged.count) == (ONE_OP, (1,), True, 2)
    _, change = mine.add(Verdict.REGRESSION, ("symcall",), wrong_values("jit", "add"), ONE_OP, choices=(1,))
    assert change == "seen" and merged.shrunk is True, "seeing the shrunk program again keeps it shrunk"


def test_one_malformation_in_a_forward_and_in_a_backward_trace_is_two_identities():
    """check_trace's "unknown proxy <name> is used" in a backward trace (var_mean's grad rule using a
    proxy it never defined) and in a forward trace under symbolic values read alike; they come from
    other transforms, and two programs showing one each are two bugs. The same malformation in the
    forward trace on two paths is one."""
    from fuzzdce.core.faults import fault_of

    def malformed_in(path, trace):
        return malformed(path, "check_trace: AssertionError: unknown proxy <name> is used", trace=trace)

    backward = malformed_in("jit-torchcompile", "backward")
    forward = malformed_in("jit-symbolic", "forward")
    assert fault_of(backward) != fault_of(forward)
    assert fault_of(forward) == fault_of(malformed_in("jit", "forward"))
    assert fault_of(malformed_in("thunderfx", "backward")) == fault_of(backward)
    store = FindingStore()
    store.add(Verdict.SHARED, ("stock",), backward, ONE_OP)
    store.add(Verdict.SHARED, ("stock",), forward, TWO_OPS)
    assert len(store.bugs()) == 2


def test_a_shape_in_a_message_is_no_part_of_its_identity():
    """check_trace's "shape of proxy t16 recomputes to (1, 2, 2, 4) incorrectly" on one program and
    "... to (1,) incorrectly" on another are one malformation at two ranks: a shape is numbers."""
    from fuzzdce.core.faults import fault_of

    def recomputed(shape):
        return malformed("jit-grad", f"check_trace: AssertionError: shape of proxy t9 recomputes to {shape} incorrectly")

    assert fault_of(recomputed("(1, 2, 2, 4)")) == fault_of(recomputed("(1,)")) == fault_of(recomputed("[3, 1]"))
    assert fault_of(recomputed("(1, 2)")) != fault_of(malformed("jit-grad", "check_trace: zeros() got"))


def test_op_codes_arithmetic_on_a_symbolic_number_fails_at_the_op_code():
    """``clang.reshape`` computes ``a.numel % numel``: with a size-0 dimension, plain Python raises
    ZeroDivisionError there under thunder.jit, and under symbolic values the same ``%`` runs as the
    remainder prim and raises in its meta. One fault, one frame; an exception a proxy raises itself
    (``Tensor.fill_`` unknown to Thunder) keeps its own, and so does one beneath a tensor's operator
    (a call of an op: nll_loss's ``target != None`` raises in ``ne``'s type promotion)."""
    import thunder
    import torch

    def frame_of(fn, x=None, **options):
        try:
            thunder.jit(fn, **options)(torch.ones(1, 0, 1, 3) if x is None else x)
        except Exception as e:
            return ErrorInfo.from_exception(e).frame
        raise AssertionError("Thunder 0.2.6 raises on these")

    def unflatten(v0):
        return torch.unflatten(v0, -2, (1, -1))

    def fill(v0):
        return v0.fill_(1.0)

    assert frame_of(unflatten) == frame_of(unflatten, cache="symbolic values") == "thunder/clang/__init__.py:reshape"
    assert frame_of(fill, cache="symbolic values") == "thunder/core/proxies.py:__getattr__"

    def nll_loss(v0):
        return torch.nn.functional.nll_loss(v0, torch.tensor([0]).reshape(()))

    assert frame_of(nll_loss, torch.ones(3, requires_grad=True)) == "thunder/core/utils.py:elementwise_type_promotion"

"""Thunder's grad rules a campaign reached: recorded while each path runs, counted per program under
stock, and reported next to op coverage ("grad rules reached: N of M")."""

from conftest import evaluate_under
from sample_programs import DEAD_CODE_PROGRAM

from fuzzdce.core.program import Program, Ref, Step, TensorInput
from fuzzdce.results.merge import merged_grad_rules
from fuzzdce.results.records import RunSummary
from fuzzdce.results.report import render
from fuzzdce.running.grad_rules import (
    AUTOMATIC,
    coverage_line,
    family_lines,
    grad_rule_ids,
    namespace,
    rule_families,
    rule_name,
)


def test_a_grad_path_records_the_rules_it_ran_and_a_forward_path_none():
    """The program's add, exp (dead) and cos: jit-grad differentiates what the outputs need, thunderfx
    what its graph holds; plain jit differentiates nothing. Recording leaves stock silent."""
    evaluation = evaluate_under(DEAD_CODE_PROGRAM, "stock", paths=["jit", "jit-grad", "thunderfx"])["stock"]
    assert evaluation.violations == []
    assert evaluation.outcomes["jit"].grad_rules == []
    assert {"prims.add", "prims.cos"} <= set(evaluation.outcomes["jit-grad"].grad_rules)
    assert "prims.exp" not in evaluation.outcomes["jit-grad"].grad_rules  # dead: never differentiated
    assert set(evaluation.outcomes["jit-grad"].grad_rules) <= grad_rule_ids()
    from thunder.core import transforms
    from thunder.transforms import autodiff

    # Thunder's lookup is its own again everywhere (autodiff, imported by the first grad call, too).
    assert autodiff._get_gradfn_and_executor is transforms._get_gradfn_and_executor
    assert transforms._get_gradfn_and_executor.__module__ == "thunder.core.transforms"


def test_a_torch_level_rule_is_named_by_its_id():
    """A rule registered for a torch symbol (not a prim) is recorded under its id."""
    gelu = Program((TensorInput((2, 3)),), (Step("gelu", "torch.nn.functional.gelu({0})", (Ref(0),)),), (1,), seed=1)
    rules = evaluate_under(gelu, "stock", paths=["jit-grad"])["stock"].outcomes["jit-grad"].grad_rules
    assert rules and all(rule in grad_rule_ids() for rule in rules)
    assert len(grad_rule_ids()) > 300 and "prims.cos" in grad_rule_ids()


def test_rule_names_and_the_report_line():
    from thunder.core.prims import PrimIDs

    assert rule_name(PrimIDs.COS) == "prims.cos" and rule_name("torch.gelu") == "torch.gelu"
    assert coverage_line({"total": 9, "reached": {"prims.cos": 2, "prims.add": 5}}) == (
        "grad rules reached: 2 of 9 (prims.add 5, prims.cos 2, ...)"
    )
    assert coverage_line(None) is None
    merged = merged_grad_rules(
        [
            {"grad_rules": {"total": 9, "reached": {"prims.cos": 2}}},
            {"grad_rules": {"total": 9, "reached": {"prims.cos": 1, "prims.add": 1}}},
            {},
        ]
    )
    assert merged == {"total": 9, "reached": {"prims.cos": 3, "prims.add": 1}}
    summary = RunSummary(op_counts={"cos": 3}, grad_rules=merged)
    assert "grad rules reached: 2 of 9" in render(summary, None)
    assert RunSummary.from_json(summary.to_json()).grad_rules == merged


def test_rules_are_grouped_by_family_and_the_report_lists_what_is_left():
    """Every registered rule is in one family, named by its op's namespace and whose rule it is;
    the report counts each family's reached and lists its never reached, merged runs too."""
    families = rule_families()
    rules = [rule for members in families.values() for rule in members]
    assert sorted(rules) == sorted(grad_rule_ids())  # each rule once
    assert "prims.cos" in families["prims"]
    assert "torch.fft.fft" in families[f"fft ({AUTOMATIC})"]  # no Thunder symbol: torch's autograd
    assert "torch.nn.functional.silu" in families["nn.functional"]  # Thunder's own rule
    assert namespace("Tensor.as_strided") == "Tensor" and namespace("torch.linalg.svd") == "linalg"
    data = {"total": 5, "reached": {"prims.cos": 2}, "families": {"prims": ["prims.cos", "prims.sin"], "fft": ["torch.fft.fft"]}}
    assert family_lines(data, shown=1) == [
        "grad rules by family (reached of registered; never reached):",
        "  prims: 1 of 2; never: prims.sin",
        "  fft: 0 of 1; never: torch.fft.fft",
    ]
    merged = merged_grad_rules([{"grad_rules": data}, {"grad_rules": {**data, "families": {"fft": ["torch.fft.ifft"]}}}])
    assert merged["families"] == {"fft": ["torch.fft.fft", "torch.fft.ifft"], "prims": ["prims.cos", "prims.sin"]}
    assert "  prims: 1 of 2; never: prims.sin" in render(RunSummary(op_counts={"cos": 2}, grad_rules=merged), None)


def test_steering_favours_entries_whose_programs_reached_a_new_grad_rule():
    """A program whose stock paths ran a grad rule no program had run counts as new for its entries,
    which then weigh more; the same rule again is not new."""
    from types import SimpleNamespace

    from fuzzdce.core.model import Outcome
    from fuzzdce.fuzzing.steering import NEW_RULES, UNSEEN, Steering

    def evaluated(rules):
        outcome = Outcome("jit-grad", "stock", grad_rules=list(rules))
        return {"stock": SimpleNamespace(outcomes={"jit-grad": outcome}, invalid=False)}

    steering = Steering()
    cos = Program((TensorInput((2,)),), (Step("cos", "torch.cos({0})", (Ref(0),)),), (1,))
    neg = Program((TensorInput((2,)),), (Step("neg", "torch.neg({0})", (Ref(0),)),), (1,))
    assert steering.reached(evaluated(["prims.cos", "prims.mul"])) == 2
    assert steering.reached(evaluated(["prims.cos"])) == 0
    steering.evaluated.update({"cos": 1, "neg": 1})
    steering.new_rules.update({"cos": 1})
    for program in (cos, neg):
        steering.drew(program)
    weights = steering.weights()
    assert weights.ops["cos"] == NEW_RULES and weights.ops["neg"] == UNSEEN // 2


def test_steering_weighs_opinfo_entries_as_catalog_entries():
    """With an OpInfo source, a steered round draws first an OpInfo whose op's own grad rule no
    program ran (less each time it is drawn and still not run), then one never drawn, and one whose
    programs reached a new grad rule more than one drawn as often that reached none."""
    from types import SimpleNamespace

    from fuzzdce.core.grad_rule_names import rule_of_call
    from fuzzdce.fuzzing.steering import NEW_RULES, UNREACHED, UNSEEN, Steering
    from fuzzdce.strategies.opinfo import Entry

    calls = {"fft": "torch.fft.fft", "cummin": "torch.cummin", "geqrf": "torch.geqrf", "cos": "torch.cos", "sin": "torch.sin"}
    assert rule_of_call("torch.fft.fft") == "torch.fft.fft" and rule_of_call("torch.cos") is None  # decomposed
    entries = [Entry(name, call, ("float32",), ("sample",), rule=rule_of_call(call)) for name, call in calls.items()]
    steering = Steering(SimpleNamespace(entries=entries))

    def drawn(name):
        return Program((TensorInput((2,)),), (Step(f"opinfo:{name}", f"{calls[name]}({{0}})", (Ref(0),)),), (1,))

    for name in ("cummin", "geqrf", "sin"):
        steering.drew(drawn(name))
        steering.evaluated[f"opinfo:{name}"] += 1
    steering.new_rules["opinfo:sin"] += 1
    steering.rules["torch.geqrf"] += 1  # geqrf's rule was run
    weights = steering.weights().opinfos
    assert weights == {"fft": UNREACHED, "cummin": UNREACHED // 2, "geqrf": UNSEEN // 2, "cos": UNSEEN, "sin": NEW_RULES}
    assert Steering().weights().opinfos is None  # no source: the source's own weights


def test_a_campaign_counts_programs_grad_rules_and_bugs_by_the_source_of_its_programs():
    """Each program is counted under its source (an OpInfo step makes an OpInfo program, a model
    block's steps a block program, else the catalog), with the rules its stock paths ran; merged
    runs add up; the report gives each source's programs, rules (and those only it reached), and
    bugs under their smallest program's source."""
    from fuzzdce.fuzzing.ledger import Ledger
    from fuzzdce.strategies.sources import BLOCK_PROGRAMS, CATALOG_PROGRAMS, OPINFO_PROGRAMS, source_of

    assert source_of(["cos"]) == CATALOG_PROGRAMS and source_of(["cos", "opinfo:fft"]) == OPINFO_PROGRAMS
    assert source_of(["opinfo:fft", "block:nanogpt.MLP/gelu"]) == BLOCK_PROGRAMS
    ledger = Ledger(["stock"], log=lambda line: None)
    cos = Program((TensorInput((2, 3)),), (Step("cos", "torch.cos({0})", (Ref(0),)),), (1,), seed=1)
    fft = Program((TensorInput((2, 3)),), (Step("opinfo:torch.fft.fft", "torch.fft.fft({0}).abs()", (Ref(0),)),), (1,), seed=1)
    for program in (cos, fft, fft):
        ledger.count(program, evaluate_under(program, "stock", paths=["jit-grad"]))
    stats = ledger.stats
    assert stats.sources == {CATALOG_PROGRAMS: 1, OPINFO_PROGRAMS: 2}
    assert stats.source_rules[(CATALOG_PROGRAMS, "prims.cos")] == 1
    assert stats.source_rules[(OPINFO_PROGRAMS, "torch.fft.fft")] == 2
    assert (CATALOG_PROGRAMS, "torch.fft.fft") not in stats.source_rules
    by_source = {
        CATALOG_PROGRAMS: {"programs": 1, "reached": {"prims.cos": 1}},
        OPINFO_PROGRAMS: {"programs": 2, "reached": {"torch.fft.fft": 2, "prims.cos": 1}},
    }
    merged = merged_grad_rules([{"grad_rules": {"total": 9, "reached": {}, "by_source": by_source}}] * 2)
    assert merged["by_source"][OPINFO_PROGRAMS] == {"programs": 4, "reached": {"torch.fft.fft": 4, "prims.cos": 2}}
    from fuzzdce.core.vocabulary import Verdict
    from fuzzdce.results.records import BugRecord

    bug = BugRecord("b1", "k1", Verdict.SHARED, ("stock",), (), ops=("cos", "opinfo:torch.fft.fft"))
    summary = RunSummary(op_counts={"cos": 1}, grad_rules={**merged, "reached": {"prims.cos": 3}}, bugs=(bug,))
    assert (
        "catalog programs: 2 programs, 1 rule (0 no other source reached), 0 bugs; "
        "OpInfo programs: 4 programs, 2 rules (1 no other source reached), 1 bug"
    ) in render(summary, None)
    assert RunSummary.from_json(summary.to_json()).bugs[0].ops == bug.ops  # summary.json lists each bug's ops

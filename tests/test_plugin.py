"""Fuzz profiles and the pytest plugin: a fuzz test inside someone else's pytest run."""

import json
import os

import pytest
from hypothesis import settings

from fuzzdce.core.errors import UsageError
from fuzzdce.fuzzing import profiles


@pytest.fixture(autouse=True)
def restore_profile():
    before = settings.get_current_profile_name()
    yield
    settings.load_profile(before)


def test_nightly_keeps_randomness_and_database_even_under_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    loaded = profiles.load("nightly", str(tmp_path / "db"))
    assert loaded.derandomize is False
    assert loaded.database is not None
    assert loaded.max_examples >= 1000 and loaded.deadline is None and loaded.print_blob


def test_ci_is_deterministic_and_small(monkeypatch):
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    monkeypatch.setenv("CI", "true")
    assert profiles.default_profile() == "ci"
    loaded = profiles.load()
    assert loaded.derandomize and loaded.database is None and loaded.max_examples <= 50


def test_environment_variable_selects_the_profile(monkeypatch):
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "nightly")
    assert profiles.default_profile() == "nightly"


def test_unknown_profile_names_the_choices():
    with pytest.raises(UsageError, match="choose one of ci, dev, nightly"):
        profiles.load("weekly")


def test_the_plugin_names_the_findings_folder_fuzzdce_run_writes_without_importing_thunder():
    import subprocess
    import sys

    from fuzzdce import pytest_plugin
    from fuzzdce.results import store

    assert pytest_plugin.DEFAULT_FINDINGS_DIR == store.DEFAULT_FINDINGS_DIR
    loaded = "import sys, fuzzdce.pytest_plugin; print('thunder' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", loaded], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.slow
def test_bad_profile_on_the_command_line_is_a_usage_error(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--fuzz-profile", "weekly", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown fuzz profile 'weekly'*ci, dev, nightly*"])


def test_registering_leaves_the_profile_in_force_alone():
    """A user's own profile named like one of ours (Hypothesis loads its own ``ci`` under ``CI``)
    stays in force: only the other profiles are registered."""
    settings.register_profile("ci", max_examples=123)
    settings.load_profile("ci")
    try:
        profiles.register_beside_current()
        assert settings.get_current_profile_name() == "ci" and settings().max_examples == 123
        assert settings.get_profile("dev").max_examples == profiles.PROFILE_EXAMPLES["dev"]
    finally:
        profiles.register_profiles()


USERS_SETTINGS = """
from hypothesis import settings

settings.register_profile("mine", max_examples=7)
settings.load_profile("mine")
"""

SEES_THE_USERS_SETTINGS = """
from hypothesis import settings

def test_settings():
    assert settings.get_current_profile_name() == "mine" and settings().max_examples == 7
    assert settings.get_profile("nightly").max_examples == 5000  # registered all the same
"""


@pytest.mark.slow
@pytest.mark.parametrize("ci", [False, True])
def test_without_a_fuzz_profile_the_users_hypothesis_settings_stay(pytester, monkeypatch, ci):
    """Installed, the plugin is in every pytest session: unasked, it loads no profile."""
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    if ci:
        monkeypatch.setenv("CI", "true")
    else:
        monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(USERS_SETTINGS)
    pytester.makepyfile(SEES_THE_USERS_SETTINGS)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.slow
def test_without_any_profile_hypothesis_keeps_its_own(pytester, monkeypatch):
    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(
        "from hypothesis import settings\n\n"
        "def test_settings():\n"
        "    assert settings.get_current_profile_name() == 'default' and settings().max_examples == 100\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_fuzz_profile_asked_for_is_loaded(pytester, monkeypatch, how):
    monkeypatch.delenv("CI", raising=False)
    arguments = ["--fuzz-profile", "ci"] if how == "option" else []
    if how == "environment":
        monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")
    else:
        monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    pytester.makepyfile(
        "from hypothesis import settings\n\n"
        "def test_settings():\n"
        "    assert settings.get_current_profile_name() == 'ci' and settings().max_examples == 30\n"
    )
    pytester.runpytest_subprocess(*arguments, "-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_fuzz_test_finds_shrinks_and_records_what_symcall_breaks(pytester, tmp_path):
    findings = tmp_path / "findings"
    pytester.makepyfile(
        test_dce="""
        from fuzzdce.testing import fuzz_test

        test_symcall = fuzz_test(placements=["stock", "symcall"], paths=["thunderfx"], opinfo_rate=0.0)
        """
    )
    result = pytester.runpytest_subprocess(
        "--fuzz-profile", "ci", "--fuzz-findings", str(findings), "-p", "no:cacheprovider", timeout=900
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fuzzdce: profile ci*", "*def program(*"])
    records = [json.loads(p.read_text()) for p in findings.glob("*/bug.json")]
    induced = [r for r in records if r["verdict"] == "regression"]
    assert induced and all(r["placements"] == ["symcall"] for r in induced)
    assert min(r["n_ops"] for r in induced) <= 2
    assert (findings / "summary.json").is_file()


@pytest.mark.slow
def test_a_fuzz_test_reports_an_abort_as_a_crash_and_the_session_goes_on(pytester, tmp_path, monkeypatch):
    """A placement that aborts the process on ``exp``: the fuzz test's sandboxed worker dies, and the
    test fails with a crash finding, its program shrunk; the pytest session, and the test after
    it, go on. In process (``sandbox=False``) the abort ended the session, the test after it unrun."""
    tests = os.path.dirname(__file__)  # where "planted:" placements are imported from
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests, *filter(None, [os.environ.get("PYTHONPATH")])]))
    findings = tmp_path / "findings"
    pytester.makepyfile(
        test_dce="""
        from fuzzdce.testing import fuzz_test

        test_aborting = fuzz_test(placements=["stock", "planted:exp_aborts"], paths=["jit"], ops=["exp", "add", "mul"])

        def test_after_it():
            pass
        """
    )
    result = pytester.runpytest_subprocess(
        "--fuzz-profile", "ci", "--fuzz-findings", str(findings), "-p", "no:cacheprovider", timeout=900
    )
    result.assert_outcomes(failed=1, passed=1)
    records = [json.loads(p.read_text()) for p in findings.glob("*/bug.json")]
    crashes = [r for r in records if r["verdict"] == "regression" and "crash" in r["oracles"]]
    assert crashes and min(r["n_ops"] for r in crashes) <= 2, [(r["oracles"], r["n_ops"]) for r in records]

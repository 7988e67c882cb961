"""pytest plugin (entry point ``fuzzdce``): fuzz profiles for every Hypothesis test in the run.

``--fuzz-profile NAME`` (or ``HYPOTHESIS_PROFILE=NAME``) loads one of fuzzdce's profiles: ``ci``,
``dev`` (the default outside CI) or ``nightly``. ``--fuzz-database`` says where examples are kept
(a directory, ``redis://HOST:PORT``, or ``none``).
"""

from __future__ import annotations

import pytest

from fuzzdce import profiles
from fuzzdce.errors import UsageError

# store.DEFAULT_FINDINGS_DIR, named again rather than imported: store imports Thunder, and this
# plugin is loaded by every pytest run in the environment (tests/test_plugin.py checks they agree).
DEFAULT_FINDINGS_DIR = "fuzzdce-findings"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzzdce")
    group.addoption(
        "--fuzz-profile",
        default=None,
        help=f"fuzz profile: {', '.join(profiles.PROFILE_EXAMPLES)} "
        f"(default: ${profiles.PROFILE_ENV}, else ci when $CI is set, else dev)",
    )
    group.addoption(
        "--fuzz-database",
        default=None,
        help=f"example database: a directory, redis://HOST:PORT, or none (default: ${profiles.DATABASE_ENV} "
        f"or {profiles.DEFAULT_DATABASE_DIR})",
    )
    group.addoption(
        "--fuzz-findings",
        default=None,
        metavar="DIR",
        help=f"where fuzz tests write their findings, as fuzzdce run does (default: ./{DEFAULT_FINDINGS_DIR})",
    )


@pytest.hookimpl(trylast=True)  # after Hypothesis's own plugin, so our profile is the one in force
def pytest_configure(config: pytest.Config) -> None:
    try:
        profiles.load(config.getoption("fuzz_profile"), config.getoption("fuzz_database"))
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_report_header(config: pytest.Config) -> str:
    from hypothesis import settings

    current = settings()
    return (
        f"fuzzdce: profile {settings.get_current_profile_name()}, max_examples={current.max_examples}, "
        f"derandomize={current.derandomize}, database={current.database!r}"
    )

"""pytest plugin (entry point ``fuzzdce``): fuzz profiles for the Hypothesis tests of a run.

Installed, it is imported in every pytest session of the environment, so it changes nothing the
user did not ask for: it registers fuzzdce's profiles (``ci``, ``dev``, ``nightly``) and loads one
only when asked, by ``--fuzz-profile NAME`` or ``HYPOTHESIS_PROFILE=NAME``; otherwise the
Hypothesis settings in force stay the user's. ``--fuzz-database`` says where the profiles keep
examples (a directory, ``redis://HOST:PORT``, or ``none``).
"""

from __future__ import annotations

import pytest

from fuzzdce.core.errors import UsageError
from fuzzdce.fuzzing import profiles

# store.DEFAULT_FINDINGS_DIR, named again rather than imported: store imports Thunder, and this
# plugin is loaded by every pytest run in the environment (tests/test_plugin.py checks they agree).
DEFAULT_FINDINGS_DIR = "fuzzdce-findings"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fuzzdce")
    group.addoption(
        "--fuzz-profile",
        default=None,
        help=f"fuzz profile: {', '.join(profiles.PROFILE_EXAMPLES)} "
        f"(default: ${profiles.PROFILE_ENV}; without either, the Hypothesis profile in force is left as it is)",
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


@pytest.hookimpl(trylast=True)  # after Hypothesis's own plugin, so a profile asked for is the one in force
def pytest_configure(config: pytest.Config) -> None:
    """Load the fuzz profile the user asked for; else only register the profiles, loading none."""
    name = profiles.requested_profile(config.getoption("fuzz_profile"))
    database = config.getoption("fuzz_database")
    try:
        if name is None:
            profiles.register_beside_current(database)
        else:
            profiles.load(name, database)
    except UsageError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_report_header(config: pytest.Config) -> str:
    from hypothesis import settings

    current = settings()
    return (
        f"fuzzdce: profile {settings.get_current_profile_name()}, max_examples={current.max_examples}, "
        f"derandomize={current.derandomize}, database={current.database!r}"
    )

"""Fuzz profiles: Hypothesis settings profiles shared by pytest and ``fuzzdce run``.

- ``ci``: a few dozen programs, derandomized, no example database: minutes, repeatable.
- ``dev``: the local default: sixty programs, random, with the local example database.
- ``nightly``: thousands of programs for hours, random, with a persistent example database.

Hypothesis loads its *own* ``ci`` profile when the ``CI`` environment variable is set, which turns
the database off and derandomizes. Registering ours under the same name replaces it, and
``nightly`` states ``derandomize=False`` and its database explicitly, so a nightly run keeps both
however it is started.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from fuzzdce.core.errors import UsageError

PROFILE_ENV = "HYPOTHESIS_PROFILE"
DATABASE_ENV = "FUZZDCE_DATABASE"
DEFAULT_DATABASE_DIR = os.path.join(".hypothesis", "examples")

# Compiles take a fraction of a second and programs vary in size: timing checks only add noise.
# No explain phase: it runs a failing test's shrunk example again many times over (a compile in
# every placement and path each time) to comment which lines always ran; fuzzdce's reproducer and
# its decision say what the failure needs.
_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    print_blob=True,
    phases=[phase for phase in Phase if phase is not Phase.explain],
)

PROFILE_EXAMPLES = {"ci": 30, "dev": 60, "nightly": 5000}
# fuzzdce run's default --time-budget per profile, in seconds (None: examples alone bound it).
PROFILE_TIME_BUDGET = {"ci": 300, "dev": 600, "nightly": None}


def database_from(spec: str | None) -> ExampleDatabase | None:
    """An example database from ``redis://HOST:PORT[/DB]``, a directory path, or "none"."""
    if spec is None:
        spec = os.environ.get(DATABASE_ENV, DEFAULT_DATABASE_DIR)
    if spec.lower() == "none":
        return None
    if spec.startswith("redis://"):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError:
            raise UsageError(f"database {spec!r} needs the redis package: pip install 'fuzzdce[redis]'") from None
        return RedisExampleDatabase(redis.Redis.from_url(spec), key_prefix=b"fuzzdce:")
    return DirectoryBasedExampleDatabase(spec)


def profile_settings(database: str | None = None) -> dict[str, dict[str, object]]:
    """Each fuzz profile's settings; ``database`` overrides where dev and nightly keep examples."""
    # ci keeps no examples and derandomizes, unless a database is named explicitly (a shared
    # campaign): Hypothesis allows a database only without derandomize.
    ci_database = database_from(database) if database else None
    return {
        "ci": dict(max_examples=PROFILE_EXAMPLES["ci"], derandomize=ci_database is None, database=ci_database, **_COMMON),
        "dev": dict(max_examples=PROFILE_EXAMPLES["dev"], derandomize=False, database=database_from(database), **_COMMON),
        "nightly": dict(max_examples=PROFILE_EXAMPLES["nightly"], derandomize=False, database=database_from(database), **_COMMON),
    }


def register_profiles(database: str | None = None) -> None:
    """(Re)register the three profiles; ``database`` overrides where dev and nightly keep examples."""
    for name, values in profile_settings(database).items():
        settings.register_profile(name, **values)


def register_beside_current(database: str | None = None) -> None:
    """Register the profiles, loading none: those named like the profile in force are left out
    (registering under the loaded profile's name replaces the settings in force at once, and under
    ``$CI`` Hypothesis has loaded its own ``ci``: the user's, not ours to change)."""
    current = settings.get_current_profile_name()
    for name, values in profile_settings(database).items():
        if name != current:
            settings.register_profile(name, **values)


def requested_profile(option: str | None) -> str | None:
    """The fuzz profile the user asked for: ``option`` (``--fuzz-profile``), else ``$HYPOTHESIS_PROFILE``;
    None when neither says (then no profile is loaded for them)."""
    return option or os.environ.get(PROFILE_ENV) or None


def default_profile() -> str:
    """``HYPOTHESIS_PROFILE`` if set, else ``ci`` under CI, else ``dev``."""
    return os.environ.get(PROFILE_ENV) or ("ci" if os.environ.get("CI") else "dev")


def check_name(name: str) -> None:
    """UsageError naming the choices unless ``name`` is a fuzz profile."""
    if name not in PROFILE_EXAMPLES:
        raise UsageError(f"unknown fuzz profile {name!r}: choose one of {', '.join(PROFILE_EXAMPLES)}")


def load(name: str | None = None, database: str | None = None) -> settings:
    """Register and load profile ``name`` (default: ``default_profile()``); UsageError if unknown."""
    name = name or default_profile()
    check_name(name)
    register_profiles(database)
    settings.load_profile(name)
    return settings.get_profile(name)

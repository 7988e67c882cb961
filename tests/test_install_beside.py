"""fuzzdce installs beside the Thunder and torch it is meant to test, and replaces neither.

pip resolves fuzzdce's requirements (as pyproject.toml states them) into an environment that holds
Thunder 0.2.5 and torch 2.10.0 (neither is what constraints.txt pins); ``pip install --dry-run
--report`` must plan to install fuzzdce alone. The environment is a bare venv whose packages are
metadata only, and fuzzdce is a wheel holding just its metadata: offline and about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What a Thunder developer's environment may hold: another Thunder, another torch.
DEVELOPER_ENVIRONMENT = {"lightning-thunder": "0.2.5", "torch": "2.10.0", "hypothesis": "6.170.17", "numpy": "1.26.0"}


def metadata(name: str, version: str, requires: list[str] = ()) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    return "\n".join(lines + [f"Requires-Dist: {r}" for r in requires]) + "\n"


def environment_with(directory: Path, packages: dict[str, str]) -> Path:
    """A venv without pip holding ``packages`` (name -> version) as installed metadata; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    python = directory / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    for name, version in packages.items():
        info = Path(purelib) / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(metadata(name, version))
        (info / "INSTALLER").write_text("pip\n")
    return python


def metadata_wheel(directory: Path, dependencies: list[str]) -> Path:
    """A wheel of fuzzdce carrying only its metadata, with ``dependencies`` as Requires-Dist."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{info}/METADATA", metadata(name, version, dependencies))
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: fuzzdce-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return wheel


def dry_run(python: Path, wheel: Path) -> subprocess.CompletedProcess:
    """pip's plan for installing ``wheel`` into ``python``'s environment, from no index at all."""
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--dry-run", "--no-index", "--quiet"]
    return subprocess.run(
        [*command, "--disable-pip-version-check", "--report", "-", str(wheel)], capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def developer_python(tmp_path_factory) -> Path:
    return environment_with(tmp_path_factory.mktemp("env") / "venv", DEVELOPER_ENVIRONMENT)


def test_installing_fuzzdce_replaces_neither_thunder_nor_torch(developer_python, tmp_path):
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    result = dry_run(developer_python, metadata_wheel(tmp_path, dependencies))
    assert result.returncode == 0, result.stderr
    planned = {item["metadata"]["name"]: item["metadata"]["version"] for item in json.loads(result.stdout)["install"]}
    assert planned == {"fuzzdce": "0.1.0"}, f"pip would also install {planned}"


def test_exact_pins_would_replace_them(developer_python, tmp_path):
    """The control: requirements pinned as constraints.txt pins them cannot keep that environment."""
    pins = [
        line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.startswith(("torch==", "lightning-thunder=="))
    ]
    assert len(pins) == 2
    result = dry_run(developer_python, metadata_wheel(tmp_path, pins))
    assert result.returncode != 0 and "lightning-thunder==" in result.stderr + result.stdout


def test_dev_installs_from_the_constraints_file():
    dev = (ROOT / "dev").read_text()
    assert "constraints.txt" in dev and '-c "$CONSTRAINTS"' in dev
    assert not any("==" in d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def test_dev_fuzz_starts_fuzzdce_as_a_process_of_its_own():
    """``--time-budget`` counts from the fuzzdce process's start (``time_plan.process_started_at``):
    exec'd from ./dev, that process is the script's, and ``./dev fuzz --time-budget 60`` on a fresh
    machine spent its whole budget building the venv (0 programs)."""
    fuzz = next(line for line in (ROOT / "dev").read_text().splitlines() if line.strip().startswith("fuzz)"))
    assert '"$VENV/bin/fuzzdce" run "$@"' in fuzz and "exec" not in fuzz.split(";")[1]


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

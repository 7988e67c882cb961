"""Campaigns share failures through an example database: a real redis-server on loopback."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).parent


@pytest.fixture
def redis_url(tmp_path):
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed (./dev test and .ci/run install it where they can)")
    with socket.socket() as s:  # a free loopback port
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                process.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}/0"
    process.terminate()
    process.wait(timeout=20)


def fuzz(findings: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "fuzzdce", "run", "--jobs", "1", "--findings", str(findings), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)


def induced(findings: Path) -> set[str]:
    records = [json.loads(p.read_text()) for p in findings.glob("*/bug.json")]
    return {m["violation_signature"] for r in records if r["verdict"] == "regression" for m in r["members"]}


# What stock shows too is left unshrunk: these tests are of the regressions a database keeps.
COMMON = ["--placement", "stock", "--placement", "planted:colliding_names", "--path", "jit", "--profile", "dev",
          "--shrink", "regressions"]  # fmt: skip


def test_a_worker_saves_its_failures_in_redis(redis_url, tmp_path):
    first = fuzz(tmp_path / "first", *COMMON, "--database", redis_url, "--seed", "11", "--max-examples", "10")
    assert first.returncode == 1, first.stderr[-3000:]
    assert induced(tmp_path / "first")

    import redis

    assert redis.Redis.from_url(redis_url).keys("fuzzdce:*"), "the worker saved nothing"


# A fault past one op, on cheap elementwise ops that always apply: the first draw never shows it,
# later ones soon do, whatever the generator's seed.
RARE = ["--placement", "stock", "--placement", "planted:colliding_names_past_one_op", "--path", "jit", "--profile", "dev",
        "--op", "add", "--op", "mul", "--op", "abs", "--op", "exp", "--op", "neg", "--shrink", "regressions"]  # fmt: skip


def test_a_second_worker_replays_the_first_workers_failure(redis_url, tmp_path):
    first = fuzz(
        tmp_path / "first", *RARE, "--database", redis_url, "--seed", "11", "--max-examples", "30", "--time-budget", "120"
    )
    found = induced(tmp_path / "first")
    assert found, first.stderr[-3000:]
    # One program, alone: Hypothesis's first draw is its simplest program, too short for the fault.
    alone = fuzz(tmp_path / "alone", *RARE, "--database", "none", "--seed", "12", "--max-examples", "1")
    assert alone.returncode == 0 and not induced(tmp_path / "alone"), alone.stderr[-2000:]
    # One program with the shared database: the first worker's failure is replayed before it.
    second = fuzz(tmp_path / "second", *RARE, "--database", redis_url, "--seed", "12", "--max-examples", "1")
    assert found & induced(tmp_path / "second"), second.stderr[-2000:]


# Every test here starts processes, services or whole campaigns (./dev test -m "not slow" leaves them out).
pytestmark = pytest.mark.slow

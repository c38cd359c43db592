"""A pytest plugin that reports each test's CPU time, its own and its finished child processes'
(user + sys): wall-clock durations on a shared 2-core machine say more about the neighbours
than about the test. `--cpu-times` (tests/conftest.py) loads it, as in
`make test PYTEST_ARGS=--cpu-times`; the slowest tests and files are printed at the end, and
PHASE_CPU_TIMES=FILE also writes every test's seconds to FILE as JSON.

A child still running when its test ends (a chart renderer, a browser) counts for no test; a
module- or session-scoped fixture counts for the first test that uses it (its setup)."""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict

import pytest

_KEY = "cpu_s"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_START = pytest.StashKey[float]()


def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_START] = _cpu()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if call.when == "teardown" and _START in item.stash:  # setup, call and teardown
        report.user_properties.append((_KEY, _cpu() - item.stash[_START]))
    return report


_seen: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        for key, value in report.user_properties:
            if key == _KEY:
                _seen[report.nodeid] = value


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not _seen:
        return
    files: dict[str, float] = defaultdict(float)
    for nodeid, seconds in _seen.items():
        files[nodeid.split("::", 1)[0]] += seconds
    write = terminalreporter.write_line
    terminalreporter.section("CPU seconds (user + sys, with finished children)")
    write(f"all tests: {sum(_seen.values()):.1f} s over {len(_seen)} tests")
    write("slowest files:")
    for path, seconds in sorted(files.items(), key=lambda kv: -kv[1])[:40]:
        write(f"  {seconds:8.1f}  {path}")
    write("slowest tests:")
    for nodeid, seconds in sorted(_seen.items(), key=lambda kv: -kv[1])[:40]:
        write(f"  {seconds:8.1f}  {nodeid}")
    out = os.environ.get("PHASE_CPU_TIMES")
    if out:
        with open(out, "w") as f:
            json.dump(_seen, f, indent=1, sort_keys=True)

"""Thread counts this machine cannot hold are refused by every command that takes one: more
threads than the CPUs this process may use time-slice one another, so a number measured with
them describes the scheduler. One `error:` line naming the machine's CPU count and the range
allowed, exit 2, nothing written; `phase bandwidth --oversubscribe` allows them, with a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox import TRACEBACK, assert_one_line_error, run_phase

from phase.decode.cores import usable_cpus

# slow (not in `make test-fast`): each case is a separate `phase` process.
pytestmark = pytest.mark.slow

OVER = usable_cpus() + 1
SMALL = ["--quick", "--no-sensor", "--prompts", "code", "--strategies", "plain", "--tokens", "4",
         "--repeats", "1", "--cooldown", "0", "--idle-window", "0"]

COMMANDS = {
    "bandwidth": ["bandwidth", "--threads", f"1,{OVER}"],
    "generate": ["generate", "--threads", str(OVER), "--prompt", "hi", "--tokens", "1"],
    "measure": ["measure", "speculative", *SMALL, "--threads", str(OVER), "-o", "out/r.json"],
    "profile": ["profile", "speculative", "--quick", "--threads", str(OVER), "--no-sensor",
                "-o", "out/p.json"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_more_threads_than_cpus_are_refused_naming_the_machines_count(
        tmp_path: Path, command: str) -> None:
    (tmp_path / "out").mkdir()
    proc = run_phase(COMMANDS[command], cwd=tmp_path, timeout=300)
    assert_one_line_error(proc, 2, f"{OVER} thread(s) exceed the {usable_cpus()} CPU(s)",
                          f"allowed: 1 to {usable_cpus()}")
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out"], "something was written"


def test_bandwidth_oversubscribes_only_when_asked_and_says_so(tmp_path: Path) -> None:
    proc = run_phase(["bandwidth", "--threads", str(OVER), "--oversubscribe", "--kernel", "copy",
                      "--repeats", "1", "--array-mib", "1", "--implementation", "numpy"],
                     cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and TRACEBACK not in proc.stderr, proc.stderr
    assert f"warning: {OVER} thread(s) on {usable_cpus()} CPU(s)" in proc.stderr
    assert f"{OVER:>3} thr" in proc.stdout


def test_the_refusal_names_the_flag_only_where_there_is_one(tmp_path: Path) -> None:
    proc = run_phase(COMMANDS["bandwidth"], cwd=tmp_path, timeout=120)
    assert "--oversubscribe" in assert_one_line_error(proc, 2)
    proc = run_phase(COMMANDS["generate"], cwd=tmp_path, timeout=120)
    assert "--oversubscribe" not in assert_one_line_error(proc, 2)

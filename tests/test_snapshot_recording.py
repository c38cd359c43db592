"""How `phase sensors --snapshot` watches a machine's files (phase.sensors.replay.snapshot):
every file over one window, not one window after another (a machine with dozens of sysfs
files took that many seconds), with the same record per file as a file watched alone."""

from __future__ import annotations

from collections.abc import Callable

from phase.sensors.replay import snapshot


def _reader(name: str, values: list[object], calls: list[str]) -> Callable[[], object]:
    def read() -> object:
        calls.append(name)
        value = values[min(len(calls), len(values)) - 1]
        if isinstance(value, Exception):
            raise value
        return value
    return read


def test_every_file_is_read_in_each_pass_of_one_window() -> None:
    calls: list[str] = []
    reads = {"a": _reader("a", [5], calls), "b": _reader("b", [7], calls),
             "c": _reader("c", [9], calls)}
    out = snapshot._changes_together(reads, 0.05)
    # Interleaved: each file's first read comes before any file's second.
    firsts = [calls.index(name) for name in "abc"]
    seconds = [i for i, name in enumerate(calls) if name == "a"][1]
    assert max(firsts) < seconds
    # One window for all: each record ends at the same watched span.
    ends = {record["changes"][-1][0] for record in out.values()}
    assert len(ends) == 1 and 0.05 <= ends.pop() < 1.0


def test_a_file_that_fails_ends_its_own_record_only() -> None:
    calls: list[str] = []
    failing = _reader("bad", [1, 1, OSError("gone")], [])
    steady = _reader("ok", [3], calls)
    out = snapshot._changes_together({"bad": failing, "ok": steady}, 0.05)
    assert out["bad"]["error"] == "gone"
    assert [v for _, v in out["bad"]["changes"]] == [1]  # no watched span after an error
    assert "error" not in out["ok"] and [v for _, v in out["ok"]["changes"]] == [3, 3]
    # What one file alone records is the same kind of record.
    alone = snapshot._changes(_reader("x", [4], []), 0.02)
    assert [v for _, v in alone["changes"]] == [4, 4]

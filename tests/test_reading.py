"""Strict reading: JSON types as the published schema states them, duplicate keys blocking with
their JSON path, and files that are not results (invalid UTF-8, runaway nesting, a FIFO, a
directory) refused in one line each, every file's problems reported in one pass."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import make_results, write_results
from sandbox import TRACEBACK, run_phase

from phase.results import ResultsError, load, parse

REPO = Path(__file__).resolve().parent.parent


def _edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None], name: str = "bad.json") -> Path:
    data = json.loads(make_results().model_dump_json())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return edit


LAX_VALUES = [
    (("schema_version",), True, "$.schema_version"),
    (("runs", 0, "decode_s"), "1.5", "$.runs[0].decode_s"),
    (("runs", 0, "prefill_s"), True, "$.runs[0].prefill_s"),
    (("runs", 0, "tokens"), 16.5, "$.runs[0].tokens"),
    (("runs", 0, "matches_plain"), 1, "$.runs[0].matches_plain"),
    (("config", "repeats"), "3", "$.config.repeats"),
    (("created",), 1767225600, "$.created"),
    (("provenance", "cpu_cores"), False, "$.provenance.cpu_cores"),
]


@pytest.mark.parametrize(("where", "value", "json_path"), LAX_VALUES)
def test_values_of_the_wrong_json_type_are_rejected(tmp_path: Path, where: tuple[str | int, ...],
                                                    value: Any, json_path: str) -> None:
    path = _edited(tmp_path, _set(where, value))
    with pytest.raises(ResultsError) as err:
        load(path)
    assert f"{path}: {json_path}" in str(err.value)


def test_integers_are_numbers_and_iso_strings_are_datetimes(tmp_path: Path) -> None:
    """Just inside: what the JSON Schema accepts is accepted (an integer where a number is
    expected; a date-time string)."""
    path = _edited(tmp_path, _set(("runs", 0, "decode_s"), 2))
    assert load(path).runs[0].decode_s == 2.0  # type: ignore[union-attr]
    # JSON has one number type: 16.0 is an integer to the JSON Schema, and so to phase.
    path = _edited(tmp_path, _set(("runs", 0, "tokens"), 16.0))
    assert load(path).runs[0].tokens == 16  # type: ignore[union-attr]
    path.write_text(path.read_text().replace('"decode_s": 1.0', '"decode_s": 1e400', 1))
    with pytest.raises(ResultsError, match=r"\$\.runs\[0\]\.decode_s: .*finite"):
        load(path)


def test_duplicate_keys_are_blocking_with_their_path(tmp_path: Path) -> None:
    text = write_results(make_results(), tmp_path / "ok.json").read_text()
    first_run = text.index('"status": "complete"')
    top = text[:first_run] + '"status": "complete",\n "status": "running",' + \
        text[first_run + len('"status": "complete",'):]
    path = tmp_path / "dup-top.json"
    path.write_text(top)
    with pytest.raises(ResultsError, match=r"\$\.status: duplicate key"):
        load(path)
    nested = text.replace('"prefill_s": ', '"prefill_s": 0.5, "prefill_s": ', 1)
    path.write_text(nested)
    with pytest.raises(ResultsError, match=r"\$\.runs\[0\]\.prefill_s: duplicate key"):
        load(path)
    proc = run_phase(["validate", str(path)])
    assert proc.returncode == 2 and "$.runs[0].prefill_s: duplicate key" in proc.stdout


def test_committed_results_files_read_strictly() -> None:
    files = sorted(p for p in (REPO / "results").glob("*.json") if p.name != "schema.json")
    assert files
    for path in files:
        load(path)


def test_the_published_schema_rejects_what_validate_rejects(tmp_path: Path) -> None:
    import jsonschema  # installed with altair, which phase needs anyway

    schema = json.loads((REPO / "results" / "schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    good = json.loads(make_results().model_dump_json())
    assert not list(validator.iter_errors(good))
    for where, value, _ in LAX_VALUES:
        data = json.loads(json.dumps(good))
        _set(where, value)(data)
        assert list(validator.iter_errors(data)), where
        with pytest.raises(ResultsError):
            parse(data, "x.json")


def test_not_results_files_are_one_line_each(tmp_path: Path) -> None:
    bad_utf8 = tmp_path / "b.json"
    bad_utf8.write_bytes(b'{"schema_version": 2, "id": "\xff"}')
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    directory = tmp_path / "dir.json"
    directory.mkdir()
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf{}")
    expected = {bad_utf8: "not UTF-8 text: byte 0xff at offset 29",
                deep: "nested too deeply", fifo: "FIFO", directory: "a directory",
                bom: "byte-order mark", tmp_path / "gone.json": "no such file"}
    for path, needle in expected.items():
        with pytest.raises(ResultsError) as err:
            load(path)
        assert str(err.value).startswith(f"{path}: ") and needle in str(err.value)
        assert "\n" not in str(err.value)


def test_validate_reports_every_file_in_one_pass(tmp_path: Path) -> None:
    good = write_results(make_results(), tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    proc = run_phase(["validate", str(bad), str(fifo), str(good), str(deep)])
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert proc.returncode == 2
    for path in (bad, fifo, deep):
        assert f"{path}: " in proc.stdout
    # The readable file was validated too, not skipped after the first failure.
    assert str(good) in proc.stdout

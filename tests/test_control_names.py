"""Issue 31, class 7: control characters in names. Every string a results file holds is
checked on read (phase.results.names): a control character in any name (prompt, strategy,
host, sensor, id, model, dict keys) is refused with one line naming the JSON path; free text
may hold tab, newline and carriage return only; a run's generated text is kept as generated.
And a build that fails for any reason, a crash of the chart renderer or a kill included,
leaves no `.phase-tmp-*` directory behind (the next build on the host removes a killed one's)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from factories import make_results, make_sensor, make_summary
from sandbox import PHASE, TRACEBACK, run_phase

from phase.base.errors import PhaseError
from phase.results import ResultsError, load
from phase.results.names import FREE_TEXT, UNCHECKED
from phase.storage.outputs import STAGING_PREFIX

BAD = ["\x00", "\x1b", "\x7f", "\x85", "\n"]


def _locations(node: Any, where: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(location, owning key) of every string, one per schema place (list items: the first)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, str):
                yield (*where, key), key
            else:
                yield from _locations(value, (*where, key))
    elif isinstance(node, list) and node:
        if isinstance(node[0], str):
            yield (*where, 0), where[-1] if where else "$"
        else:
            yield from _locations(node[0], (*where, 0))


def _files() -> dict[str, dict[str, Any]]:
    raw = make_results(sensors=[make_sensor("rapl"), make_sensor("board", scope="board",
                                                                 kind="power")],
                       prompts=["p1"], strategies=["plain", "draft-4"], repeats=1)
    return {"raw": json.loads(raw.model_dump_json()),
            "summary": json.loads(make_summary().model_dump_json())}


def _set(data: Any, where: tuple[Any, ...], value: Any) -> Any:
    out = json.loads(json.dumps(data))
    node = out
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    return out


def _is_text(key: str) -> bool:
    return key in FREE_TEXT or key.endswith("_reason")


@pytest.mark.parametrize("kind", ["raw", "summary"])
def test_every_string_of_a_results_file_is_checked(tmp_path: Path, kind: str) -> None:
    data = _files()[kind]
    places = list(_locations(data))
    assert len(places) > (30 if kind == "raw" else 5), places
    failures = []
    for where, key in places:
        original = _get(data, where)
        for char in BAD:
            path = tmp_path / "r.json"
            path.write_text(json.dumps(_set(data, where, original[:1] + char + original[1:])))
            expect_refused = key not in UNCHECKED and not (_is_text(key) and char == "\n")
            try:
                load(path)
                refused = None
            except ResultsError as exc:
                refused = str(exc)
            label = f"{'.'.join(map(str, where))} + {char!r}"
            if expect_refused and (refused is None or "control character" not in refused
                                   or "\n" in refused):
                failures.append(f"{label}: {refused}")
            if not expect_refused and refused is not None and "control character" in refused:
                failures.append(f"{label}: refused free text: {refused}")
    assert not failures, "\n".join(failures)


def _get(data: Any, where: tuple[Any, ...]) -> str:
    for key in where:
        data = data[key]
    assert isinstance(data, str)
    return data


def test_a_control_character_in_a_dict_key_is_refused(tmp_path: Path) -> None:
    data = _files()["raw"]
    run = data["runs"][0]
    run["temperatures_c"] = {"cpu\x00": 40.0}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsError, match=r"\$\.runs\[0\]\.temperatures_c\.cpu\\u0000: a key"):
        load(path)


def _site_inputs(tmp_path: Path, prompt: str) -> list[str]:
    from test_publish_inputs import make_inputs

    inputs = make_inputs(tmp_path / "in", versions=1, repo_notes=False)
    gpu = inputs.results_dir / "speculative-fixture-gpu.json"
    text = gpu.read_text()
    name = json.loads(text)["config"]["prompts"][0]["name"]
    gpu.write_text(text.replace(f'"{name}"', json.dumps(prompt)))
    return ["--results-dir", str(inputs.results_dir), "--notes-dir", str(inputs.notes_dir),
            "--published-dir", str(tmp_path / "pub"), "--docs-dir", str(tmp_path / "docs"),
            "--site-dir", str(tmp_path / "site")]


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"{STAGING_PREFIX}*")]


@pytest.mark.slow
def test_site_with_a_nul_in_a_prompt_name_refuses_and_leaves_nothing(tmp_path: Path) -> None:
    args = _site_inputs(tmp_path, "co\u0000de")
    proc = run_phase(["site", *args], timeout=600)
    assert TRACEBACK not in proc.stdout + proc.stderr
    assert proc.returncode in (1, 2), (proc.returncode, proc.stderr[-2000:])
    assert "control character U+0000" in proc.stdout + proc.stderr
    assert not _leftovers(tmp_path)
    assert not (tmp_path / "site").exists() and not (tmp_path / "pub").exists()


@pytest.mark.slow
def test_a_crash_of_the_chart_renderer_is_an_error_not_an_abort() -> None:
    from phase.publish.charts.png_worker import draw_png

    spec = {"data": {"values": [{"a": "x\u0000y", "b": 1}]}, "mark": "bar",
            "encoding": {"x": {"field": "a", "type": "nominal"},
                         "y": {"field": "b", "type": "quantitative"}}}
    with pytest.raises(PhaseError, match="crashed"):
        draw_png(json.dumps(spec), None, 1.0)
    spec["data"]["values"][0]["a"] = "xy"  # the next chart draws in a new child
    assert draw_png(json.dumps(spec), None, 1.0).startswith(b"\x89PNG")


@pytest.mark.slow
def test_a_killed_build_leaves_nothing_after_the_next_build(tmp_path: Path) -> None:
    """SIGKILL runs no cleanup; the next build on this host removes what the dead one left."""
    args = _site_inputs(tmp_path, "code")
    proc = subprocess.Popen([PHASE, "build", *args[:-2]], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _leftovers(tmp_path):
        assert proc.poll() is None, "the build ended before it staged anything"
        assert time.monotonic() < deadline
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _leftovers(tmp_path)  # what a killed build leaves
    again = run_phase(["build", *args[:-2]], timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert not _leftovers(tmp_path), _leftovers(tmp_path)

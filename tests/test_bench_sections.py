"""bench/'s sections are registered once (bench/sections.py) and bench/run.py reads the
registry: its CLI lists, selects and refuses section names from it. Nothing here measures:
no section runs."""

from __future__ import annotations

import inspect

import pytest

from bench import run
from bench.sections import BY_NAME, SECTIONS


def test_each_section_is_registered_once_and_names_a_function_of_its_module() -> None:
    names = [s.name for s in SECTIONS]
    assert len(names) == len(set(names)) == len(BY_NAME)
    for section in SECTIONS:
        runner = section.runner()
        assert callable(runner), section.name
        assert list(inspect.signature(runner).parameters) == ["ctx"], section.name
        assert section.measures.strip(), section.name


def test_help_names_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        run.parse_args(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--only" in out and "--list" in out


def test_list_prints_every_section_in_order_and_runs_none(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert run.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [s.name for s in SECTIONS]
    for line, section in zip(lines, SECTIONS, strict=True):
        assert section.measures in line and f"bench/{section.module}.py" in line


def test_an_unknown_section_is_refused_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    first = SECTIONS[0].name
    with pytest.raises(SystemExit) as exit_:
        run.parse_args(["--only", f"{first},no-such-section"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown section(s) no-such-section; choose from" in err
    assert all(s.name in err for s in SECTIONS)
    assert first not in err.split("unknown section(s)")[1].split(";")[0]


def test_selected_sections_run_in_registry_order() -> None:
    last, first = SECTIONS[-1].name, SECTIONS[0].name
    args = run.parse_args(["--only", f"{last}, {first}"])
    assert args.only == [last, first]
    assert [s.name for s in run._chosen(args)] == [first, last]

"""The validation rules are found from their modules (phase.validate.registry): each module of
phase/validate/rules/ declares itself a rule or a helper, a new module is picked up, and the
order is the declared one, never the file listing's."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from phase.validate import rules
from phase.validate.registry import Helper, Rule, discover

RULES_DIR = Path(rules.__file__).parent


def _declarations() -> dict[str, object]:
    return {p.stem: importlib.import_module(f"phase.validate.rules.{p.stem}").RULE
            for p in sorted(RULES_DIR.glob("*.py")) if p.stem != "__init__"}


def test_every_module_of_the_rules_package_is_a_rule_or_a_helper() -> None:
    declared = _declarations()
    assert declared, "no module found: the test looks in the wrong place"
    assert all(isinstance(d, Rule | Helper) for d in declared.values()), declared
    raw = {name for name, d in declared.items() if isinstance(d, Rule) and d.applies_to == "raw"}
    summary = {n for n, d in declared.items() if isinstance(d, Rule) and d.applies_to == "summary"}
    assert {c.__module__.rsplit(".", 1)[1] for c in rules.RAW_RULES} == raw
    assert {c.__module__.rsplit(".", 1)[1] for c in rules.SUMMARY_RULES} == summary
    assert set(rules.RULES) == {name.replace("_", "-") for name in raw}


def test_the_rules_run_in_their_declared_order() -> None:
    declared = _declarations()
    orders = [declared[c.__module__.rsplit(".", 1)[1]].order  # type: ignore[attr-defined]
              for c in rules.RAW_RULES]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)
    # What the package docstring promises: value rejections before those that leave them out.
    position = {name: i for i, name in enumerate(rules.RULES)}
    for rejecting in ("sensor-lag", "impossible"):
        for leaving_out in ("enclosure", "lag-confound", "variance"):
            assert position[rejecting] < position[leaving_out]


def _package(root: Path, name: str, modules: dict[str, str]) -> Path:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, body in modules.items():
        (package / f"{module}.py").write_text(
            "from phase.validate.registry import Helper, Rule\n\n"
            "def check(results, settings, ctx):\n    return []\n\n" + body + "\n")
    return package


@pytest.fixture
def importable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("fake_rules")]:
        del sys.modules[name]


def test_a_new_module_is_picked_up_in_declared_order(importable: Path) -> None:
    package = _package(importable, "fake_rules_a", {
        "a_first_by_name": "RULE = Rule(order=20, check=check)",
        "b_second_by_name": "RULE = Rule(order=10, check=check)",
        "c_shared": "RULE = Helper('code the rules share')",
        "d_summary": "RULE = Rule(order=10, check=check, applies_to='summary')",
    })
    found = discover("fake_rules_a", [str(package)])
    assert found.names == ("b-second-by-name", "a-first-by-name")
    assert [c.__module__ for c in found.raw] == ["fake_rules_a.b_second_by_name",
                                                "fake_rules_a.a_first_by_name"]
    assert [c.__module__ for c in found.summary] == ["fake_rules_a.d_summary"]


def test_a_module_that_declares_nothing_is_refused(importable: Path) -> None:
    package = _package(importable, "fake_rules_b", {"forgot": "X = 1"})
    with pytest.raises(TypeError, match=r"fake_rules_b\.forgot declares no RULE"):
        discover("fake_rules_b", [str(package)])


def test_two_rules_at_one_order_are_refused(importable: Path) -> None:
    package = _package(importable, "fake_rules_c", {
        "one": "RULE = Rule(order=10, check=check)",
        "two": "RULE = Rule(order=10, check=check)",
    })
    with pytest.raises(ValueError, match="share an order"):
        discover("fake_rules_c", [str(package)])

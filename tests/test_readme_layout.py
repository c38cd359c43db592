"""The README's layout names every package under phase/ and nothing that is gone (issue 45,
item 11): a newcomer reads it first, and it had listed modules that no longer existed while
missing nine that did."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PHASE = REPO / "phase"


def _layout() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Layout\n\n```\n(.*?)\n```", readme, re.S | re.M)
    assert match, "README.md has no '## Layout' section with a code block"
    return match.group(1)


def _packages() -> list[Path]:
    return sorted(p.parent for p in PHASE.rglob("__init__.py") if "__pycache__" not in p.parts)


def _phase_block(layout: str) -> str:
    """The lines from `phase/` to the next top-level entry of the tree."""
    lines = layout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("phase/"))
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^\S", lines[i])),
               len(lines))
    return "\n".join(lines[start:end])


def test_every_package_under_phase_is_named() -> None:
    block = _phase_block(_layout())
    top = set(re.findall(r"^  (\w+)/", block, re.M))
    missing = []
    for package in _packages():
        rel = package.relative_to(PHASE)
        if rel == Path("."):
            continue
        if len(rel.parts) == 1:
            if rel.name not in top:
                missing.append(f"{rel}/ (a line of its own)")
        elif not re.search(rf"(?<![\w/]){re.escape(rel.name)}/", block):
            missing.append(f"{rel}/")
    assert missing == [], f"README.md's Layout does not name: {missing}"


def test_the_layout_names_nothing_that_is_gone() -> None:
    block = _phase_block(_layout())
    listed = re.findall(r"^  (\w+)/", block, re.M)
    gone = [name for name in listed if not (PHASE / name).is_dir()]
    assert gone == [], f"README.md's Layout names directories phase/ no longer has: {gone}"
    named_files = re.findall(r"(?<![\w/.])(\w+\.(?:py|c))\b", block)
    everywhere = {p.name for p in PHASE.rglob("*") if p.is_file()}
    stale = [name for name in named_files if name not in everywhere]
    assert stale == [], f"README.md's Layout names files phase/ no longer has: {stale}"


def test_the_checks_see_a_real_tree() -> None:
    # Guards the two tests above against passing on an empty walk or an unmatched block.
    assert len(_packages()) >= 20
    block = _phase_block(_layout())
    assert block.startswith("phase/") and "policy/" in block and "strategies/" in block


def test_contributing_names_only_files_that_exist() -> None:
    """CONTRIBUTING.md's recipes point at one example each: a renamed example must not leave
    a newcomer at a dead path."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:phase|tests|bench|experiments|templates|docs)/[\w./-]+)`", text))
    assert len(paths) >= 15
    missing = sorted(p for p in paths if "<" not in p and not (REPO / p).exists())
    assert missing == [], f"CONTRIBUTING.md names paths that do not exist: {missing}"

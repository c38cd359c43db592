"""The house rules a newcomer relies on: small modules, short functions (or a stated reason),
in phase/ and in bench/ alike."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = (REPO / "phase", REPO / "bench")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# A longer function says why in its docstring, in a sentence starting with this.
REASON = "Long because"


def _modules() -> list[Path]:
    return sorted(p for package in PACKAGES for p in package.rglob("*.py"))


def test_the_packages_are_where_the_checks_look() -> None:
    names = {p.relative_to(REPO).as_posix() for p in _modules()}
    assert {"phase/cli/__init__.py", "phase/campaign/runner.py",
            "phase/validate/rules/__init__.py", "bench/run.py", "bench/sections.py"} <= names


def test_no_module_over_400_lines() -> None:
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"


def test_no_function_over_60_lines_without_a_reason() -> None:
    unexplained = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES and REASON not in (ast.get_docstring(node) or ""):
                unexplained.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} "
                                   f"({length} lines)")
    assert unexplained == [], (
        f"shorten these, or say why in the docstring ('{REASON} ...'): {unexplained}"
    )

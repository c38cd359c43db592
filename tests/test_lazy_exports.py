"""The packages whose names are looked up on first use (phase.base.lazy) say each name three times:
a TYPE_CHECKING import for type checkers, the `_WHERE` table the lookup reads, and `__all__`
(derived from the table). They must agree, and every name must resolve to what its module
defines."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PHASE = Path(__file__).resolve().parent.parent / "phase"


def _lazy_packages() -> list[str]:
    found = []
    for init in sorted(PHASE.rglob("__init__.py")):
        if "from phase.base.lazy import exports" in init.read_text(encoding="utf-8"):
            parts = init.parent.relative_to(PHASE.parent).parts
            found.append(".".join(parts))
    return found


def _type_checking_imports(package: str) -> dict[str, str]:
    """name -> module, from the `if TYPE_CHECKING:` block of the package's __init__."""
    init = Path(importlib.import_module(package).__file__ or "")
    names: dict[str, str] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module, ast.unparse(stmt)
                names.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    return names


def test_the_lazy_packages_are_found() -> None:
    assert {"phase.decode", "phase.campaign"} <= set(_lazy_packages())


@pytest.mark.parametrize("package", _lazy_packages())
def test_type_checking_imports_the_table_and_all_agree(package: str) -> None:
    module = importlib.import_module(package)
    where: dict[str, str] = module._WHERE
    assert _type_checking_imports(package) == {
        name: f"{package}.{sub}" for name, sub in where.items()}
    assert sorted(module.__all__) == sorted(where)
    assert set(where) <= set(dir(module))


@pytest.mark.parametrize("package", _lazy_packages())
def test_every_name_resolves_to_what_its_module_defines(package: str) -> None:
    module = importlib.import_module(package)
    for name, sub in module._WHERE.items():
        defining = importlib.import_module(f"{package}.{sub}")
        assert getattr(module, name) is getattr(defining, name), name

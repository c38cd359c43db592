"""A package's public names looked up on first use (PEP 562) instead of imported with it.

`phase.decode` and `phase.campaign` name what they offer in one table (name -> submodule);
importing the package then costs nothing until a name is used, so light commands start
without llama.cpp, jinja2 or rich (tests/test_cli_lazy.py).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose names live in `where[name]`."""

    def getattr_(name: str) -> Any:
        # An AttributeError for any other name lets `from package import submodule` import
        # the submodule, as it would without this hook.
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def dir_() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *where})

    return getattr_, dir_

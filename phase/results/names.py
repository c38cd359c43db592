"""No control characters in what a file names: prompts, strategies, hosts, sensors, ids.

A name travels into file names, page titles, table cells, chart labels and SVG text; a NUL or
an escape sequence there validated clean, then crashed the chart renderer (vl-convert aborts
the whole process on a character XML cannot hold) or corrupted a page. So every string of a
results file is checked on read, deny by default, wherever it sits (dict keys included):

* names and everything else: no control character at all (C0, DEL, C1);
* free text (a prompt's text, a reason, a description, the command line): tab, newline and
  carriage return are allowed, other control characters are not;
* a run's generated text (`output_text`) is the model's output, kept byte for byte as
  generated; it is escaped wherever it is shown, never read as a name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from phase.results.migrations import ResultsError

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
FREE_TEXT = frozenset({"text", "description", "command_line", "reason", "note",
                       "llama_cpp_system_info", "raw_runs_note"})
UNCHECKED = frozenset({"output_text"})
_SCALARS = frozenset({int, float, bool, type(None)})


def _is_free_text(key: str) -> bool:
    return key in FREE_TEXT or key.endswith("_reason")


def _strings(node: Any, where: str, key: str) -> Iterator[tuple[str, str, str]]:
    """(JSON path, the key the string belongs to, the string) for every string and dict key;
    iterative, so depth is bounded only by what the JSON reader accepted."""
    stack: list[tuple[Any, str, str]] = [(node, where, key)]
    while stack:
        value, at, owner = stack.pop()
        if isinstance(value, str):
            yield at, owner, value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield f"{at}.{k}", "<key>", k
                if k not in UNCHECKED:
                    stack.append((v, f"{at}.{k}", k))
        elif isinstance(value, list):
            stack.extend((v, f"{at}[{i}]", owner) for i, v in enumerate(value))


def _bad(text: str, owner: str) -> re.Match[str] | None:
    return (_CONTROL_IN_TEXT if _is_free_text(owner) else _CONTROL).search(text)


def _any_bad(data: Any) -> bool:
    """The fast pass (no paths built: files hold megabytes of numbers, and thousands of dicts
    that repeat the same few keys, each searched once). Only exact number, bool and null
    types are passed over unlooked-at; anything else is looked at as the type it is."""
    clean_keys: set[str] = set()
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        value, owner = stack.pop()
        if isinstance(value, str):
            if _bad(value, owner):
                return True
        elif isinstance(value, dict):
            for k, v in value.items():
                if k not in clean_keys:
                    if _CONTROL.search(k):
                        return True
                    clean_keys.add(k)
                if type(v) not in _SCALARS and k not in UNCHECKED:
                    stack.append((v, k))
        elif isinstance(value, list):
            stack.extend([(v, owner) for v in value if type(v) not in _SCALARS])
    return False


def control_characters(data: Any, path: object) -> None:
    """ResultsError naming the JSON path and the character of the first string that holds a
    control character it may not."""
    if not _any_bad(data):
        return
    for where, owner, text in _strings(data, "$", "$"):
        found = _bad(text, owner) if owner != "<key>" else _CONTROL.search(text)
        if found:
            char = found.group()
            what = ("a key" if owner == "<key>" else "text" if _is_free_text(owner)
                    else "a name")
            shown = _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", where)  # one line
            raise ResultsError(
                f"{path}: {shown}: {what} holds the control character U+{ord(char):04X} at "
                f"position {found.start()}; names are printable text: correct it")


def is_clean_name(text: str) -> bool:
    """True for a name without control characters (for names read outside results files)."""
    return _CONTROL.search(text) is None

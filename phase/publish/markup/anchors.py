"""Stable page names, anchors and links: the same input always gives the same URL.

Generated pages link with plain relative `.html` URLs (the site is built with
use_directory_urls false), so every link also works when the site is opened from file://.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _safe(text: str) -> str:
    clean = _UNSAFE.sub("-", text).strip("-") or "x"
    if clean != text:
        # Two different ids must never share an anchor after cleaning.
        clean += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return clean


def run_anchor(run_id: str) -> str:
    return "run-" + _safe(run_id)


def row_anchor(prompt: str, strategy: str,
               levels: Sequence[tuple[str, object]] = ()) -> str:
    """A summary row: its prompt and strategy, and its extra factors' levels where it has any
    (rows of one prompt and strategy at different levels need ids of their own)."""
    return f"row-{_safe(prompt)}--{_safe(strategy)}" + "".join(
        f"--{_safe(name)}-{_safe(str(level))}" for name, level in levels)


def profile_anchor(point: int, role: str | None = None, tokens: int | None = None) -> str:
    """A cost profile's point (its index in the file), or one pass size of one role there."""
    base = f"profile-{point}"
    return base if role is None else f"{base}-{_safe(role)}-b{tokens}"


def raw_page(stem: str, root: str) -> str:
    """URL of a results file's data page from a page whose way back to the root is `root`."""
    return f"{root}raw/{stem}.html"


def note_page(slug: str, root: str, version: int | None = None) -> str:
    return f"{root}notes/{slug}/" + (f"v{version}/index.html" if version else "index.html")


def runs_anchor(prompt: str, what: str) -> str:
    """A group of a prompt's runs on a data page other than one condition's (every run of a
    strategy over its levels, the runs a proposer stepped in)."""
    return f"runs-{_safe(prompt)}--{_safe(what)}"

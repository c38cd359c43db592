"""Repository files a note links to (the edit prompt's input file, say), published with the page.

A note calls `{{ file_url("experiments/speculative_edit_input.py") }}`; the file is copied next
to the version's page (so a frozen page keeps the bytes it linked to) and the link shows its
sha256. Only files inside the repository, named relative to its root, can be published.
"""

from __future__ import annotations

from pathlib import Path

from phase.publish.notes.source import NoteError
from phase.results import ResultsError
from phase.storage.jsonread import read_regular_bytes
from phase.storage.safepath import PathEscapes, confined

SOURCES_DIR = "sources"
ROOT_GLOBAL = "phase_repo_root"  # set on the Jinja environment by the site build


def source_file(root: object, path: str, where: str) -> tuple[str, bytes]:
    """(file name, bytes) of a repository file; a bad path is the note's error."""
    if not isinstance(root, Path):
        raise NoteError(f"{where}: file_url(): this build has no repository root to read from")
    try:
        source = confined(root, path, f"{where}: file_url()")  # inside the repository
        return source.name, read_regular_bytes(source)
    except (PathEscapes, ResultsError) as exc:
        raise NoteError(f"{where}: file_url({path!r}): {exc}; name a file relative to the "
                        "repository") from None

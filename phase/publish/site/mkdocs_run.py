"""`mkdocs build --strict` through mkdocs' own Python API, with one build's directories."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from phase.base.errors import PhaseError
from phase.publish.notes.source import NoteSource
from phase.publish.pages import PAGE_KINDS
from phase.publish.pages.base import NavItem, PageKind

HAND_WRITTEN = (("About", "about.md"), ("Results format", "results-format.md"),
                ("Sensor snapshots", "snapshots.md"), ("Architecture", "architecture.md"))


def nav(docs_dir: Path, notes: list[NoteSource],
        kinds: Sequence[PageKind] = PAGE_KINDS) -> list[NavItem]:
    """Each page kind's entries in the order of `kinds`, then the hand-written pages there
    are."""
    items = [item for kind in kinds for item in kind.nav(notes)]
    for title, page in HAND_WRITTEN:
        if (docs_dir / page).is_file():
            items.append({title: page})
    return items


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def mkdocs_build(mkdocs_yml: Path, docs_dir: Path, site_dir: Path,
                 notes: list[NoteSource], kinds: Sequence[PageKind] = PAGE_KINDS) -> None:
    """Build `docs_dir` into `site_dir` (both absolute: mkdocs would otherwise resolve them
    against the config file's directory, phase against the working directory)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    from phase.publish.site.mkdocs_islands import IslandsPlugin

    collect = _Collect()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(collect)
    try:
        config = load_config(
            str(mkdocs_yml),
            docs_dir=str(docs_dir.absolute()),
            site_dir=str(site_dir.absolute()),
            strict=True,
            nav=nav(docs_dir, notes, kinds),
        )
        snippets = config["mdx_configs"].setdefault("pymdownx.snippets", {})
        snippets["base_path"] = [str(docs_dir.absolute())]
        config.plugins["phase-islands"] = IslandsPlugin()
        build(config)
    except MkDocsException as exc:
        detail = "; ".join(collect.messages) or str(exc)
        raise PhaseError(f"mkdocs build --strict failed: {detail}") from None
    finally:
        logger.removeHandler(collect)

"""`mkdocs build --strict` through mkdocs' own Python API, with one build's directories."""

from __future__ import annotations

import html
import logging
from pathlib import Path
from typing import Any

from phase.errors import PhaseError
from phase.publish.notes.source import NoteSource
from phase.publish.pages.crosshost import INDEX as HOSTS_INDEX

HAND_WRITTEN = (("About", "about.md"), ("Results format", "results-format.md"),
                ("Architecture", "architecture.md"))


def nav(docs_dir: Path, notes: list[NoteSource]) -> list[Any]:
    # Titles are escaped here because mkdocs' theme templates do not escape nav titles.
    items: list[Any] = [{"Home": "index.md"}]
    # Newest first, as on the home page: by the latest version's date.
    ordered = sorted(notes, key=lambda n: (n.latest.date, n.meta.date, n.slug), reverse=True)
    if notes:
        items.append({"Notes": [{html.escape(n.meta.title): f"notes/{n.slug}/index.md"}
                                for n in ordered]})
    items.append({"Data": "raw/index.md"})
    if (docs_dir / HOSTS_INDEX).is_file():
        items.append({"Across hosts": HOSTS_INDEX})
    if (docs_dir / "bench" / "index.md").is_file():
        items.append({"Benchmarks": "bench/index.md"})
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
                 notes: list[NoteSource]) -> None:
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
            nav=nav(docs_dir, notes),
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

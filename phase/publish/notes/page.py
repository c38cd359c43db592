"""A page and the files it writes next to itself.

`PageAssets` is the one owner of a note page's files (chart PNGs, table downloads, repository
files a note links to) and of drawing a chart into the page. The page's calls (notes/render.py)
and its cost-model calls (notes/cost_section.py) both write through it, so the two never reach
into each other, and a chart is drawn the same way whichever call asked for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import jinja2
from markupsafe import Markup

from phase.publish.charts.spec import Chart, html_safe_json, render_png
from phase.publish.numbers.downloads import TableDownloads, frame_files
from phase.publish.numbers.pagenotes import PageNotes

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Page:
    """One rendered page plus the files it refers to (chart PNGs, table downloads), by path
    under docs_dir."""

    path: str
    text: str
    assets: dict[str, bytes] = field(default_factory=dict)


class PageAssets:
    """The files one page writes into `directory` (under docs_dir), which the page refers to
    as `href` + name: "" from the version's own page, "vN/" from the note's latest page, so
    both pages share one copy of each file."""

    def __init__(self, env: jinja2.Environment, directory: str, href: str) -> None:
        self.env = env
        self.directory = directory
        self.href = href
        self.files: dict[str, bytes] = {}
        # Element ids must be unique within a page, whichever call drew the chart.
        self.charts_drawn = 0
        # What the page's tables have said, so that each thing is said once per page.
        self.notes = PageNotes()

    def add(self, name: str, data: bytes) -> str:
        """Write `name` next to the page; returns how the page links to it."""
        self.files[f"{self.directory}/{name}"] = data
        return f"{self.href}{name}"

    def read(self, name: str) -> bytes:
        """What `add` wrote under `name` (KeyError if nothing was)."""
        return self.files[f"{self.directory}/{name}"]

    def downloads(self, frame: pd.DataFrame, stem: str, label: str) -> TableDownloads:
        """A table's CSV and JSON, written next to the page."""
        files = frame_files(frame, stem, self.href, label)
        for f in files.files:
            self.add(f.name, f.data)
        return files

    def chart(self, chart: Chart, dataset: str) -> str:
        """A chart's HTML: its Vega-Lite spec inline with a PNG fallback drawn next to the
        page, or the sentence saying why it is not drawn."""
        png = None
        if chart.spec is not None:
            png = self.add(f"{chart.kind}-{chart.key}.png", render_png(chart.spec))
        self.charts_drawn += 1
        return self.env.get_template("chart.html.j2").render(
            chart=chart,
            dataset=dataset,
            element_id=f"chart-{self.charts_drawn}-{chart.kind}",
            png=png,
            spec=Markup(html_safe_json(chart.spec)) if chart.spec is not None else None,
        )

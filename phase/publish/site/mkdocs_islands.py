"""The mkdocs side of HTML islands (phase.publish.markup.islands): lift out, put back.

Imported only by mkdocs_run, when a build runs: it needs mkdocs.
"""

from __future__ import annotations

import secrets
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin

from phase.base.escaping import active_markup
from phase.publish.markup.islands import PATTERN

CHARTS_META = "phase_charts"  # page.meta: whether the page draws a chart
CHART_MARK = '<div class="phase-chart"'  # templates/chart.html.j2's outer element


class IslandsPlugin(BasePlugin):
    def __init__(self) -> None:
        super().__init__()
        # A placeholder no page can hold by chance: data is HTML-escaped, so "<!--" never
        # comes from it, and the token is new for every build.
        self.token = secrets.token_hex(8)
        self.lifted: dict[str, list[str]] = {}

    def _placeholder(self, index: int) -> str:
        return f"<!--phase:island:{self.token}:{index}-->"

    def on_page_markdown(self, markdown: str, /, *, page: Any, config: Any,
                         files: Any) -> str:
        found: list[str] = []

        def lift(match: Any) -> str:
            found.append(match.group(1))
            return self._placeholder(len(found) - 1)

        text = PATTERN.sub(lift, markdown)
        self.lifted[page.file.src_uri] = found
        # overrides/main.html adds the charts' scripts only where this is set: the page's
        # charts are islands, so its rendered content holds placeholders where they go.
        page.meta[CHARTS_META] = any(CHART_MARK in html for html in found)
        return text

    def on_post_page(self, output: str, /, *, page: Any, config: Any) -> str:
        found = self.lifted.pop(page.file.src_uri, [])
        parts: list[str] = []
        rest = output
        for index, html in enumerate(found):
            before, sep, rest = rest.partition(self._placeholder(index))
            if not sep:
                raise PluginError(f"{page.file.src_uri}: HTML block {index + 1} of "
                                  f"{len(found)} was lost by Markdown (phase's island "
                                  "markers inside another block?)")
            parts += [before, html]
        parts.append(rest)
        html = "".join(parts)
        # Denied in the output, whatever produced it (data escaping is the first line; an
        # author's raw HTML, a theme or an extension is this one's).
        found = active_markup(html)
        if found:
            raise PluginError(f"{page.file.src_uri}: the page would hold an event handler or "
                              f"a script URL ({found[0]}); phase never publishes one")
        return html

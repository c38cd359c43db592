"""HTML islands: big HTML blocks kept out of Markdown's way, put back verbatim by mkdocs.

Python-Markdown copies a raw HTML block to its output unchanged, but first parses it to find
where it ends; mkdocs parses it again for anchor ids and the search plugin a third time for
the index. On a page with a results table of hundreds of cells that parsing was most of the
page's build time. phase writes such blocks between two comment markers; during
`phase site`, the plugin in `phase.publish.site.mkdocs_islands` lifts each out before Markdown
runs and puts it back, byte for byte, into the finished page. The table cells stay out of
the search index (headings and prose stay in). Without the plugin (a plain `mkdocs build`)
the markers are HTML comments and the page renders the same.
"""

from __future__ import annotations

import re

from markupsafe import Markup

OPEN = "<!--phase:island-->"
CLOSE = "<!--/phase:island-->"
# Only at the start of a line: a block Markdown sees at the top level, never one indented
# inside a list or an admonition (that one is left to Markdown).
PATTERN = re.compile(rf"^{re.escape(OPEN)}\n(.*?)\n{re.escape(CLOSE)}$", re.MULTILINE | re.DOTALL)


def island(html: str) -> Markup:
    """An HTML block Markdown leaves alone: blank lines around it, none inside it, marked
    as an island."""
    lines = [line for line in str(html).splitlines() if line.strip()]
    if not lines:
        return Markup("\n")
    return Markup("\n\n" + OPEN + "\n" + "\n".join(lines) + "\n" + CLOSE + "\n\n")

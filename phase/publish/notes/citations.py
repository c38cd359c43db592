"""A note that cites another note (`note_url("slug")` in its text) states how the campaigns
behind the two differ: builds, hosts and models, as their results files record them
(phase.publish.numbers.builds). A cited note whose figures come from a summary without a
build record is said to be not comparable field by field.

The build puts every note's latest campaigns on the Jinja environment (`NOTES_GLOBAL`), so a
note's page can read the note it cites without the page kinds knowing of each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import jinja2
from markupsafe import Markup

from phase.publish.data.datasets import Dataset
from phase.publish.markup.islands import island
from phase.publish.numbers.builds import PairDifferences, Side, compare_sides

NOTES_GLOBAL = "phase_note_campaigns"  # slug -> (title, latest version's results files)
THIS = "this note"


def cited_pairs(own: Sequence[Dataset], cited: Sequence[str],
                notes: Mapping[str, tuple[str, Sequence[Dataset]]]
                ) -> tuple[list[PairDifferences], list[str]]:
    """Each of this version's raw campaigns against each raw campaign of every cited note's
    latest version, where they differ; and the titles of cited notes with no build record."""
    pairs: list[PairDifferences] = []
    unrecorded: list[str] = []
    mine = [d for d in own if d.raw_header is not None]
    for slug in dict.fromkeys(cited):
        if slug not in notes:
            continue
        title, theirs = notes[slug]
        raw = [d for d in theirs if d.raw_header is not None]
        if mine and theirs and not raw:
            unrecorded.append(title)
        for a in mine:
            for b in raw:
                if a.path != b.path:
                    pairs += compare_sides([Side(THIS, a), Side(title, b)])
    return pairs, unrecorded


def cited_section(env: jinja2.Environment, own: Sequence[Dataset], cited: Sequence[str]) -> Markup:
    """The "Compared with other notes" section, or nothing where no cited note differs."""
    # The site build puts every note's datasets there (phase.publish.site.docs).
    notes = cast("Mapping[str, tuple[str, Sequence[Dataset]]]", env.globals.get(NOTES_GLOBAL, {}))
    pairs, unrecorded = cited_pairs(own, cited, notes)
    if not pairs and not unrecorded:
        return Markup("")
    html = env.get_template("build_differences.html.j2").render(
        pairs=pairs, unrecorded=unrecorded,
        intro="this note's campaigns and those of the notes it cites")
    return Markup("\n\n## Compared with other notes\n\n") + island(html)

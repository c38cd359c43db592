"""Say each thing once per page.

A page holds several tables (one per results file, the cost model's, the temperature table)
whose notes often say the same thing, and a missing figure's reason (a ~700-character account
of why no sensor measures the CPU) used to ride in the title of every empty cell. `PageNotes`
is one page's record of what it has said: a table's note line already on the page is not
repeated, and a long reason is written once as a numbered note that cells link to.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# A reason at least this long is a numbered note, not a cell's title: a title repeats in
# every cell it explains, and a short one ("plain decoding drafts nothing") costs less
# than a link.
LONG_REASON = 100


@dataclass(frozen=True)
class TableNote:
    """One line under a table: its text, and its number where cells or later tables refer
    to it (rendered as the element id `anchor`)."""

    text: str
    number: int | None = None

    @property
    def anchor(self) -> str | None:
        return None if self.number is None else note_anchor(self.number)


def note_anchor(number: int) -> str:
    return f"phase-note-{number}"


class PageNotes:
    """What one page has said under its tables, and the numbered notes its cells cite."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self._placed: set[str] = set()

    def cite(self, text: str) -> int:
        """The number of the note that says `text` (written under the next table that is
        rendered, unless it already was)."""
        return self._numbers.setdefault(text, len(self._numbers) + 1)

    def once(self, lines: Iterable[str]) -> list[TableNote]:
        """The notes under a table: the cited notes not yet written, then its own lines
        that this page has not said yet."""
        out = [TableNote(text, number) for text, number in self._numbers.items()
               if text not in self._placed]
        self._placed.update(n.text for n in out)
        for line in lines:
            if line in self._placed:
                continue
            self._placed.add(line)
            out.append(TableNote(line, self._numbers.get(line)))
        return out


def all_notes(lines: Iterable[str]) -> list[TableNote]:
    """A table's notes where no page record is kept (each line as it is)."""
    return [TableNote(line) for line in lines]

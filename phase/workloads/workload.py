"""What a workload is: named prompts with where they came from and the sha256 that pins them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from phase.base.errors import PhaseError, UsageProblem

# A prompt's id becomes a prompt name: in run ids, page anchors, table cells and file names.
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
ID_ALLOWED = "1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
# What a results file refuses in free text (phase.results.names): control characters other
# than tab, newline and carriage return. Refused here, before a campaign records the prompt.
CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


class WorkloadError(UsageProblem):
    """A workload that cannot be used as given: bad input, exit 2."""


class WorkloadFetchError(PhaseError):
    """An embedded workload that could not be fetched or did not verify: exit 1."""


@dataclass(frozen=True)
class WorkloadPrompt:
    id: str
    text: str
    category: str | None = None


@dataclass(frozen=True)
class Workload:
    """A named prompt set. `source` says where it came from (a PyPI wheel and its member, a
    file in this checkout, or a user's path); `sha256` is of the file the prompts were read
    from, so two campaigns on the same sha256 ran the same prompts."""

    name: str
    source: str
    sha256: str
    prompts: tuple[WorkloadPrompt, ...]
    path: str | None = None
    licence: str | None = None

    @property
    def count(self) -> int:
        return len(self.prompts)

    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.prompts)

    def select(self, ids: tuple[str, ...]) -> tuple[WorkloadPrompt, ...]:
        """The prompts with these ids, in the order given; an unknown id is bad input."""
        by_id = {p.id: p for p in self.prompts}
        unknown = [i for i in ids if i not in by_id]
        if unknown:
            shown = ", ".join(self.ids()[:5]) + (", ..." if self.count > 5 else "")
            raise WorkloadError(f"workload {self.name}: unknown prompt id(s) "
                                f"{', '.join(unknown)}; its ids are {shown}")
        return tuple(by_id[i] for i in ids)

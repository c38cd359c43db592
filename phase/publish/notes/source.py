"""Note sources: `phase/notes/<yyyy-mm>-<slug>.md` = YAML front matter + Markdown with Jinja.

Front matter (all checked; an error names the file and the field):

    title: ...                    # the note's title
    date: 2026-10                 # first publication (yyyy-mm or yyyy-mm-dd)
    finding: ...                  # one line for the home page
    reproduce: |                  # the command(s) that reproduce the study
      make measure && make site
    versions:                     # 1, 2, ... in order; each frozen once published
      - version: 1
        date: 2026-10
        results: [summary-x.json] # names relative to the results directory; globs allowed
        changes: First publication.
        draft: false              # a draft version's page says its inputs may still move
    errata:                       # corrections shown on the latest page and the home page
      - {date: 2026-11, version: 1, text: ...}
    source_provenance:            # optional label -> text, for transcribed (summary-only)
      Software: ...               # sources whose files carry no provenance of their own

A glob in `results` picks up whatever matching files exist at build time (sorted by name),
so a version listing a glob is only frozen once its list is pinned to explicit names.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from phase.base.errors import PhaseError
from phase.results import ResultsError
from phase.storage.jsonread import read_regular_text

FILE_NAME = re.compile(r"^(?P<ym>\d{4}-\d{2})-(?P<slug>[a-z0-9][a-z0-9-]*)\.md$")
DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
GLOB_CHARS = set("*?[")


class NoteError(PhaseError):
    """A note source is malformed; the message names the file and the field."""


def _date_text(value: Any) -> Any:
    # YAML reads 2026-10-15 as a date; keep every date as the text the author wrote.
    if isinstance(value, dt.date):
        return value.isoformat()
    return value if isinstance(value, str) else str(value)


def _check_date(value: str) -> str:
    if not DATE.match(value):
        raise ValueError(f"{value!r} is not a yyyy-mm or yyyy-mm-dd date")
    return value


DateText = Annotated[str, BeforeValidator(_date_text)]


class _Meta(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VersionMeta(_Meta):
    version: int = Field(ge=1)
    date: DateText
    results: list[str]
    changes: str | None = None
    draft: bool = False

    @model_validator(mode="after")
    def _check(self) -> VersionMeta:
        _check_date(self.date)
        for entry in self.results:
            if Path(entry).is_absolute() or ".." in Path(entry).parts:
                raise ValueError(f"results entry {entry!r} must be relative to the results dir")
        return self

    @property
    def globs(self) -> bool:
        return any(GLOB_CHARS & set(entry) for entry in self.results)


class ErratumMeta(_Meta):
    date: DateText
    version: int = Field(ge=1)
    text: str


class FrontMatter(_Meta):
    title: str = Field(min_length=1)
    date: DateText
    finding: str = Field(min_length=1)
    reproduce: str = Field(min_length=1)
    versions: list[VersionMeta] = Field(min_length=1)
    errata: list[ErratumMeta] = Field(default_factory=list)
    source_provenance: dict[str, str] = Field(default_factory=dict)
    # The campaigns this note cites may stand beside others on a cross-host table though
    # their builds differ, where those are allowed too (phase.publish.pages.builds); the
    # page then states every difference.
    mixed_builds: bool = False

    @model_validator(mode="after")
    def _check(self) -> FrontMatter:
        _check_date(self.date)
        numbers = [v.version for v in self.versions]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"versions must be numbered 1, 2, ... in order, not {numbers}")
        for e in self.errata:
            if e.version > len(numbers):
                raise ValueError(f"an erratum names version {e.version}, which does not exist")
        return self


@dataclass(frozen=True)
class NoteSource:
    path: Path
    slug: str
    meta: FrontMatter
    body: str  # Markdown with Jinja calls, rendered once per version
    # A note generated from campaigns (phase.publish.notes.generated) rather than written by hand:
    kind: Literal["authored", "generated"] = "authored"
    # its finding per version (computed from that version's data), when not one for all;
    findings: tuple[str, ...] | None = None
    # extra names its body can use, per version number;
    context: Callable[[int], dict[str, Any]] | None = None
    # versions whose campaign is incomplete (drafts: never frozen, not compared);
    incomplete: frozenset[int] = frozenset()
    # a preview (quick campaigns): no version of it is ever frozen.
    preview: bool = False
    # What the archive records as its source file (default: the note file's name).
    source_file: str | None = None

    def finding_of(self, number: int) -> str:
        return self.meta.finding if self.findings is None else self.findings[number - 1]

    def freezable(self, number: int) -> bool:
        """Whether version `number` is published (frozen) once it has been built."""
        version = self.meta.versions[number - 1]
        return not (self.preview or version.draft or number in self.incomplete)

    @property
    def latest(self) -> VersionMeta:
        return self.meta.versions[-1]


def split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise NoteError(f"{path}: a note starts with front matter between '---' lines")
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            try:
                data = yaml.safe_load("".join(lines[1:i])) or {}
            except yaml.YAMLError as exc:
                raise NoteError(f"{path}: front matter is not valid YAML: {exc}") from None
            if not isinstance(data, dict):
                raise NoteError(f"{path}: front matter must be a mapping")
            return data, "".join(lines[i + 1 :])
    raise NoteError(f"{path}: front matter is not closed by a '---' line")


def parse_note(path: Path) -> NoteSource:
    match = FILE_NAME.match(path.name)
    if not match:
        raise NoteError(f"{path}: a note file is named <yyyy-mm>-<slug>.md (lowercase slug)")
    try:
        text = read_regular_text(path)  # a FIFO named *.md is refused, never waited on
    except ResultsError as exc:
        raise NoteError(str(exc)) from None
    data, body = split_front_matter(text, path)
    try:
        meta = FrontMatter.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "front matter"
        raise NoteError(f"{path}: {where}: {first['msg']}") from None
    if not meta.date.startswith(match["ym"]):
        raise NoteError(
            f"{path}: date {meta.date} does not match the file name's month {match['ym']}"
        )
    return NoteSource(path=path, slug=match["slug"], meta=meta, body=body)


def discover_notes(notes_dir: Path) -> list[NoteSource]:
    """Every note source, newest first; two notes may not share a slug."""
    notes = [parse_note(p) for p in sorted(notes_dir.glob("*.md"))]
    seen: dict[str, Path] = {}
    for n in notes:
        if n.slug in seen:
            raise NoteError(f"{n.path}: slug {n.slug!r} is already used by {seen[n.slug]}")
        seen[n.slug] = n.path
    return sorted(notes, key=lambda n: (n.meta.date, n.slug), reverse=True)


def resolve_results(note: NoteSource, version: VersionMeta, results_dir: Path) -> list[Path]:
    """The files a version lists, in the order listed (a glob's matches sorted by name)."""
    out: list[Path] = []
    for entry in version.results:
        if GLOB_CHARS & set(entry):
            matches = sorted(p for p in results_dir.glob(entry) if p.is_file())
        else:
            path = results_dir / entry
            if not path.is_file():
                raise NoteError(
                    f"{note.path}: version {version.version} lists results file {entry}, "
                    f"which is not in {results_dir}"
                )
            matches = [path]
        out.extend(p for p in matches if p not in out)
    return out

"""New versions of generated notes from campaigns they already published.

A generated note gets a version per campaign. When what phase says about a campaign changes
(corrected statistics, a title computed by the experiment's rule), the published version
stays as it was, frozen, and the correction is a new version of the same campaign, declared
in `phase/notes/revisions.yaml` with what changed and why, and errata on the earlier
versions:

    memory-bound-x86-64-2c:            # the note's slug
      versions:
        - version: 2                   # the version it becomes: the next after those published
          results: memory_bound-x86_64-2c-2026-12-03.json
          date: 2026-12-05
          changes: what this version corrects, and why
      errata:
        - {date: 2026-12-05, version: 1, text: what was wrong in version 1}

A revision already published must still name the campaign its archived version shows; one
that would leave a gap in the numbering, or names a campaign the note does not have, stops
the build naming the file, the slug and the field.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from phase.publish.notes.source import ErratumMeta, NoteError, VersionMeta
from phase.storage.jsonread import read_regular_text

FILE_NAME = "revisions.yaml"


class Revision(VersionMeta):
    """A version re-issuing one campaign: exactly one results file, and what changed."""

    changes: str = Field(min_length=1)


class NoteRevisions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    versions: list[Revision] = Field(default_factory=list)
    errata: list[ErratumMeta] = Field(default_factory=list)


Revisions = dict[str, NoteRevisions]


def load_revisions(notes_dir: Path) -> Revisions:
    """The declared revisions by note slug; none where the file does not exist."""
    path = notes_dir / FILE_NAME
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(read_regular_text(path)) or {}
    except yaml.YAMLError as exc:
        raise NoteError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise NoteError(f"{path}: a mapping of note slugs to their revisions")
    out: Revisions = {}
    for slug, entry in data.items():
        try:
            out[str(slug)] = NoteRevisions.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise NoteError(f"{path}: {slug}.{where}: {first['msg']}") from None
        for rev in out[str(slug)].versions:
            if len(rev.results) != 1:
                raise NoteError(f"{path}: {slug}: version {rev.version} re-issues one campaign; "
                                f"it names {len(rev.results)}")
    return out

"""The published archive: `published/<slug>/v<N>/`, each version of a note frozen for good.

Publishing a version (the first `phase site` that sees it, or `phase publish NOTE`) writes

    published/<slug>/v<N>/manifest.json   what was frozen: the sha256 of every input (results
                                          files, note source, every template, the rule
                                          settings, phase's own code) and of every file below
    published/<slug>/v<N>/index.md        the version's page (served as notes/<slug>/vN/index.md)
    published/<slug>/v<N>/latest.md       the same version as the note's latest page, without
                                          the versions list and errata (the build adds those)
    published/<slug>/v<N>/assets/*        files the pages refer to (chart PNGs), served next to
                                          index.md

Later builds serve these bytes as they are. Nothing here ever rewrites a version: a new one is
written into a staging directory and renamed into place, and an existing one is refused. Before
serving a version the build checks every archived file against the manifest and every results
file the version cites against its recorded sha256; any difference refuses the build (exit 1).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from phase import REPO_ROOT, __version__
from phase.base.errors import PhaseError
from phase.results import ResultsError
from phase.storage.jsonread import read_json
from phase.storage.outputs import place_dir, staging_dir
from phase.storage.safepath import FILE_NAME_PATTERN, REL_PATH_PATTERN, confined

FORMAT: Final = 1
MANIFEST = "manifest.json"
PAGE = "index.md"
LATEST = "latest.md"
ASSETS = "assets"
_VERSION_DIR = re.compile(r"^v([1-9][0-9]*)$")
# A chart, a table download, or (under sources/) a repository file the note links to.
_ASSET_NAME = re.compile(r"^(sources/)?[A-Za-z0-9][A-Za-z0-9._-]*$")


class ArchiveError(PhaseError):
    """The archive and the inputs disagree; the build is refused (exit 1)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Every name and path a manifest holds is checked on read: a manifest is data, and an entry
# like `assets/../../x` with a correct sha256 would otherwise be read and served from outside
# the version's directory (phase.storage.safepath).
_SHA256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
_SLUG = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=200)]
_FILE_NAME = Annotated[str, Field(pattern=FILE_NAME_PATTERN, max_length=255)]
_REL_PATH = Annotated[str, Field(pattern=REL_PATH_PATTERN, max_length=1000)]
_FILE_KEY = Annotated[str, Field(
    pattern=r"^(index\.md|latest\.md|assets/(sources/)?[A-Za-z0-9][A-Za-z0-9._-]*)$")]


class ArchivedResults(_Model):
    name: _FILE_NAME
    sha256: _SHA256
    size_bytes: int = Field(ge=0)


class ArchivedSource(_Model):
    kind: Literal["authored", "generated"]
    file: _REL_PATH  # a note source's file name, or the experiment template under templates/
    sha256: _SHA256


class Manifest(_Model):
    format: Literal[1] = FORMAT
    note: _SLUG
    version: int = Field(ge=1)
    title: str
    date: str
    frozen_at: str
    phase_version: str
    source: ArchivedSource
    results: list[ArchivedResults]
    templates: dict[_REL_PATH, _SHA256]
    rule_settings: dict[str, Any]
    rule_settings_sha256: _SHA256
    code_sha256: _SHA256
    files: dict[_FILE_KEY, _SHA256]


@dataclass(frozen=True)
class FrozenVersion:
    manifest: Manifest
    page: bytes
    latest: bytes
    assets: dict[str, bytes]  # file name -> bytes, served next to the version's page


def tree_digest(root: Path, pattern: str) -> dict[str, str]:
    """sha256 of every file under `root` matching `pattern`, by path relative to `root`."""
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): sha256_bytes(p.read_bytes())
        for p in sorted(root.rglob(pattern))
        if p.is_file() and "__pycache__" not in p.parts
    }


def code_digest() -> str:
    """One sha256 over phase's own Python source: the code that rendered a page is an input."""
    files = tree_digest(REPO_ROOT / "phase", "*.py")
    return sha256_bytes(json.dumps(files, sort_keys=True).encode())


def settings_digest(settings: dict[str, Any]) -> str:
    return sha256_bytes(json.dumps(settings, sort_keys=True).encode())


def make_manifest(
    *,
    note: str,
    version: int,
    title: str,
    date: str,
    source: ArchivedSource,
    results: list[ArchivedResults],
    templates_dir: Path,
    rule_settings: dict[str, Any],
    page: bytes,
    latest: bytes,
    assets: dict[str, bytes],
) -> FrozenVersion:
    for name in assets:
        if not _ASSET_NAME.match(name):
            raise ArchiveError(f"note {note} v{version}: asset name {name!r} cannot be archived")
    files = {PAGE: sha256_bytes(page), LATEST: sha256_bytes(latest)}
    files.update({f"{ASSETS}/{n}": sha256_bytes(data) for n, data in sorted(assets.items())})
    manifest = Manifest(
        note=note,
        version=version,
        title=title,
        date=date,
        frozen_at=datetime.now(UTC).replace(microsecond=0).isoformat(),
        phase_version=__version__,
        source=source,
        results=results,
        templates=tree_digest(templates_dir, "*"),
        rule_settings=rule_settings,
        rule_settings_sha256=settings_digest(rule_settings),
        code_sha256=code_digest(),
        files=files,
    )
    return FrozenVersion(manifest, page, latest, dict(assets))


class Archive:
    """The archive directory (`published/`): read and verify versions, add new ones."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def slugs(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and self.versions(p.name))

    def versions(self, slug: str) -> list[int]:
        """Archived version numbers of a note, ascending."""
        note_dir = self.root / slug
        if not note_dir.is_dir():
            return []
        found = (_VERSION_DIR.match(p.name) for p in note_dir.iterdir() if p.is_dir())
        return sorted(int(m[1]) for m in found if m)

    def version_dir(self, slug: str, number: int) -> Path:
        return self.root / slug / f"v{number}"

    def manifest(self, slug: str, number: int) -> Manifest:
        path = self.version_dir(slug, number) / MANIFEST
        try:
            return Manifest.model_validate(read_json(path), strict=True)
        except ResultsError as exc:
            raise ArchiveError(f"{exc} (an archived manifest; restore it, e.g. "
                               "`git checkout -- published/`)") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "manifest"
            raise ArchiveError(f"{path}: {where}: {first['msg']} (an archived manifest is "
                               "never edited: restore it, e.g. `git checkout -- published/`)"
                               ) from None

    def load(self, slug: str, number: int) -> FrozenVersion:
        """A version as archived, every file checked against the manifest's sha256."""
        manifest = self.manifest(slug, number)
        base = confined(self.root, f"{slug}/v{number}", f"{self.root}: archived version")
        if (manifest.note, manifest.version) != (slug, number):
            raise ArchiveError(f"{base / MANIFEST}: names note {manifest.note} "
                               f"v{manifest.version}, not {slug} v{number}")
        data: dict[str, bytes] = {}
        for rel, digest in manifest.files.items():
            path = confined(base, rel, f"{base / MANIFEST}: files")  # checked again: links
            try:
                data[rel] = path.read_bytes()
            except OSError:
                raise ArchiveError(f"{path} is missing from the archive; restore it (e.g. "
                                   "`git checkout -- published/`)") from None
            if sha256_bytes(data[rel]) != digest:
                raise ArchiveError(f"{path} was changed after it was published (sha256 differs "
                                   "from its manifest); restore it: a published version is "
                                   "corrected by errata, never edited")
        assets = {rel.removeprefix(f"{ASSETS}/"): b for rel, b in data.items()
                  if rel.startswith(f"{ASSETS}/")}
        return FrozenVersion(manifest, data[PAGE], data[LATEST], assets)

    def write(self, frozen: FrozenVersion) -> Path:
        """Add a new version: written aside, then renamed into place; never over an old one."""
        m = frozen.manifest
        target = self.version_dir(m.note, m.version)
        if target.exists():
            raise ArchiveError(f"{target} already exists; a published version is never "
                               "rewritten")
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = staging_dir(target.parent, f"v{m.version}-")
        try:
            (staging / ASSETS).mkdir()
            (staging / PAGE).write_bytes(frozen.page)
            (staging / LATEST).write_bytes(frozen.latest)
            for name, data in frozen.assets.items():
                (staging / ASSETS / name).parent.mkdir(exist_ok=True)
                (staging / ASSETS / name).write_bytes(data)
            text = json.dumps(m.model_dump(mode="json"), indent=1, sort_keys=True) + "\n"
            (staging / MANIFEST).write_text(text, encoding="utf-8")
            place_dir(staging, target, "a published version")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return target

"""Every directory a build reads or writes, resolved against one base (the working directory).

Relative paths given on the command line mean the same for phase and for mkdocs: each is made
absolute here, against the working directory, before anything reads or writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from phase import REPO_ROOT
from phase.publish.pages import PAGE_KINDS
from phase.publish.pages.base import PageKind
from phase.publish.site.outdirs import OutputDirError, check_apart, check_owned

VENDOR_DIR = "assets/vendor"  # the Vega JS that every chart needs, written by the build itself
QUICK_SUBDIR = "quick"


def generated_dirs(kinds: Sequence[PageKind]) -> tuple[str, ...]:
    """Paths under a docs dir that the build owns when that docs dir is the hand-written one:
    every page kind's directories (each once), then the vendored JS."""
    return (*dict.fromkeys(d for kind in kinds for d in kind.dirs), VENDOR_DIR)


GENERATED = generated_dirs(PAGE_KINDS)


def absolute(path: Path | str) -> Path:
    """A path made absolute against the working directory (symlinks are kept, so that an
    output given as a link can be refused rather than followed)."""
    return Path(path).expanduser().absolute()


@dataclass(frozen=True)
class SitePaths:
    root: Path
    notes_dir: Path
    templates_dir: Path
    results_dir: Path
    docs_src: Path  # hand-written pages (the repository's docs/)
    docs_dir: Path  # what mkdocs reads: hand-written + generated
    site_dir: Path
    mkdocs_yml: Path
    published_dir: Path  # the archive of published note versions (committed)
    bench_dir: Path  # benchmark results (`make bench`), published as the Benchmarks page
    # What the build owns under a hand-written docs dir: the dirs of the page kinds it renders.
    generated: tuple[str, ...] = GENERATED
    # Whether versions built from a results dir other than the project's own may be frozen
    # into the project's own archive (`--into-project-archive`): never by default.
    archive_foreign: bool = False
    # Whether a cross-host table may put campaigns on different builds side by side
    # (`--allow-mixed-builds`; a note's `mixed_builds` front matter allows its own files).
    allow_mixed_builds: bool = False

    @classmethod
    def default(cls, root: Path = REPO_ROOT, **overrides: Path | str | None) -> SitePaths:
        """The repository's layout; any path given (not None) replaces the default. Relative
        paths are taken from the working directory."""
        paths = cls(
            root=root,
            notes_dir=root / "phase" / "notes",
            templates_dir=root / "templates",
            results_dir=root / "results",
            docs_src=root / "docs",
            docs_dir=root / "docs",
            site_dir=root / "site",
            mkdocs_yml=root / "mkdocs.yml",
            published_dir=root / "published",
            bench_dir=root / "bench" / "results",
        )
        given: dict[str, Any] = {k: absolute(v) for k, v in overrides.items() if v is not None}
        return replace(paths, **given)

    @property
    def docs_is_source(self) -> bool:
        """Whether generated pages go next to the hand-written ones (the repository layout):
        then the build owns only `generated` under it, otherwise the whole docs dir."""
        return self.docs_dir.resolve() == self.docs_src.resolve()

    @property
    def quick_dir(self) -> Path:
        return self.results_dir / QUICK_SUBDIR

    @property
    def foreign_into_project_archive(self) -> bool:
        """Whether freezing would put versions built from some other results dir into the
        project's own published/, which only the project's results/ feeds unless told."""
        return (self.published_dir.resolve() == (self.root / "published").resolve()
                and self.results_dir.resolve() != (self.root / "results").resolve()
                and not self.archive_foreign)

    def docs_targets(self) -> list[Path]:
        """The directories a build replaces under (or as) the docs dir."""
        if self.docs_is_source:
            return [self.docs_dir / g for g in self.generated]
        return [self.docs_dir]

    def check_archive(self) -> None:
        """The archive is written (new versions only): never inside or around another input."""
        check_apart({"published archive": self.published_dir},
                    {"results dir": self.results_dir, "notes dir": self.notes_dir,
                     "templates dir": self.templates_dir})
        if self.published_dir.is_symlink():
            raise OutputDirError(f"published archive {self.published_dir} is a symbolic link; "
                                 "give the directory itself (nothing was touched)")

    def check_outputs(self, *, site: bool) -> None:
        """Refuse (exit 2, before anything is written) outputs phase may not replace: one that
        overlaps an input or another output, or that holds anything phase did not make."""
        self.check_archive()
        inputs = {"results dir": self.results_dir, "notes dir": self.notes_dir,
                  "templates dir": self.templates_dir, "published archive": self.published_dir}
        site_out = {"--site-dir": self.site_dir} if site else {}
        if self.docs_is_source:
            # The hand-written docs dir is an input holding the generated parts.
            check_apart({"--docs-dir": self.docs_dir}, inputs)
            check_apart(site_out, inputs | {"docs dir": self.docs_dir})
        else:
            check_apart({"--docs-dir": self.docs_dir, **site_out},
                        inputs | {"hand-written docs": self.docs_src})
        for target in self.docs_targets():
            check_owned(target, "--docs-dir" if target == self.docs_dir else "generated dir")
        if site:
            check_owned(self.site_dir, "--site-dir")
        for label, target in {"--docs-dir": self.docs_dir, **site_out}.items():
            _check_parent(target, label)


def _check_parent(target: Path, label: str) -> None:
    # Staging goes next to the target, so its nearest existing ancestor must be a directory.
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputDirError(f"{label} {target}: {parent} is not a directory (nothing was "
                             "touched)")

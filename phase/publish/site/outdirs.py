"""Output directories the build owns: phase deletes only what it created.

Every directory a build writes as a whole (`site/`, the generated parts of `docs/`, or a whole
`--docs-dir` other than the hand-written `docs/`) carries a marker file, `.phase-generated`.
Before a build touches anything it checks each output directory: absent, empty, or marked is
fine; anything else (a non-empty directory without the marker, a symbolic link, a plain file)
is refused as bad input (exit 2) and nothing is touched. An output directory may not overlap an
input (results, note sources, templates, hand-written pages, the published archive) nor another
output, so `--site-dir results` or `--docs-dir phase` can never delete what they point at.

A build writes into staging directories next to its targets (`.phase-tmp-*`, on the same file
system) and swaps them in only once everything succeeded: a failed build leaves the previous
`docs/` and `site/` as they were.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from phase.base.errors import UsageProblem
from phase.storage.outputs import STAGING_PREFIX as STAGING_PREFIX
from phase.storage.outputs import place_dir, staging_dir

MARKER = ".phase-generated"
MARKER_TEXT = (
    "This directory was made by phase (`phase site` / `phase build`): every build deletes and\n"
    "rewrites it. Keep nothing else here.\n"
)


class OutputDirError(UsageProblem):
    """An output directory phase may not write: refused before anything is touched (exit 2)."""


def is_marked(directory: Path) -> bool:
    marker = directory / MARKER
    return marker.is_file() and not marker.is_symlink()


def mark(directory: Path) -> None:
    (directory / MARKER).write_text(MARKER_TEXT, encoding="utf-8")


def check_owned(target: Path, label: str) -> None:
    """Refuse `target` unless phase may replace it: absent, an empty directory, or marked."""
    if target.is_symlink():
        raise OutputDirError(f"{label} {target} is a symbolic link; give the directory itself "
                             "(nothing was touched)")
    if not target.exists():
        return
    if not target.is_dir():
        raise OutputDirError(f"{label} {target} exists and is not a directory (nothing was "
                             "touched)")
    if is_marked(target) or not any(target.iterdir()):
        return
    raise OutputDirError(
        f"{label} {target} is not empty and was not made by phase (no {MARKER} in it); "
        "nothing was touched: give a new or empty directory (an old phase build: remove it, "
        "e.g. `make clean`)"
    )


def _overlap(a: Path, b: Path) -> bool:
    ra, rb = a.resolve(), b.resolve()
    return ra == rb or ra.is_relative_to(rb) or rb.is_relative_to(ra)


def check_apart(outputs: dict[str, Path], inputs: dict[str, Path]) -> None:
    """No output may overlap an input (be it, sit inside it, or hold it) or another output."""
    for label, out in outputs.items():
        for name, src in inputs.items():
            if _overlap(out, src):
                raise OutputDirError(f"{label} {out} overlaps the {name} {src}; phase never "
                                     "writes into its inputs (nothing was touched)")
    items = list(outputs.items())
    for i, (label, out) in enumerate(items):
        for other, path in items[i + 1:]:
            if _overlap(out, path):
                raise OutputDirError(f"{label} {out} overlaps {other} {path}; give separate "
                                     "directories (nothing was touched)")


@dataclass
class Staging:
    """Staging directories for a build's outputs; `commit()` swaps them in, the context
    manager removes whatever was not committed (all of it on failure)."""

    pairs: list[tuple[Path, Path]] = field(default_factory=list)  # (staged, target)
    roots: list[Path] = field(default_factory=list)

    def stage(self, target: Path) -> Path:
        """A fresh directory to build `target` in, on the same file system as `target`."""
        target.parent.mkdir(parents=True, exist_ok=True)
        root = staging_dir(target.parent)
        self.roots.append(root)
        staged = root / "new"
        staged.mkdir()
        self.pairs.append((staged, target))
        return staged

    def scratch(self, near: Path) -> Path:
        """A fresh directory next to `near` that is removed, never swapped in."""
        near.mkdir(parents=True, exist_ok=True)
        root = staging_dir(near)
        self.roots.append(root)
        return root

    def commit(self) -> None:
        """Swap every staged directory in (marking it), then remove the old ones."""
        for staged, target in self.pairs:
            mark(staged)
            # Checked again at the last moment: the directory may have changed since.
            check_owned(target, "output directory")
            old = staged.parent / "old"
            if target.exists():
                os.rename(target, old)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                place_dir(staged, target, "an output directory")
            except BaseException:
                if old.exists() and not target.exists():
                    os.rename(old, target)  # the previous build stays where it was
                raise
        self.pairs = []
        self.cleanup()

    def cleanup(self) -> None:
        for root in self.roots:
            shutil.rmtree(root, ignore_errors=True)
        self.roots = []


@contextmanager
def staging() -> Iterator[Staging]:
    s = Staging()
    try:
        yield s
    finally:
        s.cleanup()

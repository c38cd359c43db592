"""Where a campaign writes: a new results file (never overwritten, numbered when its default
name is taken) or an interrupted one to continue."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from phase.campaign import machine


@dataclass(frozen=True)
class Destination:
    """The results file: a new one (never overwritten), or an interrupted one to continue.
    `numbered`: `path` is a default name; when it is taken, the first free of path-2.json,
    path-3.json... is claimed instead (atomically: two campaigns never pick the same one)."""

    path: Path
    resume: bool = False
    numbered: bool = False


def default_output(experiment: str, *, quick: bool = False,
                   results_dir: Path = Path("results")) -> Path:
    """results/<experiment>-<host class>-<date>.json: the base of a numbered Destination
    (-2, -3... when taken). A quick smoke campaign is not a study: it goes under
    results/quick/, which the site does not publish (the directory is created)."""
    directory = results_dir / "quick" if quick else results_dir
    directory.mkdir(parents=True, exist_ok=True)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    return directory / f"{experiment}-{machine.host_class()}-{day}.json"

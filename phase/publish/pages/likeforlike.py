"""Whether the host classes on a cross-host page measure "chip energy" over the same parts.

Each campaign records what its chip figure covers (`PrimaryEnergy.covers`, from
phase.results.covers): an AGX Orin's compute rails include the SoC, an Orin NX's do not; a
RAPL package includes the CPU's uncore, an Apple CPU rail does not. Where the hosts that
measured chip energy differ, their mJ/token are not like for like, and the page says which
parts differ. A file written before phase recorded it is derived from its chip sensors'
names, and where that cannot tell, its coverage is unknown, which is not like for like
either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from phase.analysis import primary_sensors
from phase.results import PARTS, ResultsFile, covers_of

# Shown beside a chip figure that does not compare like for like with the others'.
MARK = "†"


def covers_of_file(raw: ResultsFile) -> tuple[str, ...]:
    """What this campaign's chip figure covers: as recorded, else derived from its sensors."""
    if raw.primary_energy is not None:
        return tuple(raw.primary_energy.covers)
    backends = {s.name: s.backend for s in raw.sensors}
    names = primary_sensors(raw)
    return tuple(covers_of(names, backends)) if names else ("unknown",)


@dataclass(frozen=True)
class HostCover:
    key: str
    label: str
    covers: tuple[str, ...]

    @property
    def known(self) -> bool:
        return "unknown" not in self.covers


@dataclass(frozen=True)
class Coverage:
    """What each host class with a chip figure covers, and the parts that differ."""

    hosts: tuple[HostCover, ...]

    @property
    def differ(self) -> tuple[str, ...]:
        """The parts some of these hosts' figures cover and others' do not."""
        known = [set(h.covers) for h in self.hosts if h.known]
        if not known:
            return ()
        union, common = set().union(*known), set.intersection(*known)
        return tuple(p for p in PARTS if p in union - common)

    @property
    def unknown(self) -> tuple[str, ...]:
        return tuple(h.label for h in self.hosts if not h.known)

    @property
    def like_for_like(self) -> bool:
        return not self.differ and not (self.unknown and len(self.hosts) > 1)

    def marked(self, key: str) -> bool:
        """Whether this host's chip figures get the mark: not like for like with another's."""
        return not self.like_for_like and any(h.key == key for h in self.hosts)

    def title(self, key: str) -> str | None:
        """A marked cell's hover text: what this host's figure covers, and what differs."""
        host = next((h for h in self.hosts if h.key == key), None)
        if host is None or not self.marked(key):
            return None
        if not host.known:
            return f"{MARK} what this host's chip figure covers is not recorded"
        return (f"{MARK} covers {', '.join(host.covers)}; the hosts' chip figures differ in "
                f"{', '.join(self.differ) or 'parts not recorded'}")


def coverage(hosts: Sequence[tuple[str, str, ResultsFile]], with_energy: set[str]) -> Coverage:
    """`hosts`: (key, label, the campaign shown) per host class; only those in `with_energy`
    (a chip figure in some row) are compared."""
    return Coverage(tuple(HostCover(key, label, covers_of_file(raw))
                          for key, label, raw in hosts if key in with_energy))

"""An Apple host replayed from a snapshot's `apple` section (phase.sensors.replay.replay): zeus's
cumulative reads played back as counters, and powermetrics' output, raw where the snapshot
kept it (version 2) or rebuilt from its readings (version 1)."""

from __future__ import annotations

import itertools
import plistlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from phase.sensors.apple.apple import AppleHost
from phase.sensors.core.clock import SYSTEM_CLOCK, Clock
from phase.sensors.replay.playback import Playback


class _ReplayZeus:
    def __init__(self, play: Playback) -> None:
        self.play = play

    def get_cumulative_energy(self) -> Any:
        return SimpleNamespace(**self.play.value())


class _ZeusPlayback(Playback):
    """Each field of zeus's cumulative energy extrapolated like a counter."""

    def value(self) -> Any:
        fields = self.v[0].keys() if self.v else []
        out = {}
        for f in fields:
            single = Playback([[t, v[f]] for t, v in zip(self.t, self.v, strict=True)],
                              True, self.origin, clock=self.clock)
            out[f] = single.value() if self.v[0][f] is not None else None
        return out


_PM_KEYS = {"apple:package-power": "combined_power", "apple:cpu-power": "cpu_power",
            "apple:gpu-power": "gpu_power", "apple:ane-power": "ane_power"}


def _rebuilt_source(rec: dict[str, Any]) -> Any:
    """Version 1 snapshots kept only the parsed readings: plists rebuilt from them in the
    shape phase expects, emitted at the recorded interval (a Mac whose output differed
    replays as working; version 2 keeps the raw output)."""
    interval = float(rec.get("interval_s", 0.1))
    by_time: dict[float, dict[str, float]] = {}
    for r in rec.get("readings", []):
        by_time.setdefault(r["t_s"], {})[_PM_KEYS.get(r["key"], r["key"])] = r["w"] * 1e3
    samples = [by_time[t] for t in sorted(by_time)] or [{}]

    def start(_: float) -> tuple[Iterator[bytes], Any]:
        stopped = [False]

        def chunks() -> Iterator[bytes]:
            k = 0
            while not stopped[0]:
                time.sleep(interval)
                doc = {"elapsed_ns": int(interval * 1e9),
                       "timestamp": datetime.now(UTC).replace(tzinfo=None),
                       "processor": samples[k % len(samples)]}
                k += 1
                yield plistlib.dumps(doc) + b"\0"

        return chunks(), lambda: stopped.__setitem__(0, True)

    return start


def _raw_source(raw: list[list[Any]], interval: float) -> Any:
    """powermetrics' recorded output, chunk by chunk at its recorded pace, looped: the live
    parser (phase.sensors.apple.apple) reads it, so output of another shape replays as it ran."""
    chunks = [(float(t), str(text).encode("utf-8")) for t, text in raw]

    def start(_: float) -> tuple[Iterator[bytes], Any]:
        stopped = [False]

        def play() -> Iterator[bytes]:
            if not chunks:
                return  # it printed nothing: the probe waits, then says so
            begin = time.monotonic()
            lap = chunks[-1][0] - chunks[0][0] + interval
            for k in itertools.count():
                t, data = chunks[k % len(chunks)]
                due = begin + (k // len(chunks)) * lap + t - chunks[0][0]
                while not stopped[0] and time.monotonic() < due:
                    time.sleep(min(0.01, max(0.0, due - time.monotonic())))
                if stopped[0]:
                    return
                yield data

        return play(), lambda: stopped.__setitem__(0, True)

    return start


def _powermetrics_source(rec: dict[str, Any]) -> Any:
    interval = float(rec.get("interval_s", 0.1))
    if "raw" in rec:
        return _raw_source(rec["raw"], interval)
    return _rebuilt_source(rec)


def apple_host(rec: dict[str, Any], origin: float, clock: Clock = SYSTEM_CLOCK) -> AppleHost:
    zeus = rec.get("zeus", {"installed": False})

    def open_zeus() -> Any:
        if not zeus.get("installed"):
            raise ImportError("zeus-apple-silicon was not installed on the recorded machine")
        if "error" in zeus and not zeus.get("changes"):
            raise RuntimeError(zeus["error"])
        return _ReplayZeus(_ZeusPlayback(zeus.get("changes", []), True, origin, clock=clock))

    return AppleHost(system=rec.get("system", "Linux"), machine=rec.get("machine", ""),
                     zeus=open_zeus, powermetrics_path=rec.get("powermetrics_path"),
                     euid=int(rec.get("euid", -1)),
                     start_powermetrics=_powermetrics_source(rec.get("powermetrics", {})))

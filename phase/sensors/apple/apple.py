"""Apple Silicon: IOReport energy counters via zeus-apple-silicon, else `powermetrics`.

zeus-apple-silicon (the optional `apple` extra) reads cumulative energy counters in mJ
without sudo: CPU, GPU (and GPU SRAM), ANE as chip-scope counters, DRAM as module. IOReport
publishes them in batches (about every 2 s on M-series Max chips): the sampler measures the
update period and aligns window edges to it.

Without it we fall back to `powermetrics -f plist`, which needs root. It prints one plist
per interval, NUL-separated, unbuffered with `-b 1`; each carries the mean power (mW) over
its interval (`elapsed_ns`). A reading is stamped at the middle of its own interval (see
PlistClock), not when it reached us; smoothing = the interval. A sensor is created only for
a key the first plist actually carries.
"""

from __future__ import annotations

import io
import os
import platform
import plistlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from phase.results import Scope
from phase.sensors.core.base import Declared, Probe, ReadError, Reading, Sensor, now
from phase.sensors.core.ranges import MAX_POWER_W, reading_problem

BACKEND = "apple"
DECLARED = Declared(BACKEND, measures="soc", priority=20)
POWERMETRICS_INTERVAL_S = 0.1
FIRST_PLIST_TIMEOUT_S = 3.0
_ZEUS_FIELDS: tuple[tuple[str, str, Scope, str], ...] = (
    ("cpu_total_mj", "apple:cpu", "chip", "apple-cpu"),
    ("gpu_mj", "apple:gpu", "chip", "apple-gpu"),
    ("gpu_sram_mj", "apple:gpu-sram", "chip", "apple-gpu"),
    ("ane_mj", "apple:ane", "chip", "apple-ane"),
    ("dram_mj", "apple:dram", "module", "apple-dram"),
)
_POWERMETRICS_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("combined_power", "apple:package-power", "apple-soc"),
    ("cpu_power", "apple:cpu-power", "apple-cpu"),
    ("gpu_power", "apple:gpu-power", "apple-gpu"),
    ("ane_power", "apple:ane-power", "apple-ane"),
)

Source = Iterator[bytes]


def _live_powermetrics(interval_s: float) -> tuple[Source, Callable[[], None]]:
    proc = subprocess.Popen(
        ["powermetrics", "-f", "plist", "-b", "1", "--samplers", "cpu_power,gpu_power,ane_power",
         "-i", str(round(interval_s * 1000))],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )

    def chunks() -> Source:
        # Popen's default buffering makes stdout a BufferedReader, whose read1 returns what
        # has arrived instead of waiting for a full 64 KiB.
        assert isinstance(proc.stdout, io.BufferedReader)
        while chunk := proc.stdout.read1(65536):
            yield chunk

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()

    return chunks(), stop


def _live_zeus() -> Any:
    from zeus_apple_silicon import AppleEnergyMonitor

    return AppleEnergyMonitor()


@dataclass
class AppleHost:
    """What the Apple probe asks of the machine; a snapshot replay supplies its own."""

    system: str = field(default_factory=platform.system)
    machine: str = field(default_factory=platform.machine)
    # Returns an AppleEnergyMonitor; raises ImportError when zeus-apple-silicon is missing.
    zeus: Callable[[], Any] = _live_zeus
    powermetrics_path: str | None = field(default_factory=lambda: shutil.which("powermetrics"))
    euid: int = field(default_factory=lambda: os.geteuid() if hasattr(os, "geteuid") else -1)
    start_powermetrics: Callable[[float], tuple[Source, Callable[[], None]]] = \
        _live_powermetrics
    # How long the probe waits for powermetrics' first sample before saying it printed none
    # (a replay that prints no plist can shorten it: its output is all there at once).
    first_sample_s: float = FIRST_PLIST_TIMEOUT_S
    # The least time a snapshot records powermetrics for, so that a few plists arrive.
    record_s: float = 2.0


class ZeusCounter(Sensor):
    backend = BACKEND

    def __init__(self, monitor: Any, fld: str, name: str, scope: Scope, part: str) -> None:
        super().__init__(name, scope=scope, kind="counter", smoothing_s=0.0, max_power_w=None,
                         part=part)
        self.monitor = monitor
        self.field = fld

    def read_value(self) -> float:
        try:
            value = getattr(self.monitor.get_cumulative_energy(), self.field)
        except Exception as exc:  # the binding raises RuntimeError and friends
            raise ReadError(f"{self.name}: {exc}") from None
        if value is None:
            raise ReadError(f"{self.name}: IOReport returned no {self.field}")
        why = reading_problem(value)
        if why is not None:
            raise ReadError(f"{self.name}: unreadable: {self.field} {why} mJ")
        return float(value) * 1e-3


def split_plists(buffer: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """Parse every complete NUL-terminated plist in buffer; return them and the remainder."""
    *complete, rest = buffer.split(b"\0")
    docs = []
    for chunk in complete:
        chunk = chunk.strip()
        if chunk:
            docs.append(plistlib.loads(chunk))
    return docs, rest


def powermetrics_watts(doc: Any) -> Iterator[tuple[str, float]]:
    processor = doc.get("processor", {}) if isinstance(doc, dict) else {}
    if not isinstance(processor, dict):  # another macOS's shape: no reading, not a crash
        return
    for key, name, _ in _POWERMETRICS_FIELDS:
        if isinstance(processor.get(key), int | float):
            yield name, processor[key] * 1e-3


class PlistClock:
    """When each powermetrics sample's interval was. A plist's `timestamp` has whole-second
    resolution, too coarse for 100 ms samples, so intervals are placed by their own
    `elapsed_ns`: each starts where the previous one ended (a chain), and plists that arrive
    together end, the last of them, at their arrival (with `-b 1` a plist arrives as its
    interval ends). The chain is dropped for the arrival-based times when the two disagree
    (a gap in the stream) or the chain leaves the timestamp's second."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.end: float | None = None

    def _span(self, doc: dict[str, Any]) -> float:
        elapsed = doc.get("elapsed_ns")
        return elapsed * 1e-9 if isinstance(elapsed, int | float) and elapsed > 0 \
            else self.interval_s

    @staticmethod
    def _second(doc: dict[str, Any]) -> float | None:
        stamp = doc.get("timestamp")
        if not isinstance(stamp, datetime):
            return None
        aware = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        return aware.timestamp() - (time.time() - now())  # onto the now() scale

    def stamp_all(self, docs: list[dict[str, Any]], arrived_s: float) -> list[float]:
        """The middle of each plist's interval on the now() clock, for plists that arrived
        together at `arrived_s`."""
        spans = [self._span(d) for d in docs]
        backward = [arrived_s - sum(spans[k + 1:]) for k in range(len(docs))]
        chained = None
        if self.end is not None:
            chained = [self.end + sum(spans[:k + 1]) for k in range(len(docs))]
            last = chained[-1] if chained else self.end
            if last > arrived_s + 0.05 or arrived_s - last > 5 * max(spans, default=0) + 0.5:
                chained = None
        ends = chained or backward
        for doc, end in zip(docs, ends, strict=True):
            second = self._second(doc)
            if second is not None and not second - 1.0 <= end <= second + 2.0:
                ends = backward
                break
        if ends:
            self.end = ends[-1]
        return [end - span / 2 for end, span in zip(ends, spans, strict=True)]

    def stamp(self, doc: dict[str, Any], arrived_s: float) -> float:
        return self.stamp_all([doc], arrived_s)[0]


class PowermetricsStream:
    """One `powermetrics` child shared by its sensors; a reader thread keeps each key's
    latest (time, W)."""

    def __init__(self, host: AppleHost, interval_s: float = POWERMETRICS_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.latest: dict[str, Reading] = {}
        self.first = threading.Event()
        # Why the stream stopped early (output that is not plists), for the probe to say.
        self.error: str | None = None
        # The start of output not yet parsed (no NUL seen): shown where no plist came.
        self.pending = b""
        self.users = 0
        self._source, self._stop = host.start_powermetrics(interval_s)
        self.thread = threading.Thread(target=self._pump, name="powermetrics", daemon=True)
        self.thread.start()

    def _pump(self) -> None:
        rest = b""
        clock = PlistClock(self.interval_s)
        for chunk in self._source:
            try:
                docs, rest = split_plists(rest + chunk)
            except Exception as exc:  # plistlib raises several kinds on text that is no plist
                self.error = (f"powermetrics printed something that is not a plist "
                              f"({type(exc).__name__}: {exc}); its output format may have "
                              "changed on this macOS")
                self.first.set()
                return
            self.pending = rest[:80]
            docs = [d for d in docs if isinstance(d, dict)]
            for doc, t in zip(docs, clock.stamp_all(docs, now()), strict=True):
                for name, watts in powermetrics_watts(doc):
                    why = reading_problem(watts, MAX_POWER_W)
                    if why is not None:  # no reading of this stream can be trusted now
                        self.error = f"unreadable: powermetrics reported {name} {why} W"
                        self.latest.clear()
                        self.first.set()
                        return
                    self.latest[name] = Reading(t, watts)
                self.first.set()

    def reading(self, name: str) -> Reading:
        seen = self.latest.get(name)
        if seen is None and self.error:
            raise ReadError(f"{name}: {self.error}")
        if seen is None:
            raise ReadError(f"{name}: powermetrics has not reported it yet")
        if now() - seen.t_unix_s > 5 * self.interval_s + 1.0:
            raise ReadError(f"{name}: {self.error or 'powermetrics stopped reporting'}")
        return seen

    def release(self) -> None:
        self.users -= 1
        if self.users <= 0:
            self._stop()


class PowermetricsPower(Sensor):
    backend = BACKEND
    # Its readings carry their own time (the plist's interval), not the time we read them.
    self_stamped = True

    def __init__(self, stream: PowermetricsStream, name: str, part: str) -> None:
        super().__init__(name, scope="chip", kind="power", smoothing_s=stream.interval_s,
                         max_power_w=None, part=part)
        self.stream = stream
        stream.users += 1

    def read(self) -> Reading:
        return self.stream.reading(self.name)

    def read_value(self) -> float:
        return self.read().value

    def close(self) -> None:
        self.stream.release()


def _probe_zeus(host: AppleHost, found: Probe) -> bool:
    try:
        monitor = host.zeus()
    except ImportError:
        return False
    except Exception as exc:
        found.problems.append(f"zeus-apple-silicon could not open IOReport: {exc}")
        return False
    try:
        sample = monitor.get_cumulative_energy()
    except Exception as exc:
        found.problems.append(f"zeus-apple-silicon could not read IOReport: {exc}")
        return False
    for fld, name, scope, part in _ZEUS_FIELDS:
        if getattr(sample, fld, None) is not None:
            found.sensors.append(ZeusCounter(monitor, fld, name, scope, part))
    return found.available


def _probe_powermetrics(host: AppleHost, found: Probe) -> None:
    stream = PowermetricsStream(host)
    stream.users += 1  # held while probing
    if not stream.first.wait(host.first_sample_s):
        printed = stream.pending.decode("utf-8", errors="replace").strip()
        found.problems.append(f"powermetrics printed no sample in {host.first_sample_s:g} s"
                              + (f"; it printed {printed!r}, not a plist (another output "
                                 "format on this macOS?)" if printed else ""))
    if stream.error and not stream.latest:
        found.problems.append(stream.error)
    for _, name, part in _POWERMETRICS_FIELDS:
        if name in stream.latest:
            found.sensors.append(PowermetricsPower(stream, name, part))
    if stream.first.is_set() and not found.sensors and not stream.error:
        found.problems.append("powermetrics reported no cpu/gpu/combined power (a Mac "
                              "without Apple Silicon power samplers?)")
    soc = [s for s in found.sensors if s.part == "apple-soc"]
    for s in found.sensors:
        s.encloses = [o.name for o in found.sensors if o is not s] if s in soc else []
    stream.release()


def probe(host: AppleHost | None = None) -> Probe:
    host = host or AppleHost()
    found = Probe(BACKEND)
    if host.system != "Darwin":
        found.problems.append(f"not a Mac (this is {host.system} {host.machine})")
        return found
    if _probe_zeus(host, found):
        for s in found.sensors:
            s.encloses = []
        return found
    if host.powermetrics_path is None:
        found.problems.append("powermetrics not found; install the apple extra: "
                              "`pip install 'phase[apple]'` (zeus-apple-silicon, no sudo)")
        return found
    if host.euid != 0:
        found.problems.append(
            "powermetrics needs root: run phase with sudo, or install the apple extra "
            "(`pip install 'phase[apple]'`) to read energy through zeus-apple-silicon without sudo"
        )
        return found
    _probe_powermetrics(host, found)
    return found

